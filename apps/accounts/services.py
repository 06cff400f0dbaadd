"""Writes about teams, memberships and roles."""

from django.contrib.auth.models import Group
from django.db import transaction

from apps.accounts.models import Membership, Team
from apps.accounts.roles import Role


@transaction.atomic
def team_create(*, name: str, slug: str, reporting_currency: str = "USD") -> Team:
    team = Team(name=name, slug=slug, reporting_currency=reporting_currency)
    team.full_clean()
    team.save()
    return team


@transaction.atomic
def membership_add(*, team: Team, user) -> Membership:
    membership, _created = Membership.objects.get_or_create(team=team, user=user)
    return membership


def role_grant(*, user, role: Role | str) -> None:
    user.groups.add(Group.objects.get(name=Role(role).value))
    user.__dict__.pop("_dossier_roles", None)
