"""Writes about pools, registration tokens and agents, for people (pages, API) and for agents (the protocol)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _

from apps.audit.services import model_create, model_snapshot, model_update, record_change
from apps.catalog.models import SpecKey
from apps.fleet import protocol
from apps.fleet.conf import protocol_settings
from apps.fleet.errors import ProtocolError
from apps.fleet.inventory_check import ExpectedNode, Interconnect, check_inventory
from apps.fleet.models import (
    Agent,
    AgentCommand,
    AgentPool,
    AgentStatus,
    InventorySnapshot,
    InventorySource,
    RegistrationToken,
)

# --- people ---------------------------------------------------------------------------------------------------------


@transaction.atomic
def pool_create(*, team, name: str, description: str = "", actor=None) -> AgentPool:
    return model_create(instance=AgentPool(team=team, name=name, description=description), actor=actor)


@transaction.atomic
def pool_set_active(*, pool: AgentPool, is_active: bool, actor=None) -> AgentPool:
    pool, _changed = model_update(instance=pool, actor=actor, data={"is_active": is_active}, fields=["is_active"])
    return pool


@transaction.atomic
def registration_token_create(
    *,
    pool: AgentPool,
    actor=None,
    description: str = "",
    single_use: bool = False,
    expires_at: datetime | None = None,
) -> tuple[RegistrationToken, str]:
    """A new registration token for the pool; returns the row and the secret (shown once, never stored)."""
    secret = protocol.new_token(protocol.REGISTRATION_TOKEN_PREFIX)
    token = RegistrationToken(
        pool=pool,
        description=description,
        token_hash=protocol.token_hash(secret),
        token_prefix=protocol.token_display_prefix(secret),
        single_use=single_use,
        expires_at=expires_at,
        created_by=actor if getattr(actor, "is_authenticated", False) else None,
    )
    model_create(instance=token, actor=actor, team=pool.team, audit_fields=_TOKEN_AUDIT_FIELDS)
    return token, secret


_TOKEN_AUDIT_FIELDS = ["id", "pool", "description", "token_prefix", "single_use", "expires_at", "revoked_at"]


@transaction.atomic
def registration_token_revoke(*, token: RegistrationToken, actor=None) -> RegistrationToken:
    if token.revoked_at is None:
        token, _changed = model_update(
            instance=token, actor=actor, data={"revoked_at": timezone.now()}, fields=["revoked_at"],
            action="transition", audit_fields=_TOKEN_AUDIT_FIELDS, team=token.pool.team,
            message="registration token revoked",
        )
    return token


@transaction.atomic
def agent_revoke(*, agent: Agent, actor=None) -> Agent:
    """The agent's token stops working at once; the node may register again with a valid registration token."""
    if agent.revoked_at is None:
        revoked = {"revoked_at": timezone.now(), "status": AgentStatus.OFFLINE}
        agent, _changed = model_update(
            instance=agent, actor=actor, data=revoked, fields=revoked, action="transition",
            audit_fields=_AGENT_AUDIT_FIELDS, team=agent.pool.team, message="agent revoked",
        )
    return agent


_AGENT_AUDIT_FIELDS = ["id", "pool", "name", "machine_id", "token_prefix", "version", "status", "revoked_at",
                       "pending_command", "candidate"]


@transaction.atomic
def agent_request_command(*, agent: Agent, command: AgentCommand | str, actor=None) -> Agent:
    """Queue pause/resume/stop for the agent's next heartbeat (a newer command replaces an undelivered one)."""
    agent, _changed = model_update(
        instance=agent, actor=actor, data={"pending_command": AgentCommand(command).value},
        fields=["pending_command"], audit_fields=_AGENT_AUDIT_FIELDS, team=agent.pool.team,
    )
    return agent


# --- agents (the protocol) ------------------------------------------------------------------------------------------


