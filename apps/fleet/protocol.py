"""Plain helpers of the agent protocol (docs/agent-protocol.md): tokens, timestamps, versions, canonical hashes.

No Django import: the token and timestamp rules are the same for every caller and are tested on their own.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import re
import secrets
from datetime import UTC, datetime
from typing import Any

from packaging.version import InvalidVersion, Version

# Prefixes, not secrets: they tell the three kinds of token apart in logs and in a leaked-secret scanner.
REGISTRATION_TOKEN_PREFIX = "dsr_"  # noqa: S105
AGENT_TOKEN_PREFIX = "dsa_"  # noqa: S105
JOB_TOKEN_PREFIX = "dsj_"  # noqa: S105
#: characters after the prefix kept in clear so a page can name a token without revealing it
TOKEN_DISPLAY_CHARACTERS = 8

SHA256_PATTERN = re.compile(r"^[0-9a-f]{64}$")
KIND_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
IDEMPOTENCY_KEY_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def new_token(prefix: str) -> str:
    """A fresh secret: the prefix and 43 URL-safe base64 characters (32 random bytes)."""
    return prefix + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """What the server stores instead of a token: its SHA-256, hexadecimal."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def token_display_prefix(token: str) -> str:
    """The prefix and the first few characters, enough to tell tokens apart on a page (e.g. 'dsr_Jx8wAbCd')."""
    prefix, _separator, rest = token.partition("_")
    return f"{prefix}_{rest[:TOKEN_DISPLAY_CHARACTERS]}"


def token_matches(token: str, stored_hash: str) -> bool:
    """Constant-time comparison of a presented token with a stored hash."""
    return hmac.compare_digest(token_hash(token), stored_hash)


def has_prefix(token: str, prefix: str) -> bool:
    return isinstance(token, str) and token.startswith(prefix) and len(token) > len(prefix)


def format_timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC with a Z suffix and millisecond precision: 2025-01-31T12:00:00.125Z."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def parse_timestamp(text: str) -> datetime:
    """Read an RFC 3339 timestamp with an offset or Z; ValueError for anything else (naive times included)."""
    if not isinstance(text, str) or not text:
        raise ValueError("not a timestamp")
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError("a timestamp needs a time zone (Z or an offset)")
    return moment.astimezone(UTC)


def canonical_json(value: Any) -> bytes:
    """The canonical JSON bytes the agent and the server both hash (sorted keys, no spaces)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def canonical_sha256(value: Any) -> str:
    return hashlib.sha256(canonical_json(value)).hexdigest()


def parse_version(text: str) -> Version:
    """A PEP 440 version; ValueError when the text is not one."""
    try:
        return Version(text)
    except (InvalidVersion, TypeError):
        raise ValueError(f"{text!r} is not a PEP 440 version") from None


@functools.lru_cache(maxsize=256)
def is_older(agent_version: str, minimum: str) -> bool:
    """True when agent_version sorts before minimum (both PEP 440)."""
    return parse_version(agent_version) < parse_version(minimum)
