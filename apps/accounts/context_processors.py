"""Template context for the base layout: the user's teams, the active team and roles."""

from apps.accounts.roles import user_roles
from apps.accounts.selectors import teams_for_user


def navigation(request) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {
        "nav_teams": teams_for_user(user),
        "active_team": getattr(request, "active_team", None),
        "user_roles": user_roles(user),
    }
