"""Absolute links to Dossier's own pages, for what is read outside the browser (notification e-mails).

The address comes from the setting DOSSIER_SITE_URL (docs/configuration.md), never from a request: an e-mail is
written by the Celery worker, which has none. `check --deploy` warns when it is unset (common.W001).
"""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Tags, Warning, register


def site_url() -> str:
    """DOSSIER_SITE_URL without its trailing slash ("" when unset)."""
    return (getattr(settings, "DOSSIER_SITE_URL", "") or "").rstrip("/")


def absolute_url(path: str) -> str:
    """`path` (as reverse() or get_absolute_url() give it, starting with /) on the site's address; the path alone
    when DOSSIER_SITE_URL is unset."""
    if not path.startswith("/"):
        raise ValueError(f"absolute_url() takes a path starting with /, not {path!r}")
    base = site_url()
    return f"{base}{path}" if base else path


@register(Tags.compatibility, deploy=True)
def site_url_check(app_configs=None, **kwargs) -> list[Warning]:
    if site_url():
        return []
    return [Warning(
        "DOSSIER_SITE_URL is not set: the links in notification e-mails are paths without the site's address.",
        hint="Set DOSSIER_SITE_URL to the address people open Dossier at, e.g. https://dossier.example.com.",
        id="common.W001",
    )]
