"""Team administration pages: the first-run start page, a team's people and roles, its first agent pool and token.

Thin: the forms read the input, apps/teams/services decides and audits, apps/teams/selectors scopes (404 for a team
one does not administer).
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from apps.accounts.roles import Role
from apps.common.forms import add_service_errors
from apps.fleet.views import register_command, server_url
from apps.teams import rules, selectors, services
from apps.teams.forms import AddMemberForm, PersonForm, PoolSetupForm, RolesForm, TeamForm


def _require_administration(request) -> None:
    if not rules.may_open_administration(request.user):
        raise PermissionDenied


def start(request):
    """The first-run page: the journey step by step, the teams one administers, and (POST) a new team when allowed."""
    _require_administration(request)
    can_create_team = rules.may_create_team(request.user)
    team_form = TeamForm(request.POST or None)
    if request.method == "POST":
        if not can_create_team:
            raise PermissionDenied
        if team_form.is_valid():
            try:
                team = services.team_create(actor=request.user, **team_form.cleaned_data)
            except ValidationError as error:
                add_service_errors(team_form, error)
            else:
                messages.success(request, _("Team %(team)s created.") % {"team": team.name})
                return redirect("teams:detail", pk=team.pk)
    return render(request, "teams/start.html", {
        "overview": selectors.administration_overview(request.user),
        "can_create_team": can_create_team,
        "team_form": team_form,
        "is_superuser": rules.is_superuser(request.user),
    }, status=400 if request.method == "POST" else 200)


def _team_page(request, team, status=200, **forms):
    memberships = [
        {"membership": membership, "roles": selectors.member_roles(membership),
         "roles_form": RolesForm(initial={"roles": selectors.member_roles(membership)},
                                 auto_id=f"id_m{membership.pk}_%s")}
        for membership in selectors.memberships_for_admin(request.user).filter(team=team)
    ]
    return render(request, "teams/team_detail.html", {
        "team": team,
        "memberships": memberships,
        "pools": team.agent_pools.order_by("name"),
        "person_form": forms.get("person_form") or PersonForm(),
        "add_form": forms.get("add_form") or AddMemberForm(auto_id="id_add_%s"),
        "pool_form": forms.get("pool_form") or PoolSetupForm(),
        "roles": Role,
    }, status=status)


def team_detail(request, pk: int):
    return _team_page(request, selectors.team_for_admin(user=request.user, pk=pk))


@never_cache
@require_POST
def person_create(request, pk: int):
    """Create a person with roles; the one-time password is on this answer only."""
    team = selectors.team_for_admin(user=request.user, pk=pk)
    form = PersonForm(request.POST)
    if form.is_valid():
        try:
            created = services.person_create(actor=request.user, team=team, **form.cleaned_data)
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            return render(request, "teams/person_created.html", {
                "team": team, "person": created.membership.user, "password": created.one_time_password,
                "roles": services.roles_of(created.membership.user),
                "login_url": request.build_absolute_uri(reverse("accounts:login")),
            })
    return _team_page(request, team, status=400, person_form=form)


@require_POST
def member_add(request, pk: int):
    team = selectors.team_for_admin(user=request.user, pk=pk)
    form = AddMemberForm(request.POST, auto_id="id_add_%s")
    if form.is_valid():
        person = selectors.people_addable_by(request.user).filter(username=form.cleaned_data["username"]).first()
        if person is None:
            form.add_error("username", _("No such person among the members of your teams."))
        else:
            try:
                services.membership_add(actor=request.user, team=team, person=person,
                                        roles=form.cleaned_data["roles"] or None)
            except ValidationError as error:
                add_service_errors(form, error)
            else:
                messages.success(request, _("%(person)s joined %(team)s.")
                                 % {"person": person.get_username(), "team": team.name})
                return redirect("teams:detail", pk=team.pk)
    return _team_page(request, team, status=400, add_form=form)


@require_POST
def membership_roles(request, pk: int):
    membership = selectors.membership_for_admin(user=request.user, pk=pk)
    form = RolesForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Choose among platform, finance, product and admin."))
    else:
        try:
            changed = services.membership_set_roles(actor=request.user, membership=membership,
                                                    roles=form.cleaned_data["roles"])
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
        else:
            if changed:
                messages.success(request, _("The roles of %(person)s changed.")
                                 % {"person": membership.user.get_username()})
    return redirect("teams:detail", pk=membership.team_id)


@require_POST
def membership_remove(request, pk: int):
    membership = selectors.membership_for_admin(user=request.user, pk=pk)
    team_pk, person = membership.team_id, membership.user
    try:
        services.membership_remove(actor=request.user, membership=membership)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, _("%(person)s no longer belongs to the team.") % {"person": person.get_username()})
    return redirect("teams:detail", pk=team_pk)


@never_cache
@require_POST
def pool_create(request, pk: int):
    """Create an agent pool and its first registration token; the token is on this answer only."""
    team = selectors.team_for_admin(user=request.user, pk=pk)
    form = PoolSetupForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            created = services.pool_with_token_create(
                actor=request.user, team=team, name=data["name"], description=data["description"],
                token_description=data["token_description"], single_use=data["single_use"],
                expires_at=form.expires_at(),
            )
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            return render(request, "teams/pool_created.html", {
                "team": team, "pool": created.pool, "token": created.token, "secret": created.secret,
                "command": register_command(request, created.secret), "server_url": server_url(request),
            })
    return _team_page(request, team, status=400, pool_form=form)
