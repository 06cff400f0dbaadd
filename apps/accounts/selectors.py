"""Reads about users, teams and roles."""

from django.contrib.auth import get_user_model

from apps.accounts.models import Team


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
