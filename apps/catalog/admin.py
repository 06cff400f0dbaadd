"""The Django admin for the catalog: admins only, every save goes through the services so it is audited."""

from django.contrib import admin
from django.db import models
from django.utils.translation import gettext_lazy as _

from apps.accounts.roles import Role, has_role
from apps.catalog.forms import GpuSpecAdminForm
from apps.catalog.models import GpuModel, GpuSpec
from apps.catalog.services import GPU_MODEL_EDITABLE_FIELDS, gpu_model_create, gpu_model_update, gpu_spec_set


class AdminRoleOnly:
    """The catalog belongs to the admin role (docs/permissions.md). Nothing is deleted: figures are corrected."""

    def has_module_permission(self, request):
        return has_role(request.user, Role.ADMIN)

    def has_view_permission(self, request, obj=None):
        return has_role(request.user, Role.ADMIN)

    def has_add_permission(self, request, *args):
        return has_role(request.user, Role.ADMIN)

    def has_change_permission(self, request, obj=None):
        return has_role(request.user, Role.ADMIN)

    def has_delete_permission(self, request, obj=None):
        return False


class GpuSpecInline(AdminRoleOnly, admin.TabularInline):
    """The figures of a GPU model, read-only here: each one is edited on its own page (with a source)."""

    model = GpuSpec
    fields = ["key", "value", "unit", "source_url", "source_text", "as_of", "entered_by", "entered_at"]
    readonly_fields = fields
    extra = 0
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(GpuModel)
class GpuModelAdmin(AdminRoleOnly, admin.ModelAdmin):
    list_display = ["display_name", "vendor", "form_factor", "memory_type", "host_interface"]
    list_filter = ["vendor", "form_factor", "memory_type"]
    search_fields = ["name", "variant"]
    fields = list(GPU_MODEL_EDITABLE_FIELDS)
    inlines = [GpuSpecInline]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    @admin.display(description=_("GPU model"), ordering="name")
    def display_name(self, obj):
        return obj.display_name

    def save_model(self, request, obj, form, change):
        data = {name: form.cleaned_data[name] for name in GPU_MODEL_EDITABLE_FIELDS if name in form.cleaned_data}
        if change:
            changed = {name: data[name] for name in form.changed_data if name in data}
            saved = gpu_model_update(actor=request.user, gpu=obj, **changed)
        else:
            saved = gpu_model_create(actor=request.user, **data)
        obj.pk = saved.pk


@admin.register(GpuSpec)
class GpuSpecAdmin(AdminRoleOnly, admin.ModelAdmin):
    form = GpuSpecAdminForm
    list_display = ["gpu", "key", "value", "unit", "source_url", "source_text", "as_of", "entered_by", "entered_at"]
    list_filter = ["key", "gpu"]
    list_select_related = ["gpu", "entered_by"]
    search_fields = ["gpu__name", "gpu__variant", "source_url", "source_text"]

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["gpu", "key", "value", "source", "as_of"]
        return ["gpu", "key", "current_source", "current_as_of", "entered_by", "entered_at", "value", "source", "as_of"]

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        return ["gpu", "key", "current_source", "current_as_of", "entered_by", "entered_at"]

    @admin.display(description=_("current source"))
    def current_source(self, obj):
        return obj.source

    @admin.display(description=_("current as-of date"))
    def current_as_of(self, obj):
        return obj.as_of

    def save_model(self, request, obj, form, change):
        spec = gpu_spec_set(
            actor=request.user,
            gpu=obj.gpu if change else form.cleaned_data["gpu"],
            key=obj.key if change else form.cleaned_data["key"],
            value=form.cleaned_data["value"],
            source=form.cleaned_data["source"],
            as_of=form.cleaned_data["as_of"],
        )
        obj.pk = spec.pk
