"""The Django admin of the quotes app: admins edit the procurement checklist's questions and the commitment policy.

Both are global data (every team uses them). Each save is written to the audit log with the before/after values;
questions are switched off, never deleted, because answers refer to them.
"""

from django.contrib import admin

from apps.accounts.roles import Role, has_role
from apps.audit.models import ObjectChange
from apps.audit.services import model_snapshot, record_change
from apps.quotes.models import ChecklistQuestion, CommitmentTier


class AdminRoleOnly:
    def has_module_permission(self, request):
        return has_role(request.user, Role.ADMIN)

    def has_view_permission(self, request, obj=None):
        return has_role(request.user, Role.ADMIN)

    def has_add_permission(self, request, *args):
        return has_role(request.user, Role.ADMIN)

    def has_change_permission(self, request, obj=None):
        return has_role(request.user, Role.ADMIN)


def _tier_snapshot(tier: CommitmentTier) -> dict:
    codes = sorted(tier.required_questions.values_list("code", flat=True))
    return {**model_snapshot(tier), "required_questions": codes}


class AuditedAdmin(AdminRoleOnly, admin.ModelAdmin):
    """Records every admin save in the audit log (after the many-to-many fields are saved too)."""

    def snapshot(self, obj) -> dict:
        return model_snapshot(obj)

    def get_object(self, request, object_id, from_field=None):
        obj = super().get_object(request, object_id, from_field)
        if obj is not None:
            request._quotes_admin_before = self.snapshot(obj)
        return obj

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        before = getattr(request, "_quotes_admin_before", None) if change else None
        record_change(
            actor=request.user,
            instance=form.instance,
            action=ObjectChange.Action.UPDATE if change else ObjectChange.Action.CREATE,
            before=before,
            after=self.snapshot(form.instance),
        )


@admin.register(ChecklistQuestion)
class ChecklistQuestionAdmin(AuditedAdmin):
    list_display = ["code", "group", "position", "active", "text_en"]
    list_filter = ["group", "active"]
    search_fields = ["code", "text_en", "text_fr", "text_id"]
    fields = ["code", "group", "position", "active", "text_en", "text_fr", "text_id"]

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(CommitmentTier)
class CommitmentTierAdmin(AuditedAdmin):
    list_display = ["name_en", "minimum_commitment", "currency", "evidence_required"]
    fields = ["name_en", "name_fr", "name_id", "minimum_commitment", "currency", "evidence_required",
              "required_questions"]
    filter_horizontal = ["required_questions"]

    def snapshot(self, obj) -> dict:
        return _tier_snapshot(obj)

    def has_delete_permission(self, request, obj=None):
        return has_role(request.user, Role.ADMIN)
