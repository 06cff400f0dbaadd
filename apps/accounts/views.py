"""Login, logout, the team switcher, the user's own preferences page and password change."""

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from apps.accounts.decorators import login_not_required, role_not_required
from apps.accounts.forms import TeamSwitchForm
from apps.accounts.middleware import ACTIVE_TEAM_SESSION_KEY
from apps.accounts.roles import user_roles
from apps.accounts.selectors import teams_for_user

login_view = login_not_required(auth_views.LoginView.as_view(redirect_authenticated_user=True))
logout_view = role_not_required(auth_views.LogoutView.as_view())


class PasswordChangeView(auth_views.PasswordChangeView):
    """Change one's own password (a person created with a one-time password sets their own here)."""

    template_name = "accounts/password_change.html"

    def get_success_url(self):
        return reverse("accounts:preferences")

    def form_valid(self, form):
        response = super().form_valid(form)  # keeps the session signed in (update_session_auth_hash)
        messages.success(self.request, _("Your password was changed."))
        return response


password_change = PasswordChangeView.as_view()


def _safe_next(request, fallback: str) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return target
    return fallback


@require_POST
def team_switch(request):
    form = TeamSwitchForm(request.POST, user=request.user)
    if form.is_valid():
        request.session[ACTIVE_TEAM_SESSION_KEY] = form.cleaned_data["team"].pk
        messages.success(request, _("You now work in %(team)s.") % {"team": form.cleaned_data["team"].name})
    else:
        messages.error(request, _("That team is not one of yours."))
    return HttpResponseRedirect(_safe_next(request, reverse("home")))


def preferences(request):
    return render(
        request,
        "accounts/preferences.html",
        {"teams": teams_for_user(request.user), "roles": sorted(user_roles(request.user))},
    )
