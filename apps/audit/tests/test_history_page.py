"""The per-object history page: a team's records only to that team, global records to every role, nothing else."""

import pytest
from django.urls import reverse

from apps.audit.services import model_snapshot, record_change
from tests.factories import UserFactory


def history_url(instance) -> str:
    return reverse("audit:object-history", args=[instance._meta.app_label, instance._meta.model_name, instance.pk])


@pytest.fixture
def note(scoped_models, team, platform_user):
    note = scoped_models.Note.objects.create(team=team, text="draft")
    before = model_snapshot(note)
    note.text = "final"
    note.save()
    record_change(actor=platform_user, instance=note, action="update", before=before, after=model_snapshot(note))
    return note


def test_member_reads_the_history_with_the_diff(client_for, finance_user, note):
    response = client_for(finance_user).get(history_url(note))
    assert response.status_code == 200
    html = response.content.decode()
    assert "<del>draft</del>" in html and "<ins>final</ins>" in html
    assert ">pat<" in html


def test_history_of_another_teams_object_is_404(client_for, outsider, note):
    assert client_for(outsider).get(history_url(note)).status_code == 404


def test_admin_role_of_another_team_gets_404_too(client_for, other_team, note):
    admin_elsewhere = UserFactory(username="adm2", roles=["admin"], teams=[other_team], is_staff=True)
    assert client_for(admin_elsewhere).get(history_url(note)).status_code == 404


def test_superuser_reads_any_teams_history(client_for, note, db):
    superuser = UserFactory(username="root", is_superuser=True, is_staff=True)
    assert client_for(superuser).get(history_url(note)).status_code == 200


def test_child_record_is_scoped_through_its_parent(scoped_models, client_for, platform_user, outsider, note):
    comment = scoped_models.NoteComment.objects.create(note=note, text="looks right")
    assert client_for(outsider).get(history_url(comment)).status_code == 404
    assert client_for(platform_user).get(history_url(comment)).status_code == 200


def test_global_record_history_is_readable_by_any_role(scoped_models, client_for, outsider):
    page = scoped_models.GlobalPage.objects.create(title="H200 SXM")
    record_change(actor="load_catalog", instance=page, action="create", after=model_snapshot(page))
    response = client_for(outsider).get(history_url(page))
    assert response.status_code == 200
    assert "load_catalog" in response.content.decode()


def test_models_that_are_neither_scoped_nor_global_have_no_history_page(client_for, platform_user, team):
    assert client_for(platform_user).get(history_url(team)).status_code == 404
    assert client_for(platform_user).get(history_url(platform_user)).status_code == 404


@pytest.mark.parametrize(
    "args",
    [
        ("nosuchapp", "thing", "1"),
        ("scoped_app", "nosuchmodel", "1"),
        ("scoped_app", "note", "999999"),
        ("scoped_app", "note", "not-a-number"),
    ],
)
def test_unknown_objects_are_404(scoped_models, client_for, platform_user, args):
    assert client_for(platform_user).get(reverse("audit:object-history", args=args)).status_code == 404


def test_empty_history_says_so(scoped_models, client_for, platform_user, team):
    quiet = scoped_models.Note.objects.create(team=team, text="untouched")
    response = client_for(platform_user).get(history_url(quiet))
    assert response.status_code == 200
    assert "No change recorded yet." in response.content.decode()
