"""Default-deny access control and the active team of a request."""

from django.contrib.auth.middleware import LoginRequiredMiddleware
from django.core.exceptions import PermissionDenied
from django.utils.functional import SimpleLazyObject

from apps.accounts.roles import has_role

ACTIVE_TEAM_SESSION_KEY = "dossier_active_team_id"


def _is_rest_framework_view(view_func) -> bool:
    # DRF's as_view() sets .cls; DRF authenticates (session or token) and checks its own permission classes.
    from rest_framework.views import APIView

    view_class = getattr(view_func, "cls", None)
    return isinstance(view_class, type) and issubclass(view_class, APIView)


class RoleRequiredMiddleware(LoginRequiredMiddleware):
    """Every page needs a signed-in user holding a role, unless the view is marked otherwise.

    Public views use @login_not_required (login, /healthz, the agent API). Logout uses @role_not_required.
    """

    def process_view(self, request, view_func, view_args, view_kwargs):
        if not getattr(view_func, "login_required", True) or _is_rest_framework_view(view_func):
            return None
        if not request.user.is_authenticated:
            return self.handle_no_permission(request, view_func)
        if not has_role(request.user) and not getattr(view_func, "role_not_required", False):
            raise PermissionDenied
        return None


def active_team_for(request):
    """The team the user works in now: the one chosen in the session if still a member, else the first."""
    from apps.accounts.selectors import teams_for_user

    user = request.user
    if not user.is_authenticated:
        return None
    teams = teams_for_user(user)
    chosen = request.session.get(ACTIVE_TEAM_SESSION_KEY)
    if chosen is not None:
        team = teams.filter(pk=chosen).first()
        if team is not None:
            return team
    return teams.first()


class ActiveTeamMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.active_team = SimpleLazyObject(lambda: active_team_for(request))
        return self.get_response(request)
