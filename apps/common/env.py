"""Typed readers for environment variables.

Every reader rejects a bad value with an ImproperlyConfigured error that names the variable, so a typo stops
start-up with a message instead of surfacing later as a strange failure.
"""

from __future__ import annotations

import os
import zoneinfo
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off", ""}


def _raw(name: str, environ: Mapping[str, str] | None) -> str | None:
    return (os.environ if environ is None else environ).get(name)


def env_str(name: str, default: str, environ: Mapping[str, str] | None = None) -> str:
    value = _raw(name, environ)
    return default if value is None else value


def env_bool(name: str, default: bool, environ: Mapping[str, str] | None = None) -> bool:
    value = _raw(name, environ)
    if value is None:
        return default
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ImproperlyConfigured(f"{name} must be one of true/false/1/0/yes/no/on/off, not {value!r}.")


def env_int(
    name: str,
    default: int,
    environ: Mapping[str, str] | None = None,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
) -> int:
    value = _raw(name, environ)
    if value is None:
        return default
    try:
        number = int(value.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {value!r}.") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, not {number}.")
    if maximum is not None and number > maximum:
        raise ImproperlyConfigured(f"{name} must be at most {maximum}, not {number}.")
    return number


def env_list(name: str, default: list[str], environ: Mapping[str, str] | None = None) -> list[str]:
    value = _raw(name, environ)
    if value is None:
        return list(default)
    items = [item.strip() for item in value.split(",") if item.strip()]
    if not items:
        raise ImproperlyConfigured(f"{name} must list at least one comma-separated value.")
    return items


def env_choice(name: str, default: str, choices: set[str], environ: Mapping[str, str] | None = None) -> str:
    value = env_str(name, default, environ)
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(sorted(choices))}, not {value!r}.")
    return value


def env_time_zone(name: str, default: str, environ: Mapping[str, str] | None = None) -> str:
    """An IANA time zone name such as UTC or Asia/Jakarta."""
    value = env_str(name, default, environ)
    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ImproperlyConfigured(
            f"{name} must be an IANA time zone such as UTC or Asia/Jakarta, not {value!r}."
        ) from None
    return value


def env_url(name: str, default: str, schemes: set[str], environ: Mapping[str, str] | None = None) -> str:
    """A URL whose scheme is one of `schemes` (checked here, so a typo does not surface at the first connection)."""
    value = env_str(name, default, environ)
    if "://" not in value or urlsplit(value).scheme not in schemes:
        allowed = ", ".join(f"{scheme}://" for scheme in sorted(schemes))
        raise ImproperlyConfigured(f"{name} must start with one of {allowed}, not {value!r}.")
    return value


def env_secret(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """Read NAME, or the contents of the file named by NAME_FILE (Docker/Kubernetes secrets)."""
    value = _raw(name, environ)
    file_name = _raw(f"{name}_FILE", environ)
    if value is not None and file_name is not None:
        raise ImproperlyConfigured(f"Set either {name} or {name}_FILE, not both.")
    if file_name is not None:
        try:
            value = Path(file_name).read_text(encoding="utf-8").strip()
        except OSError as error:
            raise ImproperlyConfigured(f"{name}_FILE: cannot read {file_name!r} ({error.strerror}).") from None
        if not value:
            raise ImproperlyConfigured(f"{name}_FILE: {file_name!r} is empty.")
    return value


def parse_database_url(name: str, url: str) -> dict:
    """Turn sqlite:///path or postgres://user:password@host:port/database into Django's DATABASES entry."""
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        path = unquote(parts.path)
        if parts.netloc or not path or path == "/":
            raise ImproperlyConfigured(
                f"{name} must look like sqlite:////absolute/path.sqlite3 or sqlite:///relative.sqlite3, not {url!r}."
            )
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": path[1:],  # sqlite:////abs → /abs; sqlite:///rel → rel
            "OPTIONS": {
                # WAL lets the web server read while the worker writes; IMMEDIATE takes the write lock at BEGIN,
                # so two writers queue on the busy timeout instead of failing with "database is locked".
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                "timeout": 20,
                "transaction_mode": "IMMEDIATE",
            },
        }
    if parts.scheme in {"postgres", "postgresql", "pgsql"}:
        database = unquote(parts.path.lstrip("/"))
        if not database or not parts.hostname:
            raise ImproperlyConfigured(
                f"{name} must look like postgres://user:password@host:5432/database, not {url!r}."
            )
        try:
            port = parts.port
        except ValueError:
            raise ImproperlyConfigured(f"{name} has a port that is not a number: {url!r}.") from None
        options = dict(parse_qsl(parts.query))
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": database,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname,
            "PORT": str(port or 5432),
            "OPTIONS": options,
        }
    raise ImproperlyConfigured(
        f"{name} must start with sqlite:// or postgres://, not {parts.scheme or 'nothing'!r} ({url!r})."
    )