def check_agent_version(agent_version: str) -> None:
    """426 agent_too_old when the version is older than DOSSIER_MIN_AGENT_VERSION (400 when it is not PEP 440)."""
    minimum = protocol_settings().min_agent_version
    try:
        too_old = protocol.is_older(agent_version, minimum)
    except ValueError:
        raise ProtocolError(
            400, "validation_error", _("The agent version is not a PEP 440 version."),
            fields={"agent_version": [_("%(version)s is not a PEP 440 version.") % {"version": agent_version}]},
        ) from None
    if too_old:
        raise ProtocolError(
            426,
            "agent_too_old",
            _("Agent %(version)s is older than the minimum %(minimum)s; upgrade with pip install -U ./agents.")
            % {"version": agent_version, "minimum": minimum},
            extra={"min_agent_version": minimum, "agent_version": agent_version},
        )


@dataclass(frozen=True)
class Registration:
    agent: Agent
    agent_token: str
    created: bool


def _registration_refused(reason: str) -> ProtocolError:
    details = {
        "unknown": _("This registration token is unknown."),
        "revoked": _("This registration token was revoked; ask an administrator for a new one."),
        "expired": _("This registration token has expired; ask an administrator for a new one."),
        "used": _("This single-use registration token was already used; ask an administrator for a new one."),
    }
    return ProtocolError(401, "invalid_registration_token", details[reason])


def pool_disabled_error(pool: AgentPool) -> ProtocolError:
    return ProtocolError(403, "pool_disabled", _("The agent pool %(pool)s is disabled.") % {"pool": pool.name})


def agent_register(
    *,
    registration_token: str,
    name: str,
    agent_version: str,
    protocol_version: int,
    machine_id: str,
    job_kinds: list[str],
    operations: list[str],
    inventory: dict[str, Any],
    advertise_address: str | None = None,
    now: datetime | None = None,
) -> Registration:
    """Create the agent (or re-issue the token of the pool's agent with the same machine id).

    Refusals (version, token, pool) happen before anything is written; a single-use token is consumed in the same
    transaction that creates the agent, with a conditional UPDATE so two registrations cannot both use it.
    """
    now = now or timezone.now()
    check_agent_version(agent_version)
    with transaction.atomic():
        token = (
            RegistrationToken.objects.select_related("pool", "pool__team")
            .filter(token_hash=protocol.token_hash(registration_token))
            .first()
            if protocol.has_prefix(registration_token, protocol.REGISTRATION_TOKEN_PREFIX)
            else None
        )
        if token is None or not protocol.token_matches(registration_token, token.token_hash):
            raise _registration_refused("unknown")
        reason = token.unusable_reason(now)
        if reason is not None:
            raise _registration_refused(reason)
        if not token.pool.is_active:
            raise pool_disabled_error(token.pool)
        consumed = RegistrationToken.objects.filter(pk=token.pk, revoked_at__isnull=True)
        if token.single_use:
            consumed = consumed.filter(use_count=0)
        if consumed.update(use_count=F("use_count") + 1, last_used_at=now) != 1:
            raise _registration_refused("used")

        secret = protocol.new_token(protocol.AGENT_TOKEN_PREFIX)
        values = {
            "name": name,
            "token_hash": protocol.token_hash(secret),
            "token_prefix": protocol.token_display_prefix(secret),
            "registration_token": token,
            "version": agent_version,
            "protocol_version": protocol_version,
            "job_kinds": list(job_kinds),
            "operations": list(operations),
            "advertise_address": advertise_address or None,
            "status": AgentStatus.ONLINE,
            "reported_state": "",
            "last_heartbeat_at": now,
            "revoked_at": None,
            "registered_at": now,
        }
        agent = Agent.objects.select_for_update().filter(pool=token.pool, machine_id=machine_id).first()
        created = agent is None
        if created:
            agent = Agent(pool=token.pool, machine_id=machine_id, **values)
            agent.full_clean()
            agent.save()
        else:
            for field, value in values.items():
                setattr(agent, field, value)
            agent.full_clean()
            agent.save()
        record_inventory(agent=agent, inventory=inventory, source=InventorySource.REGISTER, now=now)
        record_change(
            actor=f"agent {agent.name}",
            instance=agent,
            action="create" if created else "update",
            after=model_snapshot(agent, _AGENT_AUDIT_FIELDS),
            team=token.pool.team,
            message=f"registered with {token.token_prefix}",
        )
    return Registration(agent=agent, agent_token=secret, created=created)


