"""Model fields about people, for every app above accounts (audit included, which sits beside common)."""

from django.conf import settings
from django.db import models


def user_foreign_key(verbose_name, *, on_delete=models.SET_NULL) -> models.ForeignKey:
    """The person who did something to a row (created, entered, answered it…), if known; no reverse accessor.

    SET_NULL keeps the row, as done by nobody, when the account goes; PROTECT where the person must stay known.
    """
    return models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=on_delete,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=verbose_name,
    )
