"""The admin site's people side: users, groups (roles), teams, memberships and API keys are for superusers only.

Staff accounts with the admin role reach the admin site for the global data they manage (the GPU catalog, the
procurement checklist and the commitment policy); nothing here, so no one raises their own privileges or reaches
another team through the admin site (docs/permissions.md).
"""

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group
from django.utils.translation import gettext_lazy as _

from apps.accounts.api_keys import api_key_assign_secret, api_key_revoke
from apps.accounts.models import ApiKey, Membership, Team


class SuperuserOnly:
    """Every admin-site permission of the model answers "is this an active superuser?", whatever the groups say."""

    @staticmethod
    def _superuser(request) -> bool:
        user = request.user
        return bool(user.is_active and user.is_superuser)

    def has_module_permission(self, request):
        return self._superuser(request)

    def has_view_permission(self, request, obj=None):
        return self._superuser(request)

    def has_add_permission(self, request, *args):
        return self._superuser(request)

    def has_change_permission(self, request, obj=None):
        return self._superuser(request)

    def has_delete_permission(self, request, obj=None):
        return self._superuser(request)


class MembershipInline(SuperuserOnly, admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ["user"]


@admin.register(Team)
class TeamAdmin(SuperuserOnly, admin.ModelAdmin):
    list_display = ["name", "slug", "reporting_currency", "stale_price_age_days"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]


User = get_user_model()
admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(User)
class DossierUserAdmin(SuperuserOnly, UserAdmin):
    pass


@admin.register(Group)
class DossierGroupAdmin(SuperuserOnly, GroupAdmin):
    pass


@admin.register(ApiKey)
class ApiKeyAdmin(SuperuserOnly, admin.ModelAdmin):
    """Keys are created here (shown once, in the message after saving) and revoked; the key itself is never stored."""

    list_display = ["prefix", "user", "name", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["prefix", "name", "user__username"]
    autocomplete_fields = ["user"]
    actions = ["revoke"]

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["user", "name"]
        return ["user", "name", "prefix", "created_at", "last_used_at", "revoked_at"]

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        return ["user", "prefix", "created_at", "last_used_at", "revoked_at"]

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
            return
        key = api_key_assign_secret(obj)
        super().save_model(request, obj, form, change)
        messages.warning(
            request,
            _("The API key for %(user)s is %(key)s. Copy it now: it is not stored and is never shown again.")
            % {"user": obj.user, "key": key},
        )

    def has_delete_permission(self, request, obj=None):
        return False  # revoke instead: last_used_at stays readable

    @admin.action(description=_("Revoke the selected API keys"))
    def revoke(self, request, queryset):
        for api_key in queryset:
            api_key_revoke(api_key=api_key)
        self.message_user(request, _("%(count)d API keys revoked.") % {"count": queryset.count()})
