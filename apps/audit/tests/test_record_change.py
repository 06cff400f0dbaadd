"""record_change() writes who, what, before/after, the diff and the request id of the request that caused it."""

import pytest
from django.contrib.contenttypes.models import ContentType
from django.test import override_settings
from django.urls import reverse

from apps.audit.context import current_request_id, reset_request_id, set_request_id
from apps.audit.models import ObjectChange
from apps.audit.services import diff, model_snapshot, record_change


def test_record_change_writes_before_after_and_the_changes(scoped_models, team, platform_user):
    note = scoped_models.Note.objects.create(team=team, text="draft")
    before = model_snapshot(note)
    note.text = "final"
    note.save()
    token = set_request_id("req-abcdef12")
    try:
        entry = record_change(
            actor=platform_user,
            instance=note,
            action="update",
            before=before,
            after=model_snapshot(note),
            message="reworded",
        )
    finally:
        reset_request_id(token)

    entry.refresh_from_db()
    assert entry.before == {"id": note.pk, "team_id": team.pk, "text": "draft"}
    assert entry.after == {"id": note.pk, "team_id": team.pk, "text": "final"}
    assert entry.changes == {"text": ["draft", "final"]}
    assert entry.actor == platform_user and entry.actor_label == "pat"
    assert entry.team == team  # taken from the instance
    assert entry.content_type == ContentType.objects.get_for_model(scoped_models.Note)
    assert entry.object_id == str(note.pk) and entry.object_repr == "final"
    assert entry.request_id == "req-abcdef12"
    assert entry.message == "reworded"


def test_a_command_is_recorded_under_its_label(team):
    entry = record_change(actor="load_catalog", instance=team, action="create", after={"name": "x"})
    assert entry.actor is None and entry.actor_label == "load_catalog"
    assert entry.changes == {"name": [None, "x"]}


def test_outside_a_request_the_request_id_is_empty(team):
    assert current_request_id() == ""
    assert record_change(actor=None, instance=team, action="update").request_id == ""


def test_diff_lists_only_changed_fields():
    assert diff({"a": 1, "b": 2}, {"a": 1, "b": 3, "c": 4}) == {"b": [2, 3], "c": [None, 4]}
    assert diff(None, None) == {}


def test_model_snapshot_is_json_ready_and_can_be_limited(team):
    team.refresh_from_db()
    snapshot = model_snapshot(team)
    assert snapshot["name"] == "Platform Team"
    assert isinstance(snapshot["created_at"], str)
    assert isinstance(snapshot["revisit_price_change_percent"], str)  # Decimal kept exact, as text
    assert model_snapshot(team, ["name"]) == {"name": "Platform Team"}


@override_settings(ROOT_URLCONF="tests.scoped_app.urls")
def test_a_real_request_stores_its_x_request_id(scoped_models, client_for, platform_user, team):
    note = scoped_models.Note.objects.create(team=team, text="draft")
    response = client_for(platform_user).post(
        reverse("scoped-note-rename", args=[note.pk]), {"text": "final"}, HTTP_X_REQUEST_ID="lb-7f3a9c2e-0001"
    )
    assert response.status_code == 204
    assert response["X-Request-ID"] == "lb-7f3a9c2e-0001"
    entry = ObjectChange.objects.for_object(note).get()
    assert entry.request_id == "lb-7f3a9c2e-0001"
    assert entry.changes == {"text": ["draft", "final"]}
    assert entry.actor == platform_user


@pytest.mark.parametrize("header", ["", "short", "has spaces in it", "x" * 65, "<script>alert(1)</script>"])
@override_settings(ROOT_URLCONF="tests.scoped_app.urls")
def test_an_unusable_x_request_id_is_replaced_by_a_fresh_one(scoped_models, client_for, platform_user, team, header):
    note = scoped_models.Note.objects.create(team=team, text="draft")
    response = client_for(platform_user).post(
        reverse("scoped-note-rename", args=[note.pk]), {"text": "final"}, HTTP_X_REQUEST_ID=header
    )
    generated = response["X-Request-ID"]
    assert generated != header and len(generated) == 32
    assert ObjectChange.objects.for_object(note).get().request_id == generated


def test_every_response_carries_a_request_id(client):
    first = client.get("/healthz")["X-Request-ID"]
    second = client.get("/healthz")["X-Request-ID"]
    assert first and second and first != second
