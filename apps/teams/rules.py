"""Who administers which team (docs/permissions.md, "Team administration"). One place answers; pages, API and services
ask it.

- A superuser administers every team and may create teams.
- A team admin (the `admin` role, member of the team) administers the teams they are a member of, and nothing else.
- While no team exists at all (the first run), a holder of the `admin` role may create the first one.

Roles are Django groups, so they hold across all of a person's teams: a team admin changes the roles of a person only
when every team that person belongs to is one the admin administers (otherwise the change would reach a team the
admin does not run), never those of a superuser, and never adds a role to themselves.
"""

from __future__ import annotations

from django.db.models import QuerySet

from apps.accounts.models import Membership, Team
from apps.accounts.roles import Role, has_role


def is_superuser(user) -> bool:
    return bool(getattr(user, "is_authenticated", False) and user.is_active and user.is_superuser)


def administered_teams(user) -> QuerySet[Team]:
    """The teams this user administers: every team for a superuser, their own teams for a team admin, else none."""
    if is_superuser(user):
        return Team.objects.all()
    if not getattr(user, "is_authenticated", False) or not has_role(user, Role.ADMIN):
        return Team.objects.none()
    return Team.objects.filter(memberships__user=user)


def may_administer(user, team: Team) -> bool:
    return administered_teams(user).filter(pk=team.pk).exists()


def may_open_administration(user) -> bool:
    """The start page: superusers and holders of the admin role."""
    return is_superuser(user) or has_role(user, Role.ADMIN)


def may_create_team(user) -> bool:
    """A superuser always; a holder of the admin role only while no team exists (the first run)."""
    if is_superuser(user):
        return True
    return has_role(user, Role.ADMIN) and not Team.objects.exists()


def teams_outside_administration(actor, person) -> QuerySet[Team]:
    """The teams `person` belongs to that `actor` does not administer (none for a superuser actor)."""
    if is_superuser(actor):
        return Team.objects.none()
    person_teams = Membership.objects.filter(user=person).values("team_id")
    return Team.objects.filter(pk__in=person_teams).exclude(pk__in=administered_teams(actor).values("pk"))
