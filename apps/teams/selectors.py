"""Reads of team administration, scoped to the teams the user administers (another team's objects: 404)."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models import Count, Prefetch, QuerySet
from django.shortcuts import get_object_or_404

from apps.accounts.models import Membership, Team
from apps.accounts.roles import Role
from apps.accounts.selectors import team_members_for_user
from apps.fleet.models import AgentPool
from apps.teams import rules


def team_for_admin(*, user, pk: int) -> Team:
    return get_object_or_404(rules.administered_teams(user), pk=pk)


def memberships_for_admin(user) -> QuerySet[Membership]:
    """Memberships of the teams the user administers, with each person's role groups."""
    role_groups = Prefetch("user__groups", queryset=Group.objects.filter(name__in=Role.values))
    return (
        Membership.objects.filter(team__in=rules.administered_teams(user))
        .select_related("team", "user")
        .prefetch_related(role_groups)
        .order_by("user__username", "pk")
    )


def membership_for_admin(*, user, pk: int, team_pk: int | None = None) -> Membership:
    memberships = memberships_for_admin(user)
    if team_pk is not None:
        memberships = memberships.filter(team_id=team_pk)
    return get_object_or_404(memberships, pk=pk)


def member_roles(membership: Membership) -> list[str]:
    """The member's roles, sorted (from the prefetched groups)."""
    return sorted(group.name for group in membership.user.groups.all() if group.name in Role.values)


def people_addable_by(user) -> QuerySet:
    """Existing people a user may add to a team: anyone for a superuser, else those sharing one of their teams."""
    if rules.is_superuser(user):
        return get_user_model().objects.filter(is_active=True)
    return team_members_for_user(user).filter(is_active=True, is_superuser=False)


@dataclass(frozen=True)
class TeamOverview:
    team: Team
    member_count: int
    admin_count: int
    pool_count: int


def administration_overview(user) -> list[TeamOverview]:
    """The teams the user administers with what the first-run checklist looks at."""
    teams = rules.administered_teams(user).annotate(member_count=Count("memberships", distinct=True)).order_by("name")
    pools = dict(
        AgentPool.objects.filter(team__in=teams.values("pk")).order_by().values_list("team_id").annotate(count=Count("pk"))
    )
    admins = dict(
        Membership.objects.filter(team__in=teams.values("pk"), user__groups__name=Role.ADMIN)
        .order_by().values_list("team_id").annotate(count=Count("user", distinct=True))
    )
    return [
        TeamOverview(team=team, member_count=team.member_count, admin_count=admins.get(team.pk, 0),
                     pool_count=pools.get(team.pk, 0))
        for team in teams
    ]
