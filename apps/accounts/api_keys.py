"""User API keys: created here, stored as a SHA-256 digest, shown once, checked by `ApiKeyAuthentication`.

The header is the one DRF's authtoken used (`Authorization: Token <key>`), so existing clients keep working: the
migration `0004_hash_authtoken_keys` moved every old key in as its digest. A key is 32 random bytes (URL-safe
base64 behind the `dsk_` prefix); an unsalted SHA-256 is enough for a secret of that entropy and lets the lookup use
the unique index. Only superusers create keys (the admin site or `manage.py create_api_key`), see docs/permissions.md.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from apps.accounts.models import ApiKey

KEY_PREFIX = "dsk_"
PREFIX_LENGTH = 12  # shown in lists: "dsk_" and 8 characters of the key
#: last_used_at is written at most this often per key (not one write per request).
LAST_USED_RESOLUTION = timedelta(minutes=1)


def api_key_digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_api_key_secret() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def api_key_assign_secret(api_key: ApiKey) -> str:
    """Give an unsaved ApiKey a fresh secret (its prefix and digest) and return the secret, to be shown once."""
    key = new_api_key_secret()
    api_key.prefix, api_key.digest = key[:PREFIX_LENGTH], api_key_digest(key)
    return key


@transaction.atomic
def api_key_create(*, user, name: str = "") -> tuple[ApiKey, str]:
    """A new key for `user`: the row (digest only) and the key itself, to be shown once and never again."""
    api_key = ApiKey(user=user, name=name)
    key = api_key_assign_secret(api_key)
    api_key.full_clean()
    api_key.save()
    return api_key, key


def api_key_revoke(*, api_key: ApiKey) -> None:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])


class ApiKeyAuthentication(TokenAuthentication):
    """DRF authentication by `Authorization: Token <key>`, against the digests in `ApiKey`."""

    keyword = "Token"
    model = ApiKey

    def authenticate_credentials(self, key):
        try:
            api_key = ApiKey.objects.select_related("user").get(digest=api_key_digest(key), revoked_at__isnull=True)
        except ApiKey.DoesNotExist:
            raise exceptions.AuthenticationFailed(_("Invalid token.")) from None
        if not api_key.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        now = timezone.now()
        if api_key.last_used_at is None or now - api_key.last_used_at >= LAST_USED_RESOLUTION:
            ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
            api_key.last_used_at = now
        return (api_key.user, api_key)