def authenticate_agent(token: str) -> Agent | None:
    """The agent holding this token, or None (unknown, revoked). Looked up by hash, compared in constant time."""
    if not protocol.has_prefix(token, protocol.AGENT_TOKEN_PREFIX):
        return None
    # Every agent call runs this: one indexed lookup, no ordering (the model's default ordering would add a join).
    agent = Agent.objects.select_related("pool").filter(token_hash=protocol.token_hash(token)).order_by().first()
    if agent is None or not protocol.token_matches(token, agent.token_hash) or agent.revoked_at is not None:
        return None
    return agent


def record_inventory(*, agent: Agent, inventory: dict[str, Any], source: str, now: datetime | None = None
                     ) -> InventorySnapshot:
    """Store an inventory snapshot; an unchanged inventory (same hash as the latest) is not stored twice."""
    digest = protocol.canonical_sha256(inventory)
    latest = agent.inventory_snapshots.order_by("-taken_at", "-pk").first()
    if latest is not None and latest.sha256 == digest:
        return latest
    gpus = [gpu for gpu in inventory.get("gpus") or [] if isinstance(gpu, dict)]
    names = sorted({str(gpu.get("name") or "?") for gpu in gpus})
    snapshot = InventorySnapshot(
        agent=agent,
        source=source,
        sha256=digest,
        data=inventory,
        gpu_count=len(gpus),
        gpu_names=", ".join(names)[:300],
        taken_at=now or timezone.now(),
    )
    snapshot.save()
    if agent.candidate_id is not None:
        agent_check_inventory(agent=agent, now=snapshot.taken_at)
    return snapshot


def expected_node_for(candidate) -> tuple[ExpectedNode, dict[str, Any]]:
    """What the candidate's quote promises about the node, and a plain description of where each figure came from.

    Memory per GPU: the catalog's usable MiB where recorded (what the driver reports), else the quote's GB, else the
    datasheet GB — datasheet HBM "GB" are close to GiB, so they count as 1024 MiB each (checked with 5 % tolerance).
    """

    quote = candidate.quote
    gpu = quote.gpu
    memory_mib, memory_basis = None, ""
    usable = gpu.spec(SpecKey.USABLE_MIB) if gpu is not None else None
    datasheet = gpu.spec(SpecKey.MEMORY_GB) if gpu is not None else None
    if usable is not None:
        memory_mib, memory_basis = int(usable.value), "catalog usable MiB"
    elif quote.gpu_memory_gb:
        memory_mib, memory_basis = int(quote.gpu_memory_gb * 1024), "quote GB"
    elif datasheet is not None:
        memory_mib, memory_basis = int(datasheet.value * 1024), "datasheet GB"
    text = quote.interconnect_intra_node.lower()
    interconnect = None
    if "nvlink" in text or "nvswitch" in text:
        interconnect = Interconnect.NVLINK
    elif "pcie" in text:
        interconnect = Interconnect.PCIE
    expected = ExpectedNode(
        gpu_model=gpu.name if gpu is not None else None,
        gpu_count=quote.gpus_per_node if gpu is not None else None,
        memory_mib=memory_mib if gpu is not None else None,
        interconnect=interconnect if gpu is not None else None,
    )
    description = {
        "quote": quote.pk, "gpu_model": expected.gpu_model, "gpu_count": expected.gpu_count,
        "memory_mib": expected.memory_mib, "memory_basis": memory_basis if expected.memory_mib else "",
        "interconnect": str(expected.interconnect) if expected.interconnect else None,
    }
    return expected, description


