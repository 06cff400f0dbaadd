"""Roles are Django groups; this module is the one place that names them and answers "may this user …?"."""

from django.db import models
from django.utils.translation import gettext_lazy as _


class Role(models.TextChoices):
    PLATFORM = "platform", _("Platform")
    FINANCE = "finance", _("Finance")
    PRODUCT = "product", _("Product")
    ADMIN = "admin", _("Admin")


def user_roles(user) -> frozenset[str]:
    """The role names of a user (cached on the user object for the request); superusers hold every role."""
    if not getattr(user, "is_authenticated", False):
        return frozenset()
    cached = getattr(user, "_dossier_roles", None)
    if cached is None:
        if user.is_superuser:
            cached = frozenset(Role.values)
        else:
            cached = frozenset(user.groups.filter(name__in=Role.values).values_list("name", flat=True))
        user._dossier_roles = cached
    return cached


def has_role(user, *roles: str) -> bool:
    """True when the user holds at least one of the roles (any role when none is named)."""
    held = user_roles(user)
    return bool(held & set(roles)) if roles else bool(held)
