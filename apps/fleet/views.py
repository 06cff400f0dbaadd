"""Browser pages of the fleet: pools with registration instructions and tokens, agents with their inventory."""

from __future__ import annotations

import json

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy as _lazy
from django.views.decorators.http import require_POST

from apps.accounts.roles import Role, has_role
from apps.accounts.selectors import team_admins
from apps.common.forms import add_service_errors
from apps.fleet.filters import AgentFilterSet
from apps.fleet.forms import AgentCommandForm, CandidateLinkForm, PoolForm, RegistrationTokenForm
from apps.fleet.inventory_check import MismatchField
from apps.fleet.selectors import agent_get, agents_for_user, pool_get, pools_for_user, registration_token_get
from apps.fleet.services import (
    agent_link_candidate,
    agent_request_command,
    agent_revoke,
    pool_create,
    pool_set_active,
    registration_token_create,
    registration_token_revoke,
)

OPERATOR_ROLES = (Role.PLATFORM, Role.ADMIN)


def require_role(request, *roles: str) -> None:
    if not has_role(request.user, *roles):
        raise PermissionDenied


def server_url(request) -> str:
    """The URL an agent on another machine uses to reach this server (what the browser used)."""
    return request.build_absolute_uri("/").rstrip("/")


def register_command(request, token: str) -> str:
    return f"dossier-agent register --server {server_url(request)} --registration-token {token}"


def _offline_after() -> int:
    return settings.DOSSIER_AGENT_OFFLINE_AFTER_S


def pool_list(request):
    can_manage_pools = has_role(request.user, Role.ADMIN)
    return render(request, "fleet/pool_list.html", {
        "pools": pools_for_user(request.user),
        "can_manage_pools": can_manage_pools,
        # Who to ask for a pool: the admins of the team one works in (only worked out for those who cannot make one).
        "pool_admins": [] if can_manage_pools else list(team_admins(request.active_team)),
        "form": PoolForm(),
    })


def pool_create_view(request):
    require_role(request, Role.ADMIN)
    team = request.active_team
    if team is None:
        raise PermissionDenied
    form = PoolForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            pool = pool_create(team=team, actor=request.user, **form.cleaned_data)
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, _("Pool %(pool)s created.") % {"pool": pool.name})
            return redirect(pool)
    status = 400 if request.method == "POST" else 200
    return render(request, "fleet/pool_form.html", {"form": form, "team": team}, status=status)


def pool_detail(request, pk: int):
    pool = pool_get(user=request.user, pk=pk)
    now = timezone.now()
    agents = list(pool.agents.order_by("name", "pk"))
    for agent in agents:
        agent.shown_status = agent.status_at(now, _offline_after())
    return render(request, "fleet/pool_detail.html", {
        "pool": pool,
        "agents": agents,
        "tokens": pool.registration_tokens.select_related("created_by"),
        "now": now,
        "can_operate": has_role(request.user, *OPERATOR_ROLES),
        "can_manage_pools": has_role(request.user, Role.ADMIN),
        "token_form": RegistrationTokenForm(),
        "command_example": register_command(request, "dsr_…"),
    })


@require_POST
def pool_toggle(request, pk: int):
    require_role(request, Role.ADMIN)
    pool = pool_get(user=request.user, pk=pk)
    pool_set_active(pool=pool, is_active=not pool.is_active, actor=request.user)
    if pool.is_active:
        messages.success(request, _("Pool %(pool)s enabled.") % {"pool": pool.name})
    else:
        messages.warning(request, _("Pool %(pool)s disabled: its agents can no longer register or claim jobs.")
                         % {"pool": pool.name})
    return redirect(pool)


@require_POST
def token_create(request, pk: int):
    """Issue a registration token and show it once, with the command that uses it (it is never stored)."""
    require_role(request, *OPERATOR_ROLES)
    pool = pool_get(user=request.user, pk=pk)
    form = RegistrationTokenForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("The token was not created: %(errors)s") % {"errors": form.errors.as_text()})
        return redirect(pool)
    token, secret = registration_token_create(
        pool=pool, actor=request.user, description=form.cleaned_data["description"],
        single_use=form.cleaned_data["single_use"], expires_at=form.expires_at(),
    )
    return render(request, "fleet/token_created.html", {
        "pool": pool, "token": token, "secret": secret, "command": register_command(request, secret),
        "server_url": server_url(request),
    })


