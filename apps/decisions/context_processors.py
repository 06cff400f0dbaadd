"""Template context for the base layout: the counts behind the sign-off links of the header (what waits for the
user's signature, their unread notifications). Counted only when a page shows them (the header of a signed-in
user), once per request."""

from __future__ import annotations

from functools import cached_property

from apps.decisions import selectors


class SignOffCounts:
    def __init__(self, user) -> None:
        self._user = user

    @cached_property
    def waiting(self) -> int:
        return selectors.waiting_count(self._user)

    @cached_property
    def unread(self) -> int:
        return selectors.unread_count(self._user)


def sign_off(request) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"sign_off": SignOffCounts(user)}
