"""Reads about users, teams and roles."""

from apps.accounts.models import Team


def teams_for_user(user):
    """The teams a user belongs to (every team for a superuser)."""
    if not getattr(user, "is_authenticated", False):
        return Team.objects.none()
    if user.is_superuser:
        return Team.objects.all()
    return Team.objects.filter(memberships__user=user)