@require_POST
def token_revoke(request, pk: int):
    require_role(request, *OPERATOR_ROLES)
    token = registration_token_get(user=request.user, pk=pk)
    registration_token_revoke(token=token, actor=request.user)
    messages.success(request, _("Token %(token)s revoked.") % {"token": token.token_prefix})
    return redirect(token.pool)


def agent_list(request):
    filterset = AgentFilterSet(request.GET or None, queryset=agents_for_user(request.user), request=request)
    now = timezone.now()
    agents = list(filterset.qs)
    for agent in agents:
        agent.shown_status = agent.status_at(now, _offline_after())
    return render(request, "fleet/agent_list.html", {"filterset": filterset, "agents": agents})


MISMATCH_LABELS = {
    MismatchField.GPU_PRESENT: _lazy("GPU present"),
    MismatchField.GPU_MODEL: _lazy("GPU model"),
    MismatchField.GPU_COUNT: _lazy("GPU count"),
    MismatchField.MEMORY: _lazy("Memory per GPU (MiB)"),
    MismatchField.INTERCONNECT: _lazy("Interconnect (active NVLink links)"),
}


def agent_detail(request, pk: int):
    agent = agent_get(user=request.user, pk=pk)
    now = timezone.now()
    snapshot = agent.latest_inventory()
    return render(request, "fleet/agent_detail.html", {
        "agent": agent,
        "shown_status": agent.status_at(now, _offline_after()),
        "snapshot": snapshot,
        "inventory": snapshot.data if snapshot else None,
        "inventory_json": json.dumps(snapshot.data, indent=2, sort_keys=True) if snapshot else "",
        "attempts": agent.attempts.select_related("job").order_by("-claimed_at", "-pk")[:20],
        "can_operate": has_role(request.user, *OPERATOR_ROLES),
        "command_form": AgentCommandForm(),
        "candidate_form": CandidateLinkForm(team=agent.pool.team, initial={"candidate": agent.candidate_id}),
        "mismatches": [{**mismatch, "label": MISMATCH_LABELS.get(mismatch.get("field"), mismatch.get("field"))}
                       for mismatch in agent.inventory_mismatches],
    })


@require_POST
def agent_candidate(request, pk: int):
    """Link the agent to the candidate whose node it runs on; its inventory is checked against the quote at once."""
    require_role(request, *OPERATOR_ROLES)
    agent = agent_get(user=request.user, pk=pk)
    form = CandidateLinkForm(request.POST, team=agent.pool.team)
    if not form.is_valid():
        messages.error(request, _("Choose one of your team's candidates."))
        return redirect(agent)
    agent = agent_link_candidate(agent=agent, candidate=form.cleaned_data["candidate"], actor=request.user)
    if agent.candidate is None:
        messages.info(request, _("The agent is no longer linked to a candidate."))
    elif agent.inventory_mismatches:
        messages.warning(request, _("The node does not match the quote: %(count)d mismatches.")
                         % {"count": len(agent.inventory_mismatches)})
    else:
        messages.success(request, _("The node matches the quote."))
    return redirect(agent)


@require_POST
def agent_command(request, pk: int):
    require_role(request, *OPERATOR_ROLES)
    agent = agent_get(user=request.user, pk=pk)
    form = AgentCommandForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Choose pause, resume or stop."))
        return redirect(agent)
    agent_request_command(agent=agent, command=form.cleaned_data["command"], actor=request.user)
    messages.success(request, _("The agent receives “%(command)s” with its next heartbeat.")
                     % {"command": agent.get_pending_command_display()})
    return redirect(agent)


@require_POST
def agent_revoke_view(request, pk: int):
    require_role(request, *OPERATOR_ROLES)
    agent = agent_get(user=request.user, pk=pk)
    agent_revoke(agent=agent, actor=request.user)
    messages.warning(request, _("Agent %(agent)s revoked: its token no longer works.") % {"agent": agent.name})
    return redirect(agent)
