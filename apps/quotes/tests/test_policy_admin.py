"""Admins edit the commitment policy in the Django admin; every change is audited; others cannot reach it."""

from django.urls import reverse

from apps.audit.models import ObjectChange
from apps.quotes.models import ChecklistQuestion, CommitmentTier


def test_an_admin_changes_a_tier_and_the_change_is_audited(client_for, admin_user):
    tier = CommitmentTier.objects.get(minimum_commitment="10000")
    codes = list(tier.required_questions.values_list("pk", flat=True))[:2]
    response = client_for(admin_user).post(
        reverse("admin:quotes_commitmenttier_change", args=[tier.pk]),
        {"name_en": tier.name_en, "name_fr": tier.name_fr, "name_id": tier.name_id, "minimum_commitment": "25000",
         "currency": "EUR", "required_questions": codes},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    tier.refresh_from_db()
    assert str(tier.minimum_commitment) == "25000" and tier.currency == "EUR"
    assert tier.required_questions.count() == 2
    entry = ObjectChange.objects.for_object(tier).get()
    assert entry.changes["minimum_commitment"] == ["10000", "25000"]
    assert len(entry.before["required_questions"]) == 9 and len(entry.after["required_questions"]) == 2


def test_questions_are_switched_off_not_deleted(client_for, admin_user):
    question = ChecklistQuestion.objects.get(code="usage-export")
    client = client_for(admin_user)
    assert client.get(reverse("admin:quotes_checklistquestion_delete", args=[question.pk])).status_code == 403


def test_platform_cannot_edit_the_policy(client_for, platform_user):
    response = client_for(platform_user).get(reverse("admin:quotes_commitmenttier_changelist"))
    assert response.status_code in (302, 403)
