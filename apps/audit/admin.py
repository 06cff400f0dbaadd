from django.contrib import admin

from apps.audit.models import ObjectChange


@admin.register(ObjectChange)
class ObjectChangeAdmin(admin.ModelAdmin):
    """Read-only: the change log is append-only. Every team's entries are here, so superusers only (team admins
    read their own teams' log on the app's audit pages, docs/permissions.md)."""

    list_display = ["time", "actor_label", "action", "content_type", "object_repr", "request_id"]
    list_filter = ["action", "content_type"]
    search_fields = ["object_repr", "actor_label", "request_id", "message"]
    date_hierarchy = "time"

    def has_module_permission(self, request):
        return bool(request.user.is_active and request.user.is_superuser)

    def has_view_permission(self, request, obj=None):
        return bool(request.user.is_active and request.user.is_superuser)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