def agent_check_inventory(*, agent: Agent, now: datetime | None = None) -> list[dict[str, Any]]:
    """Compare the agent's latest inventory with its candidate's quoted node; store and return the mismatches."""
    snapshot = agent.latest_inventory()
    if agent.candidate_id is None or snapshot is None:
        values: dict[str, Any] = {"inventory_expected": None, "inventory_mismatches": [], "inventory_checked_at": None}
    else:
        expected, description = expected_node_for(agent.candidate)
        values = {
            "inventory_expected": description,
            "inventory_mismatches": [mismatch.as_dict() for mismatch in check_inventory(snapshot.data, expected)],
            "inventory_checked_at": now or timezone.now(),
        }
    Agent.objects.filter(pk=agent.pk).update(**values)
    for field, value in values.items():
        setattr(agent, field, value)
    return agent.inventory_mismatches


@transaction.atomic
def agent_link_candidate(*, agent: Agent, candidate, actor=None) -> Agent:
    """Say which quoted node the agent runs on (None to unlink), then check its inventory against the quote."""
    if candidate is not None and candidate.team_id != agent.pool.team_id:
        raise ValidationError(_("The candidate belongs to another team."))
    agent, _changed = model_update(
        instance=agent, actor=actor, data={"candidate": candidate}, fields=["candidate"],
        audit_fields=_AGENT_AUDIT_FIELDS, team=agent.pool.team,
    )
    agent_check_inventory(agent=agent)
    return agent


def agent_heartbeat(
    *,
    agent: Agent,
    agent_version: str,
    state: str,
    current_job: dict | None,
    job_kinds: list[str],
    uptime_s: float | None,
    spool_pending: int,
    inventory_sha256: str,
    now: datetime | None = None,
) -> list[dict[str, str]]:
    """Record a heartbeat (two small UPDATEs at most) and return the commands waiting for the agent."""
    now = now or timezone.now()
    status = AgentStatus.BUSY if state == "busy" or current_job else AgentStatus.ONLINE
    Agent.objects.filter(pk=agent.pk).update(
        last_heartbeat_at=now,
        status=status,
        reported_state=state,
        version=agent_version,
        job_kinds=list(job_kinds),
        uptime_s=uptime_s,
        spool_pending=spool_pending,
        reported_inventory_sha256=inventory_sha256,
    )
    commands = []
    command = agent.pending_command
    if command and Agent.objects.filter(pk=agent.pk, pending_command=command).update(pending_command="") == 1:
        commands.append({"command": command})
    return commands


def agent_touch(*, agent: Agent, status: str | None = None, now: datetime | None = None) -> None:
    """An authenticated call proves the agent is alive: refresh its last heartbeat (and status when given)."""
    values: dict[str, Any] = {"last_heartbeat_at": now or timezone.now()}
    if status is not None:
        values["status"] = status
    Agent.objects.filter(pk=agent.pk).update(**values)


def agents_mark_offline(*, now: datetime | None = None) -> int:
    """Online or busy agents whose heartbeats stopped become offline (conditional UPDATE; safe to repeat)."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=protocol_settings().offline_after_s)
    return Agent.objects.filter(status__in=[AgentStatus.ONLINE, AgentStatus.BUSY], last_heartbeat_at__lt=cutoff).update(
        status=AgentStatus.OFFLINE
    )


def agent_mark_lost_if_silent(*, agent_id: int, now: datetime | None = None) -> bool:
    """Called when one of the agent's leases expired: the agent is lost when its heartbeats stopped as well."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=protocol_settings().offline_after_s)
    silent = Agent.objects.filter(pk=agent_id).exclude(status=AgentStatus.LOST).exclude(last_heartbeat_at__gte=cutoff)
    return silent.update(status=AgentStatus.LOST) == 1
