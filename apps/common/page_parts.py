"""Parts that a higher app adds to a lower app's page, so that the lower app never imports the higher one.

A page of a lower app (a workload version, a quote, a candidate) names its slots and asks for what fills them in its
view: `page_parts.render("quotes.candidate.results", request, candidate=candidate)`. A higher app registers what it
shows there in its AppConfig.ready(): `page_parts.register("quotes.candidate.results", throughput_part)`. A part is a
function `(request, **objects) -> str` returning safe HTML ("" for nothing to show). Parts of one slot are joined in
the order their apps are installed. The arrows between apps stay downward; the registry is the one indirection.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from django.utils.safestring import SafeString, mark_safe

Part = Callable[..., str]

_parts: dict[str, list[Part]] = defaultdict(list)


def register(slot: str, part: Part) -> None:
    """Add `part` to `slot` (once: registering the same function again changes nothing)."""
    if part not in _parts[slot]:
        _parts[slot].append(part)


def render(slot: str, request, **objects) -> SafeString:
    """Every registered part of `slot`, rendered for this request and these objects, joined."""
    return mark_safe("".join(part(request, **objects) for part in _parts.get(slot, ())))  # noqa: S308 - parts return template output
