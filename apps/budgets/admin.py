"""The Django admin of budgets: superusers only (cost centres, budgets and policies belong to teams; a team's
finance and admin roles manage them on the budgets pages). Every save is written to the audit log."""

from django.contrib import admin

from apps.accounts.admin import SuperuserOnly
from apps.audit.models import ObjectChange
from apps.audit.services import model_snapshot, record_change
from apps.budgets.models import Budget, BudgetPolicy, CostCentre


class AuditedSuperuserAdmin(SuperuserOnly, admin.ModelAdmin):
    def get_object(self, request, object_id, from_field=None):
        obj = super().get_object(request, object_id, from_field)
        if obj is not None:
            request._budgets_admin_before = model_snapshot(obj)
        return obj

    def save_model(self, request, obj, form, change):
        obj.full_clean()
        super().save_model(request, obj, form, change)
        record_change(
            actor=request.user,
            instance=obj,
            action=ObjectChange.Action.UPDATE if change else ObjectChange.Action.CREATE,
            before=getattr(request, "_budgets_admin_before", None) if change else None,
            after=model_snapshot(obj),
        )

    def has_delete_permission(self, request, obj=None):
        return False  # decision records and budgets refer to them; change or end a budget instead


@admin.register(CostCentre)
class CostCentreAdmin(AuditedSuperuserAdmin):
    list_display = ["code", "name", "team"]
    list_filter = ["team"]
    search_fields = ["code", "name"]
    fields = ["team", "code", "name"]


@admin.register(Budget)
class BudgetAdmin(AuditedSuperuserAdmin):
    list_display = ["cost_centre", "team", "amount", "currency", "period", "start_date", "owner"]
    list_filter = ["team", "period", "currency"]
    fields = ["team", "cost_centre", "amount", "currency", "period", "start_date", "owner"]


@admin.register(BudgetPolicy)
class BudgetPolicyAdmin(AuditedSuperuserAdmin):
    list_display = ["team", "mode", "warn_fraction"]
    fields = ["team", "mode", "warn_fraction"]
