"""model_update() sets the given fields, validates the row, saves what changed and writes one audit entry;
model_create() validates, saves and audits a new record."""

import pytest
from django.core.exceptions import ValidationError

from apps.audit.models import ObjectChange
from apps.audit.services import model_create, model_update


def test_a_change_is_saved_and_audited_with_before_and_after(scoped_models, team, platform_user):
    note = scoped_models.Note.objects.create(team=team, text="draft")

    note, changed = model_update(
        instance=note, actor=platform_user, data={"text": "final"}, fields=["text"], message="reworded"
    )

    assert changed is True
    assert scoped_models.Note.objects.get(pk=note.pk).text == "final"
    entry = ObjectChange.objects.for_object(note).get()
    assert entry.action == ObjectChange.Action.UPDATE
    assert entry.before == {"id": note.pk, "team_id": team.pk, "text": "draft"}
    assert entry.after == {"id": note.pk, "team_id": team.pk, "text": "final"}
    assert entry.changes == {"text": ["draft", "final"]}
    assert entry.message == "reworded"
    assert entry.actor == platform_user and entry.team == team


def test_setting_what_is_stored_saves_nothing_and_writes_no_entry(scoped_models, team, platform_user):
    note = scoped_models.Note.objects.create(team=team, text="draft")

    note, changed = model_update(instance=note, actor=platform_user, data={"text": "draft"}, fields=["text"])

    assert changed is False
    assert not ObjectChange.objects.for_object(note).exists()


def test_a_field_the_caller_does_not_allow_is_refused(scoped_models, team, platform_user):
    note = scoped_models.Note.objects.create(team=team, text="draft")

    with pytest.raises(TypeError, match="team"):
        model_update(instance=note, actor=platform_user, data={"text": "final", "team": None}, fields=["text"])

    assert scoped_models.Note.objects.get(pk=note.pk).text == "draft"
    assert not ObjectChange.objects.for_object(note).exists()


def test_an_invalid_value_is_refused_by_the_models_validation(scoped_models, team, platform_user):
    note = scoped_models.Note.objects.create(team=team, text="draft")

    with pytest.raises(ValidationError) as error:
        model_update(instance=note, actor=platform_user, data={"text": "x" * 201}, fields=["text"])

    assert "text" in error.value.message_dict
    assert scoped_models.Note.objects.get(pk=note.pk).text == "draft"
    assert not ObjectChange.objects.for_object(note).exists()


def test_the_entry_shows_only_the_audit_fields_and_takes_the_action_and_team_given(
    scoped_models, team, other_team, platform_user
):
    note = scoped_models.Note.objects.create(team=team, text="draft")

    model_update(
        instance=note,
        actor="a command",
        data={"text": "final"},
        fields=["text"],
        action=ObjectChange.Action.TRANSITION,
        team=other_team,
        audit_fields=["text"],
    )

    entry = ObjectChange.objects.for_object(note).get()
    assert entry.action == ObjectChange.Action.TRANSITION
    assert (entry.before, entry.after) == ({"text": "draft"}, {"text": "final"})
    assert entry.actor is None and entry.actor_label == "a command"
    assert entry.team == other_team


def test_a_new_record_is_validated_saved_and_audited(scoped_models, team, platform_user):
    note = model_create(instance=scoped_models.Note(team=team, text="draft"), actor=platform_user, message="filed")

    entry = ObjectChange.objects.for_object(note).get()
    assert entry.action == ObjectChange.Action.CREATE
    assert entry.before is None and entry.after == {"id": note.pk, "team_id": team.pk, "text": "draft"}
    assert entry.message == "filed" and entry.team == team


def test_an_invalid_new_record_is_neither_saved_nor_audited(scoped_models, team, platform_user):
    with pytest.raises(ValidationError):
        model_create(instance=scoped_models.Note(team=team, text=""), actor=platform_user)
    assert not scoped_models.Note.objects.exists()
    assert not ObjectChange.objects.exists()
