"""DRF permission classes that follow docs/permissions.md."""

from django.utils.translation import gettext_lazy as _
from rest_framework.permissions import SAFE_METHODS, BasePermission

from apps.accounts.roles import Role, has_role


class HasAnyRole(BasePermission):
    """The default for every user API: signed in and holding at least one role."""

    message = _("You need a Dossier role (platform, finance, product or admin) to use this API.")

    def has_permission(self, request, view) -> bool:
        return bool(request.user and request.user.is_authenticated and has_role(request.user))


class ReadAnyRoleWritePlatform(HasAnyRole):
    """Anyone with a role reads; platform and admin write (finance and product only read evidence)."""

    message = _("Only the platform and admin roles may change this.")

    def has_permission(self, request, view) -> bool:
        if not super().has_permission(request, view):
            return False
        return request.method in SAFE_METHODS or has_role(request.user, Role.PLATFORM, Role.ADMIN)


class ReadAnyRoleWriteAdmin(HasAnyRole):
    """Anyone with a role reads; only admins write (the GPU catalog, teams)."""

    message = _("Only admins may change this.")

    def has_permission(self, request, view) -> bool:
        if not super().has_permission(request, view):
            return False
        return request.method in SAFE_METHODS or has_role(request.user, Role.ADMIN)
