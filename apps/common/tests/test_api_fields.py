"""The scoped related fields offer only what the requesting user may see; create-only fields stay put on update."""

import pytest
from rest_framework import serializers
from rest_framework.test import APIRequestFactory

from apps.common.api_fields import (
    CreateOnlyFieldsMixin,
    ScopedPrimaryKeyRelatedField,
    TeamChoiceField,
    TeamMemberField,
)
from tests.scoped_app.fixtures import scoped_models  # noqa: F401 (a fixture for this module's tests)


def request_by(user):
    request = APIRequestFactory().post("/")
    request.user = user
    return request


@pytest.fixture
def comment_serializer(scoped_models):  # noqa: F811
    class CommentSerializer(CreateOnlyFieldsMixin, serializers.ModelSerializer):
        note = ScopedPrimaryKeyRelatedField(model=scoped_models.Note)

        class Meta:
            model = scoped_models.NoteComment
            fields = ["id", "note", "text"]
            create_only_fields = ["note"]

    return CommentSerializer


def test_a_record_of_the_users_team_is_accepted_and_another_teams_is_not(
    comment_serializer, scoped_models, team, other_team, platform_user  # noqa: F811
):
    ours = scoped_models.Note.objects.create(team=team, text="ours")
    theirs = scoped_models.Note.objects.create(team=other_team, text="theirs")
    context = {"request": request_by(platform_user)}

    accepted = comment_serializer(data={"note": ours.pk, "text": "hi"}, context=context)
    refused = comment_serializer(data={"note": theirs.pk, "text": "hi"}, context=context)

    assert accepted.is_valid(), accepted.errors
    assert accepted.validated_data["note"] == ours
    assert not refused.is_valid()
    assert refused.errors["note"][0].code == "does_not_exist"  # the same answer as for an id that does not exist


def test_without_a_request_there_is_nothing_to_choose(comment_serializer, scoped_models, team):  # noqa: F811
    note = scoped_models.Note.objects.create(team=team, text="ours")
    serializer = comment_serializer(data={"note": note.pk, "text": "hi"})
    assert not serializer.is_valid()
    assert list(serializer.fields["note"].get_queryset()) == []


def test_create_only_fields_are_read_only_when_a_record_is_updated(comment_serializer, scoped_models, team):  # noqa: F811
    comment = scoped_models.NoteComment.objects.create(
        note=scoped_models.Note.objects.create(team=team, text="ours"), text="hi"
    )
    assert comment_serializer(comment).fields["note"].read_only
    assert not comment_serializer(comment).fields["text"].read_only
    assert not comment_serializer(data={}).fields["note"].read_only


class _Assignment(serializers.Serializer):
    team = TeamChoiceField()
    people = TeamMemberField(many=True, required=False)


def test_a_team_is_chosen_by_slug_among_the_users_teams(team, other_team, platform_user):
    context = {"request": request_by(platform_user)}
    assert _Assignment(data={"team": team.slug}, context=context).is_valid()
    assert not _Assignment(data={"team": other_team.slug}, context=context).is_valid()
    assert _Assignment(data={}, context=context).is_valid()  # optional: the views fall back on the active team


def test_people_are_chosen_among_those_who_share_a_team_with_the_user(platform_user, finance_user, outsider):
    context = {"request": request_by(platform_user)}
    colleagues = _Assignment(data={"people": [finance_user.pk]}, context=context)
    assert colleagues.is_valid(), colleagues.errors
    assert colleagues.validated_data["people"] == [finance_user]
    assert not _Assignment(data={"people": [finance_user.pk, outsider.pk]}, context=context).is_valid()
