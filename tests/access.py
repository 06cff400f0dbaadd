"""How the access tests send a request and read the answer: allowed, refused, or broken."""

from __future__ import annotations

import enum
import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from django.conf import settings
from django.shortcuts import resolve_url
from django.urls import reverse

from tests.factories import UserFactory

ROLES = ("platform", "finance", "product", "admin")
#: Hashing a password the production way takes most of a second on a small machine; tests create many users.
FAST_PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
PERMISSIONS_DOC = Path(settings.BASE_DIR) / "docs" / "permissions.md"


class Outcome(enum.Enum):
    ALLOWED = "allowed"
    REFUSED = "refused"
    BROKEN = "broken"  # 405 (the probe uses a method the view does not offer) or a server error


def member(team, username: str, roles=(), **fields):
    """A member of `team` holding `roles` (staff for the admin role, as the admin site needs)."""
    fields.setdefault("is_staff", "admin" in roles)
    return UserFactory(username=username, roles=list(roles), teams=[team], **fields)


def login_urls() -> set[str]:
    return {resolve_url(settings.LOGIN_URL), reverse("admin:login")}


def is_login_redirect(response) -> bool:
    """A redirect to a login page that carries `next`: the way pages refuse anonymous and non-staff users.

    (Logging out also redirects to the login page, but without `next`: that is not a refusal.)
    """
    if response.status_code not in (301, 302, 303, 307, 308):
        return False
    target = urlsplit(response["Location"])
    return target.path in login_urls() and "next" in parse_qs(target.query)


def outcome(response) -> Outcome:
    if response.status_code in (401, 403, 404) or is_login_redirect(response):
        return Outcome.REFUSED
    if response.status_code == 405 or response.status_code == 500:
        return Outcome.BROKEN
    return Outcome.ALLOWED


def send(client, method: str, path: str, *, api: bool):
    """One request with an empty body: enough to tell whether authorisation let it through."""
    method = method.lower()
    if method == "get":
        return client.get(path)
    if api:
        return getattr(client, method)(path, data="{}", content_type="application/json")
    return getattr(client, method)(path, data={})


def allowed_methods(response) -> list[str]:
    """The methods a 405 answer names (Django's require_POST and DRF both send Allow)."""
    return [method.strip().upper() for method in response.get("Allow", "").split(",") if method.strip()]


def describe(response) -> str:
    location = f" → {response['Location']}" if response.has_header("Location") else ""
    return f"{response.status_code}{location}"


def docs_table(heading: str) -> list[dict[str, str]]:
    """The first table under `## heading` in docs/permissions.md, one {column: cell} per row."""
    lines = PERMISSIONS_DOC.read_text(encoding="utf-8").splitlines()
    try:
        start = lines.index(f"## {heading}")
    except ValueError:
        raise AssertionError(f"docs/permissions.md has no section '## {heading}'") from None
    rows: list[list[str]] = []
    for line in lines[start + 1 :]:
        if line.startswith("## "):
            break
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            break
    assert len(rows) >= 3, f"docs/permissions.md: the table under '## {heading}' is missing"
    header, _separator, *body = rows
    return [dict(zip(header, row, strict=True)) for row in body]


def backticked(cell: str) -> str:
    """The text between the first pair of backticks of a table cell."""
    found = re.search(r"`([^`]+)`", cell)
    return found.group(1) if found else ""
