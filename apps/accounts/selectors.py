"""Reads about users, teams and roles."""

from django.contrib.auth import get_user_model

from apps.accounts.models import Team
from apps.accounts.roles import Role


def teams_for_user(user):
    """The teams a user belongs to (every team for a superuser)."""
    if not getattr(user, "is_authenticated", False):
        return Team.objects.none()
    if user.is_superuser:
        return Team.objects.all()
    return Team.objects.filter(memberships__user=user)


def team_members_for_user(user):
    """The people who share a team with a user (every member of every team for a superuser)."""
    return get_user_model().objects.filter(memberships__team__in=teams_for_user(user)).distinct()


def team_admins(team):
    """The members of `team` holding the admin role (superusers are not members, so they are not listed): the people
    a member asks for a new agent pool, a user or a role."""
    if team is None:
        return get_user_model().objects.none()
    return (
        get_user_model()
        .objects.filter(memberships__team=team, groups__name=Role.ADMIN, is_active=True)
        .distinct()
        .order_by("username")
    )
