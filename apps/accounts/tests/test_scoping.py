"""for_user(): a user sees the records of their own teams, a superuser every team's, anyone else nothing."""

import pytest
from django.contrib.auth.models import AnonymousUser

from apps.accounts.models import Membership
from apps.accounts.scoping import TeamScopedQuerySet
from apps.accounts.selectors import teams_for_user
from tests.factories import TeamFactory, UserFactory


@pytest.fixture
def notes(scoped_models, team, other_team):
    ours = scoped_models.Note.objects.create(team=team, text="ours")
    theirs = scoped_models.Note.objects.create(team=other_team, text="theirs")
    return ours, theirs


def test_member_sees_only_their_teams_records(scoped_models, notes, platform_user):
    ours, _theirs = notes
    assert list(scoped_models.Note.objects.for_user(platform_user)) == [ours]


def test_outsider_sees_nothing_of_the_team(scoped_models, notes, outsider, team):
    _ours, theirs = notes
    visible = scoped_models.Note.objects.for_user(outsider)
    assert list(visible) == [theirs]
    assert not visible.filter(team=team).exists()


def test_member_of_two_teams_sees_both(scoped_models, notes, team, other_team):
    user = UserFactory(username="both", roles=["platform"], teams=[team, other_team])
    assert set(scoped_models.Note.objects.for_user(user)) == set(notes)


def test_user_of_no_team_sees_nothing(scoped_models, notes, db):
    lonely = UserFactory(username="lonely", roles=["platform"])
    assert not scoped_models.Note.objects.for_user(lonely).exists()


def test_anonymous_user_sees_nothing(scoped_models, notes):
    assert not scoped_models.Note.objects.for_user(AnonymousUser()).exists()


def test_superuser_sees_every_team(scoped_models, notes, db):
    superuser = UserFactory(username="root", is_superuser=True)
    assert set(scoped_models.Note.objects.for_user(superuser)) == set(notes)


def test_role_does_not_widen_scope(scoped_models, notes, team):
    """The admin role manages people and the catalog; it does not see other teams' records."""
    admin_elsewhere = UserFactory(username="adm2", roles=["admin"], teams=[TeamFactory(slug="third")], is_staff=True)
    assert not scoped_models.Note.objects.for_user(admin_elsewhere).exists()


def test_child_records_are_scoped_through_their_parent(scoped_models, notes, platform_user, outsider):
    ours, theirs = notes
    our_comment = scoped_models.NoteComment.objects.create(note=ours, text="a")
    their_comment = scoped_models.NoteComment.objects.create(note=theirs, text="b")
    assert list(scoped_models.NoteComment.objects.for_user(platform_user)) == [our_comment]
    assert list(scoped_models.NoteComment.objects.for_user(outsider)) == [their_comment]


def test_for_team_filters_by_one_team(scoped_models, notes, other_team):
    assert list(scoped_models.Note.objects.for_team(other_team)) == [notes[1]]


def test_membership_leaving_a_team_hides_its_records_at_once(scoped_models, notes, platform_user, team):
    Membership.objects.filter(user=platform_user, team=team).delete()
    assert not scoped_models.Note.objects.for_user(platform_user).exists()


def test_scoped_queryset_works_on_any_model_with_a_team(team, other_team, platform_user, outsider):
    """The helper is generic: memberships are team records too."""
    memberships = TeamScopedQuerySet(model=Membership)
    assert {m.team for m in memberships.for_user(platform_user)} == {team}
    assert {m.user for m in memberships.for_user(outsider)} == {outsider}


def test_teams_for_user(platform_user, outsider, team, other_team, db):
    assert list(teams_for_user(platform_user)) == [team]
    assert list(teams_for_user(AnonymousUser())) == []
    assert set(teams_for_user(UserFactory(username="root", is_superuser=True))) == {team, other_team}
