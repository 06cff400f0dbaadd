"""Objects for team administration's parameterised URLs (see tests/url_registry.py): every one is a team's."""

import itertools

from apps.accounts.models import Membership
from tests.factories import UserFactory

_numbers = itertools.count(1)


def the_team(team):
    return team


def team_kwargs(team):
    return {"team_pk": team.pk}


def make_membership(team):
    """A member of `team` holding the product role, and nothing else."""
    person = UserFactory(username=f"url-fixture-member-{next(_numbers)}", roles=["product"], teams=[team])
    return Membership.objects.get(team=team, user=person)


def membership_kwargs(team):
    membership = make_membership(team)
    return {"team_pk": team.pk, "pk": membership.pk}


URL_FIXTURES = {
    "teams:detail": the_team,
    "teams:person-create": the_team,
    "teams:member-add": the_team,
    "teams:pool-create": the_team,
    "teams:membership-roles": make_membership,
    "teams:membership-remove": make_membership,
    "teams-api:team-detail": the_team,
    "teams-api:membership-list": team_kwargs,
    "teams-api:membership-detail": membership_kwargs,
    "teams-api:person-create": team_kwargs,
    "teams-api:pool-create": team_kwargs,
}
