"""Timestamps in the protocol's format: RFC 3339, UTC, millisecond precision, `Z` suffix."""

from datetime import UTC, datetime


def utc_now_iso() -> str:
    return format_iso(datetime.now(UTC))


def format_iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
