"""Writes about plans, jobs and their attempts: dispatch, the agent's job calls, ingest, the reaper and re-drive.

State changes that two processes may race for (claim, reap, dispatch, ingest) are conditional UPDATEs whose row
count decides who won, so they behave the same on SQLite and PostgreSQL.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import random
import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, BinaryIO

from django.conf import settings
from django.core.files import File
from django.db import IntegrityError, transaction
from django.db.models import F, Q, Sum
from django.utils import timezone
from django.utils.module_loading import import_string
from django.utils.translation import gettext as _
from dossier_agent.contract import job_specs

from apps.audit.services import model_create, model_snapshot, model_update, record_change
from apps.benchmarks.measurements import result_rehearsal_reasons
from apps.benchmarks.models import (
    ACTIVE_JOB_STATUSES,
    LIVE_ATTEMPT_STATUSES,
    Artifact,
    AttemptStatus,
    BenchmarkPlan,
    Job,
    JobAttempt,
    JobEvent,
    JobGroup,
    JobGroupStatus,
    JobStatus,
    PlanStatus,
    Result,
    ResultStatus,
)
from apps.benchmarks.plan_spec import JobEntry, PlanSpecError, normalise_plan_spec
from apps.benchmarks.storage import artifact_storage, artifact_storage_name
from apps.benchmarks.telemetry import summarise_samples, telemetry_samples
from apps.benchmarks.verdicts import error_text
from apps.fleet import protocol
from apps.fleet.conf import protocol_settings
from apps.fleet.errors import ProtocolError
from apps.fleet.models import Agent, AgentPool, AgentStatus, InventorySource
from apps.fleet.services import agent_mark_lost_if_silent, agent_touch, agents_mark_offline, record_inventory
from apps.quotes.models import Candidate

logger = logging.getLogger(__name__)

_PLAN_AUDIT_FIELDS = ["id", "name", "status", "target_pool", "target_agent", "dispatch_requested_at", "dispatched_at"]
_JOB_AUDIT_FIELDS = ["id", "kind", "status", "cancel_requested", "cancel_reason", "attempt_count"]


# --- plans (people) -------------------------------------------------------------------------------------------------


class PlanError(ValueError):
    """A plan that cannot be saved or dispatched; the message is for the person who asked."""


@transaction.atomic
def plan_create(
    *,
    team,
    name: str,
    spec: dict[str, Any],
    target_pool: AgentPool,
    target_agent: Agent | None = None,
    description: str = "",
    actor=None,
) -> BenchmarkPlan:
    try:
        normalise_plan_spec(spec)
    except PlanSpecError as error:
        raise PlanError(_("The job list is not valid: %(problems)s") % {"problems": "; ".join(error.problems)}
                        ) from None
    if target_pool.team_id != team.pk:
        raise PlanError(_("The agent pool belongs to another team."))
    if target_agent is not None and target_agent.pool_id != target_pool.pk:
        raise PlanError(_("The agent is not in the chosen pool."))
    entries = normalise_plan_spec(spec)
    if target_agent is not None and any(entry.world_size for entry in entries):
        raise PlanError(_("A job group needs one agent per rank: aim it at a pool, not at one agent."))
    check_declared_operations(entries=entries, target_pool=target_pool, target_agent=target_agent)
    plan = BenchmarkPlan(
        team=team, name=name, description=description, spec=spec, target_pool=target_pool,
        target_agent=target_agent, created_by=actor if getattr(actor, "is_authenticated", False) else None,
    )
    return model_create(instance=plan, actor=actor, audit_fields=_PLAN_AUDIT_FIELDS)


@transaction.atomic
def plan_update(
    *,
    plan: BenchmarkPlan,
    name: str,
    spec: dict[str, Any],
    target_pool: AgentPool,
    target_agent: Agent | None = None,
    description: str = "",
    actor=None,
) -> BenchmarkPlan:
    """Edit a draft plan (its jobs, target, name) with the checks of plan_create; a plan sent off is never edited."""
    plan = BenchmarkPlan.objects.select_for_update().get(pk=plan.pk)
    if plan.status != PlanStatus.DRAFT:
        raise PlanError(_("Only a draft plan can be edited; copy it as a new draft instead."))
    _check_plan(team=plan.team, spec=spec, target_pool=target_pool, target_agent=target_agent)
    plan, _changed = model_update(
        instance=plan, actor=actor, fields=["name", "description", "spec", "target_pool", "target_agent"],
        data={"name": name, "description": description, "spec": spec, "target_pool": target_pool,
              "target_agent": target_agent},
        audit_fields=_PLAN_AUDIT_FIELDS, message="draft edited",
    )
    return plan


def plan_copy(*, plan: BenchmarkPlan, actor=None) -> BenchmarkPlan:
    """A new draft with the plan's jobs and target, to edit before it is dispatched (the original is untouched)."""
    return plan_create(
        team=plan.team, name=(_("Copy of %(plan)s") % {"plan": plan.name})[:200], description=plan.description,
        spec=copy.deepcopy(plan.spec), target_pool=plan.target_pool, target_agent=plan.target_agent, actor=actor,
    )


def _check_plan(*, team, spec: dict[str, Any], target_pool: AgentPool, target_agent: Agent | None) -> None:
    """plan_create's checks, for an edit: the job list, the target's team and pool, groups, declared operations."""
    try:
        entries = normalise_plan_spec(spec)
    except PlanSpecError as error:
        raise PlanError(_("The job list is not valid: %(problems)s") % {"problems": "; ".join(error.problems)}
                        ) from None
    if target_pool.team_id != team.pk:
        raise PlanError(_("The agent pool belongs to another team."))
    if target_agent is not None and target_agent.pool_id != target_pool.pk:
        raise PlanError(_("The agent is not in the chosen pool."))
    if target_agent is not None and any(entry.world_size for entry in entries):
        raise PlanError(_("A job group needs one agent per rank: aim it at a pool, not at one agent."))
    check_declared_operations(entries=entries, target_pool=target_pool, target_agent=target_agent)


def operations_needed(entry, declared: list[str]) -> list[str]:
    """The node operations a plan entry will run on an agent that declares `declared`.

    `required_operations` of the entry, plus for an `operations` job aimed at the node's own serving stack the
    scenarios, their recoveries and the cold start's stop/start — computed by the agent package's own function, so
    the server and the agent agree. A spec the agent would refuse is refused here (PlanError).
    """
    needed = set(entry.required_operations)
    if entry.kind == "operations":
        try:
            parsed = job_specs.parse_operations_spec(entry.spec)
        except ValueError as error:
            raise PlanError(_("The operations job's spec is not valid: %(error)s") % {"error": error}) from None
        if parsed["target"] == "declared":
            needed |= set(job_specs.required_operations(parsed, declared))
    return sorted(needed)


def check_declared_operations(*, entries, target_pool: AgentPool, target_agent: Agent | None) -> None:
    """Refuse a plan that asks for an operation the node did not declare: the server never sends a command, only
    the name of an operation the agent's configuration lists. With a pool as target, some active agent of
    the pool must declare everything the plan needs."""
    if not any(entry.required_operations or entry.kind == "operations" for entry in entries):
        return
    agents = [target_agent] if target_agent is not None else list(
        target_pool.agents.filter(revoked_at__isnull=True).only("pk", "name", "operations"))
    for entry in entries:
        missing_by_agent = {}
        for agent in agents:
            declared = list(agent.operations or [])
            missing = sorted(set(operations_needed(entry, declared)) - set(declared))
            if not missing:
                break
            missing_by_agent[agent.name] = missing
        else:
            if target_agent is not None:
                raise PlanError(
                    _("The agent %(agent)s did not declare the operations %(operations)s that this plan asks for "
                      "(%(kind)s job). Declare them in the agent's configuration, or change the plan.")
                    % {"agent": target_agent.name, "operations": ", ".join(missing_by_agent[target_agent.name]),
                       "kind": entry.kind})
            needed = operations_needed(entry, [])
            raise PlanError(
                _("No agent of the pool %(pool)s declares every operation this plan asks for (%(kind)s job: "
                  "%(operations)s).") % {"pool": target_pool.name, "kind": entry.kind,
                                         "operations": ", ".join(needed) or "-"})


def plan_request_dispatch(*, plan: BenchmarkPlan, actor=None, now: datetime | None = None) -> bool:
    """Mark the plan for dispatch and queue dispatch_plan once the transaction commits; False if not a draft."""
    from apps.benchmarks.tasks import dispatch_plan

    now = now or timezone.now()
    with transaction.atomic():
        if BenchmarkPlan.objects.filter(pk=plan.pk, status=PlanStatus.DRAFT).update(
            status=PlanStatus.DISPATCHING, dispatch_requested_at=now
        ) != 1:
            return False
        before = model_snapshot(plan, _PLAN_AUDIT_FIELDS)
        plan.refresh_from_db()
        record_change(actor=actor, instance=plan, action="transition", before=before,
                      after=model_snapshot(plan, _PLAN_AUDIT_FIELDS), message="dispatch requested")
        dispatch_plan.delay_on_commit(plan.pk)
    return True


def plan_dispatch(*, plan_id: int, now: datetime | None = None) -> int:
    """Expand a plan marked for dispatch into queued jobs (the body of the dispatch_plan task).

    Returns the number of jobs created; 0 when the plan is gone or was dispatched already (a repeat is harmless).
    """
    now = now or timezone.now()
    with transaction.atomic():
        if BenchmarkPlan.objects.filter(pk=plan_id, status=PlanStatus.DISPATCHING).update(
            status=PlanStatus.DISPATCHED, dispatched_at=now
        ) != 1:
            return 0
        plan = BenchmarkPlan.objects.select_related("target_agent").get(pk=plan_id)
        entries = normalise_plan_spec(plan.spec)
        candidate_id = _plan_candidate_id(plan, entries)
        max_attempts = protocol_settings().max_attempts
        jobs = []
        position = 0
        for entry in entries:
            required = operations_needed(entry, []) if entry.kind == "operations" else list(entry.required_operations)
            for _copy in range(entry.count):
                ranks: list[tuple[JobGroup | None, int | None]] = [(None, None)]
                if entry.world_size:
                    group = JobGroup.objects.create(
                        team_id=plan.team_id, plan=plan, kind=entry.kind, world_size=entry.world_size,
                        max_generations=max_attempts, master_port=_free_group_port(), created_at=now,
                    )
                    ranks = [(group, rank) for rank in range(entry.world_size)]
                for group, rank in ranks:
                    spec = entry.spec
                    if group is not None:
                        spec = {**entry.spec, "group": {"group_id": group.public_id, "rank": rank,
                                                        "world_size": group.world_size, "env": entry.group_env}}
                    jobs.append(Job(
                        team_id=plan.team_id, plan=plan, position=position, kind=entry.kind, spec=spec,
                        spec_sha256=protocol.canonical_sha256(spec), acceptance_criteria=entry.acceptance_criteria,
                        required_operations=required, target_pool_id=plan.target_pool_id,
                        target_agent_id=plan.target_agent_id, max_attempts=max_attempts, created_at=now,
                        candidate_id=candidate_id, group=group, group_rank=rank,
                    ))
                    position += 1
        Job.objects.bulk_create(jobs)
        record_change(actor="dispatch_plan", instance=plan, action="transition",
                      message=f"dispatched {len(jobs)} jobs", after=model_snapshot(plan, _PLAN_AUDIT_FIELDS))
    return len(jobs)


def _team_candidate_id(team_id: int, candidate_id: Any) -> int | None:

    if not isinstance(candidate_id, int) or isinstance(candidate_id, bool):
        return None
    return Candidate.objects.filter(pk=candidate_id, team_id=team_id).values_list("pk", flat=True).first()


def _plan_candidate_id(plan: BenchmarkPlan, entries) -> int | None:
    """The candidate a plan measures: `candidate_id` at the top of its spec, else the `origin.candidate_id` its jobs
    share (plans derived from a candidate), else the candidate of the node of the agent it targets."""
    named = plan.spec.get("candidate_id") if isinstance(plan.spec, dict) else None
    if named is None:
        origins = [entry.spec.get("origin", {}).get("candidate_id") if isinstance(entry.spec.get("origin"), dict)
                   else None for entry in entries]
        # Only whole numbers count (anything else in the plan's JSON is no candidate); every job must share it.
        ids = {value if isinstance(value, int) and not isinstance(value, bool) else None for value in origins}
        named = ids.pop() if len(ids) == 1 else None
    found = _team_candidate_id(plan.team_id, named)
    if found is None and plan.target_agent is not None:
        found = _team_candidate_id(plan.team_id, plan.target_agent.candidate_id)
    return found


@transaction.atomic
def job_cancel(*, job: Job, actor=None, reason: str = "", now: datetime | None = None) -> Job:
    """A queued job is cancelled at once; a claimed or running one is flagged and its agent told on the next lease."""
    now = now or timezone.now()
    job = Job.objects.select_for_update().get(pk=job.pk)
    if job.is_final or job.cancel_requested:
        return job
    before = model_snapshot(job, _JOB_AUDIT_FIELDS)
    job.cancel_requested = True
    job.cancel_reason = reason[:200]
    job.cancel_requested_at = now
    job.cancel_requested_by = actor if getattr(actor, "is_authenticated", False) else None
    fields = ["cancel_requested", "cancel_reason", "cancel_requested_at", "cancel_requested_by"]
    if job.status == JobStatus.QUEUED:
        job.status = JobStatus.CANCELLED
        job.finished_at = now
        fields += ["status", "finished_at"]
    job.save(update_fields=fields)
    record_change(actor=actor, instance=job, action="transition", before=before,
                  after=model_snapshot(job, _JOB_AUDIT_FIELDS), message="cancellation requested")
    if job.group_id is not None:
        # A group runs together or not at all: cancelling one rank cancels the others.
        for other in Job.objects.filter(group_id=job.group_id).exclude(pk=job.pk):
            job_cancel(job=other, actor=actor, reason=reason, now=now)
        JobGroup.objects.filter(pk=job.group_id, status=JobGroupStatus.WAITING).update(
            status=JobGroupStatus.CANCELLED, finished_at=now)
    return job


# --- the agent's job calls ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lease:
    expires_at: datetime
    ttl_s: int
    renew_every_s: int

    def as_dict(self) -> dict[str, Any]:
        return {"expires_at": protocol.format_timestamp(self.expires_at), "ttl_s": self.ttl_s,
                "renew_every_s": self.renew_every_s}


@dataclass(frozen=True)
class Claim:
    job: Job
    attempt: JobAttempt
    job_token: str
    lease: Lease

    @property
    def group(self) -> dict[str, Any] | None:
        return group_state(self.attempt)


def _lease_of(attempt: JobAttempt) -> Lease:
    config = protocol_settings()
    ttl = config.lease_ttl_s if attempt.status == AttemptStatus.RUNNING else config.claim_lease_s
    return Lease(expires_at=attempt.lease_expires_at, ttl_s=ttl, renew_every_s=config.lease_renew_s)


def job_claim(*, agent: Agent, job_kinds: list[str], operations: list[str], now: datetime | None = None,
              batch: int = 100, client_address: str | None = None) -> Claim | None:
    """Give the agent the oldest queued job it can run, or None.

    Candidates are read in batches; each is taken with UPDATE … WHERE id = %s AND status = 'queued' and the row count
    says whether this agent won it, so two agents never get the same job (SQLite serialises the writers;
    PostgreSQL re-checks the WHERE clause after the first writer commits).
    """
    if not job_kinds:
        return None
    offered = set(operations)
    candidates = (
        Job.objects.filter(status=JobStatus.QUEUED, kind__in=job_kinds)
        .filter(Q(target_agent=agent) | Q(target_agent__isnull=True, target_pool_id=agent.pool_id))
        .order_by("created_at", "position", "pk")
        .values_list("pk", "required_operations", "group_id")
    )
    offset = 0
    held_groups: set[int] | None = None
    while True:
        page = list(candidates[offset:offset + batch])
        for job_id, required, group_id in page:
            if not set(required or ()) <= offered:
                continue
            if group_id is not None:
                if held_groups is None:  # one agent never holds two ranks of one group
                    held_groups = set(JobAttempt.objects.filter(
                        agent=agent, status__in=LIVE_ATTEMPT_STATUSES, job__group__isnull=False,
                    ).values_list("job__group_id", flat=True))
                if group_id in held_groups:
                    continue
            claim = _claim_one(agent=agent, job_id=job_id, now=now or timezone.now(),
                               client_address=client_address)
            if claim is not None:
                return claim
        if len(page) < batch:
            return None
        offset += batch


def _claim_one(*, agent: Agent, job_id: int, now: datetime, client_address: str | None = None) -> Claim | None:
    secret = protocol.new_token(protocol.JOB_TOKEN_PREFIX)
    config = protocol_settings()
    with transaction.atomic():
        won = Job.objects.filter(pk=job_id, status=JobStatus.QUEUED, attempt_count__lt=F("max_attempts")).update(
            status=JobStatus.CLAIMED, attempt_count=F("attempt_count") + 1
        )
        if won != 1:
            return None
        job = Job.objects.select_related("group").get(pk=job_id)
        attempt = JobAttempt.objects.create(
            job=job, number=job.attempt_count, agent=agent, token_hash=protocol.token_hash(secret),
            status=AttemptStatus.CLAIMED, claimed_at=now,
            lease_expires_at=now + timedelta(seconds=config.claim_lease_s), client_address=client_address,
            group_generation=job.group.generation if job.group is not None else None,
        )
    agent_touch(agent=agent, status=AgentStatus.BUSY, now=now)
    return Claim(job=job, attempt=attempt, job_token=secret, lease=_lease_of(attempt))


# --- job groups (docs/agent-protocol.md §8) ----------------------------------------------------------------------


def _free_group_port() -> int:
    """A rendezvous port from the configured range that no other waiting group holds."""
    config = protocol_settings()
    taken = set(JobGroup.objects.filter(status=JobGroupStatus.WAITING).values_list("master_port", flat=True))
    free = [port for port in range(config.group_port_min, config.group_port_max + 1) if port not in taken]
    return random.choice(free) if free else random.randint(config.group_port_min, config.group_port_max)


def group_state(attempt: JobAttempt) -> dict[str, Any] | None:
    """What the claim, start and lease replies say about the attempt's job group (None for a plain job).

    Ready once every rank's job has a live attempt of the group's current generation; then it carries rank 0's
    address (the address its agent advertised, else the address its claim came from) and the group's port.
    """
    job = attempt.job
    if job.group_id is None:
        return None
    group = JobGroup.objects.get(pk=job.group_id)
    state: dict[str, Any] = {"group_id": group.public_id, "generation": group.generation, "rank": job.group_rank,
                             "world_size": group.world_size, "ready": False,
                             "poll_s": protocol_settings().group_poll_s}
    if group.status != JobGroupStatus.WAITING or attempt.group_generation != group.generation:
        return state
    live = list(
        JobAttempt.objects.filter(job__group=group, group_generation=group.generation,
                                  status__in=LIVE_ATTEMPT_STATUSES)
        .select_related("agent").values_list("job__group_rank", "client_address", "agent__advertise_address")
    )
    ranks = {rank for rank, _address, _advertised in live}
    rank_zero = next(((address, advertised) for rank, address, advertised in live if rank == 0), None)
    if len(ranks) == group.world_size and rank_zero is not None and (rank_zero[1] or rank_zero[0]):
        state.update(ready=True, master_addr=rank_zero[1] or rank_zero[0], master_port=group.master_port)
    return state


def _lock_group_of(job_id: int) -> None:
    """Lock the job's group row first (inside the caller's transaction), when it has one.

    Every write that may touch a group (start, finish, the reaper, the re-run) takes the group row before any attempt
    or job row, so on PostgreSQL two ranks ending at once queue on the group instead of deadlocking on each other's
    rows. SQLite serialises writers anyway (IMMEDIATE transactions)."""
    group_id = Job.objects.filter(pk=job_id).values_list("group_id", flat=True).first()
    if group_id is not None:
        JobGroup.objects.select_for_update().filter(pk=group_id).first()


def _group_rerun(*, group_id: int, reason: str, now: datetime) -> bool:
    """One rank's attempt ended without success: start the whole group again as the next generation.

    Called inside the transaction that settled that attempt. The other ranks' live attempts are ended (their next
    lease renewal answers 409 attempt_not_running, so their agents abort them); every job of the group goes back to
    the queue, and results of the abandoned generation stop being canonical. Past the generation limit the group and
    its jobs fail. Returns True when the group was queued again.
    """
    group = JobGroup.objects.select_for_update().get(pk=group_id)
    if group.status != JobGroupStatus.WAITING:
        return False
    jobs = list(Job.objects.select_for_update().filter(group=group))
    JobAttempt.objects.filter(job__group=group, status__in=LIVE_ATTEMPT_STATUSES).update(
        status=AttemptStatus.CANCELLED, ended_at=now)
    dropped = Result.objects.filter(job__group=group, canonical=True)
    dropped_kinds = set(dropped.values_list("job__kind", flat=True))
    dropped.update(canonical=False)
    for kind in sorted(dropped_kinds & set(CANONICAL_CHANGE_HANDLERS)):
        import_string(CANONICAL_CHANGE_HANDLERS[kind])(team=group.team, actor="job_group_rerun")
    if group.generation >= group.max_generations or any(job.cancel_requested for job in jobs):
        group.status = JobGroupStatus.FAILED
        group.finished_at = now
        group.rerun_reason = reason[:300]
        group.save(update_fields=["status", "finished_at", "rerun_reason"])
        for job in jobs:
            job.status = JobStatus.CANCELLED if job.cancel_requested else JobStatus.FAILED
            job.failure_reason = (_("The job group failed after %(generations)d generations: %(reason)s")
                                  % {"generations": group.generation, "reason": reason})[:300]
            job.finished_at = now
            job.save(update_fields=["status", "failure_reason", "finished_at"])
        logger.info("job group %s failed in generation %s: %s", group.public_id, group.generation, reason)
        return False
    group.generation += 1
    group.master_port = _free_group_port()
    group.rerun_reason = reason[:300]
    group.save(update_fields=["generation", "master_port", "rerun_reason"])
    for job in jobs:
        job.status = JobStatus.QUEUED
        job.finished_at = None
        job.save(update_fields=["status", "finished_at"])
    logger.info("job group %s re-runs as generation %s: %s", group.public_id, group.generation, reason)
    return True


def _group_settle_success(*, job: Job, now: datetime) -> None:
    """After a rank succeeded: the group succeeded once every rank of its current generation did."""
    group = JobGroup.objects.select_for_update().get(pk=job.group_id)
    if group.status != JobGroupStatus.WAITING:
        return
    done = Result.objects.filter(job__group=group, canonical=True, status=ResultStatus.SUCCEEDED,
                                 attempt__group_generation=group.generation).count()
    if done + 1 >= group.world_size:  # the result being stored now is not saved yet
        group.status = JobGroupStatus.SUCCEEDED
        group.finished_at = now
        group.save(update_fields=["status", "finished_at"])


def _not_found() -> ProtocolError:
    return ProtocolError(404, "job_not_found", _("No such job for this agent."))


def authorise_job_call(*, agent: Agent, job_id: str, job_token: str) -> JobAttempt:
    """The attempt a /jobs/{id}/… call acts on: 404 unless one of the job's attempts is this agent's,
    403 unless the job token is the token of one of this agent's attempts of this job."""
    if not (job_id.isascii() and job_id.isdigit()):
        raise _not_found()
    job = Job.objects.filter(pk=int(job_id)).filter(attempts__agent=agent).distinct().first()
    if job is None:
        raise _not_found()
    refused = ProtocolError(403, "invalid_job_token", _("The X-Job-Token header does not belong to this job."))
    if not protocol.has_prefix(job_token, protocol.JOB_TOKEN_PREFIX):
        raise refused
    attempt = (
        JobAttempt.objects.select_related("job", "agent").filter(token_hash=protocol.token_hash(job_token)).first()
    )
    if (
        attempt is None
        or not protocol.token_matches(job_token, attempt.token_hash)
        or attempt.job_id != job.pk
        or attempt.agent_id != agent.pk
    ):
        raise refused
    return attempt


def _check_attempt_number(attempt: JobAttempt, number: int) -> None:
    if number != attempt.number:
        raise ProtocolError(
            400, "attempt_mismatch",
            _("The body names attempt %(body)d but the job token is for attempt %(token)d.")
            % {"body": number, "token": attempt.number},
        )


def _superseded(attempt: JobAttempt, job: Job) -> ProtocolError:
    return ProtocolError(
        409, "attempt_superseded",
        _("Attempt %(attempt)d of job %(job)d was superseded by attempt %(newer)d.")
        % {"attempt": attempt.number, "job": job.pk, "newer": job.attempt_count},
    )


def _not_running(attempt: JobAttempt, job: Job) -> ProtocolError:
    return ProtocolError(
        409, "attempt_not_running",
        _("Attempt %(attempt)d of job %(job)d is no longer running (%(status)s).")
        % {"attempt": attempt.number, "job": job.pk, "status": attempt.status},
    )


@dataclass(frozen=True)
class AttemptState:
    attempt: JobAttempt
    lease: Lease
    cancel_requested: bool
    cancel_reason: str

    @property
    def group(self) -> dict[str, Any] | None:
        return group_state(self.attempt)


def attempt_start(*, attempt: JobAttempt, number: int, inventory: dict[str, Any] | None,
                  now: datetime | None = None) -> AttemptState:
    """Switch a claimed attempt to running with the long lease; a repeat for a running attempt changes nothing."""
    _check_attempt_number(attempt, number)
    now = now or timezone.now()
    with transaction.atomic():
        _lock_group_of(attempt.job_id)
        attempt = JobAttempt.objects.select_for_update().get(pk=attempt.pk)
        job = Job.objects.select_for_update().get(pk=attempt.job_id)
        if attempt.number < job.attempt_count:
            raise _superseded(attempt, job)
        if attempt.status == AttemptStatus.CLAIMED:
            attempt.status = AttemptStatus.RUNNING
            attempt.started_at = now
            attempt.lease_expires_at = now + timedelta(seconds=protocol_settings().lease_ttl_s)
            if inventory:
                attempt.start_inventory = record_inventory(agent=attempt.agent, inventory=inventory,
                                                           source=InventorySource.START, now=now)
            attempt.save(update_fields=["status", "started_at", "lease_expires_at", "start_inventory"])
            if job.status == JobStatus.CLAIMED:
                job.status = JobStatus.RUNNING
                job.save(update_fields=["status"])
        elif attempt.status == AttemptStatus.AGENT_LOST:
            raise _not_running(attempt, job)
        elif attempt.status != AttemptStatus.RUNNING:
            raise ProtocolError(409, "attempt_finished", _("Attempt %(attempt)d of job %(job)d has already finished.")
                                % {"attempt": attempt.number, "job": job.pk})
    attempt.job = job  # group_state reads it: no query per lease renewal for a plain job
    return AttemptState(attempt, _lease_of(attempt), job.cancel_requested, job.cancel_reason)


def attempt_renew_lease(*, attempt: JobAttempt, number: int, progress: float | None,
                        now: datetime | None = None) -> AttemptState:
    """Extend the lease of the job's current, live attempt (409 for a superseded or reaped one)."""
    _check_attempt_number(attempt, number)
    now = now or timezone.now()
    job = Job.objects.get(pk=attempt.job_id)
    if attempt.number < job.attempt_count:
        raise _superseded(attempt, job)
    config = protocol_settings()
    ttl = config.lease_ttl_s if attempt.status == AttemptStatus.RUNNING else config.claim_lease_s
    values: dict[str, Any] = {"lease_expires_at": now + timedelta(seconds=ttl)}
    if progress is not None:
        values["progress"] = progress
    # Conditional on the attempt still being live: the reaper's UPDATE and this one cannot both win.
    if JobAttempt.objects.filter(pk=attempt.pk, status__in=LIVE_ATTEMPT_STATUSES).update(**values) != 1:
        attempt.refresh_from_db()
        raise _not_running(attempt, job)
    attempt.refresh_from_db()
    attempt.job = job  # group_state reads it: no query per lease renewal for a plain job
    return AttemptState(attempt, _lease_of(attempt), job.cancel_requested, job.cancel_reason)


@dataclass(frozen=True)
class EventBatchOutcome:
    stored: int
    duplicates: int
    next_seq: int


@transaction.atomic
def events_store(*, attempt: JobAttempt, number: int, first_seq: int, events: list[dict[str, Any]],
                 now: datetime | None = None) -> EventBatchOutcome:
    """Store a batch numbered first_seq, first_seq + 1, …; an (attempt, seq) already stored is left as it is."""
    _check_attempt_number(attempt, number)
    now = now or timezone.now()
    last_seq = first_seq + len(events) - 1
    existing = set(
        JobEvent.objects.filter(attempt=attempt, seq__gte=first_seq, seq__lte=last_seq).values_list("seq", flat=True)
    )
    fresh = [
        JobEvent(attempt=attempt, seq=first_seq + offset, kind=event["kind"], ts=event["ts"], data=event["data"],
                 received_at=now)
        for offset, event in enumerate(events)
        if first_seq + offset not in existing
    ]
    JobEvent.objects.bulk_create(fresh, ignore_conflicts=True)
    progress = [event for event in fresh if event.kind == "progress"]
    if progress:
        latest = max(progress, key=lambda event: event.seq)
        fraction = latest.data.get("fraction")
        values: dict[str, Any] = {"progress_message": str(latest.data.get("message") or "")[:300]}
        if isinstance(fraction, int | float) and not isinstance(fraction, bool) and 0 <= fraction <= 1:
            values["progress"] = float(fraction)
        JobAttempt.objects.filter(pk=attempt.pk, status__in=LIVE_ATTEMPT_STATUSES).update(**values)
    return EventBatchOutcome(stored=len(fresh), duplicates=len(existing), next_seq=first_seq + len(events))


@dataclass(frozen=True)
class StoredArtifact:
    artifact: Artifact
    created: bool


def _artifact_too_large(size: int, limit: int) -> ProtocolError:
    return ProtocolError(413, "artifact_too_large",
                         _("The artifact is %(size)d bytes; the limit is %(limit)d.") % {"size": size, "limit": limit},
                         extra={"limit": limit})


def _quota_exceeded(used: int, size: int, limit: int) -> ProtocolError:
    return ProtocolError(
        413, "job_artifact_quota_exceeded",
        _("This job already stores %(used)d bytes of artifacts; %(size)d more would pass the limit of %(limit)d.")
        % {"used": used, "size": size, "limit": limit},
        extra={"limit": limit},
    )


def _job_artifact_bytes(job_id: int) -> int:
    return Artifact.objects.filter(job_id=job_id).aggregate(total=Sum("size"))["total"] or 0


def artifact_store(*, attempt: JobAttempt, sha256: str, name: str, media_type: str, stream: BinaryIO,
                   declared_size: int, now: datetime | None = None) -> StoredArtifact:
    """Hash the body while copying it to a temporary file; keep it only when it hashes to its name.

    The file goes to the artifact storage under its digest (shared by every job that uploads the same bytes),
    then one short transaction records it, so nothing is half-written when any check fails: a failure after the
    file was stored removes it again (unless another artifact row uses the same bytes). An attempt that already
    finished takes no more artifacts (409 attempt_finished): its finish listed every one it had.
    """
    config = protocol_settings()
    now = now or timezone.now()
    if _finished(attempt.pk):
        raise _attempt_finished(attempt)
    existing = Artifact.objects.filter(job_id=attempt.job_id, sha256=sha256).first()
    if existing is not None:
        return StoredArtifact(existing, created=False)
    if declared_size > config.max_artifact_bytes:
        raise _artifact_too_large(declared_size, config.max_artifact_bytes)
    used = _job_artifact_bytes(attempt.job_id)
    if used + declared_size > config.max_job_artifact_bytes:
        raise _quota_exceeded(used, declared_size, config.max_job_artifact_bytes)

    digest = hashlib.sha256()
    size = 0
    with tempfile.TemporaryFile(dir=settings.FILE_UPLOAD_TEMP_DIR) as spooled:
        while chunk := stream.read(1024 * 1024):
            size += len(chunk)
            if size > config.max_artifact_bytes:
                raise _artifact_too_large(size, config.max_artifact_bytes)
            digest.update(chunk)
            spooled.write(chunk)
        if size != declared_size:
            raise ProtocolError(400, "validation_error",
                                _("The body has %(size)d bytes but Content-Length said %(declared)d.")
                                % {"size": size, "declared": declared_size})
        if digest.hexdigest() != sha256:
            raise ProtocolError(400, "digest_mismatch",
                                _("The body hashes to %(actual)s, not to %(expected)s; nothing was stored.")
                                % {"actual": digest.hexdigest(), "expected": sha256})
        storage = artifact_storage()
        storage_name = artifact_storage_name(sha256)
        if not storage.exists(storage_name):
            spooled.seek(0)
            storage_name = storage.save(storage_name, File(spooled, name=storage_name))

    try:
        with transaction.atomic():
            # The attempt first, then the job: the order attempt_finish locks them in.
            finished = _finished(attempt.pk, lock=True)
            Job.objects.select_for_update().filter(pk=attempt.job_id).first()
            if finished:
                raise _attempt_finished(attempt)
            used = _job_artifact_bytes(attempt.job_id)
            if used + size > config.max_job_artifact_bytes:
                raise _quota_exceeded(used, size, config.max_job_artifact_bytes)
            artifact = Artifact.objects.create(
                job_id=attempt.job_id, attempt=attempt, sha256=sha256, name=name, media_type=media_type, size=size,
                storage_name=storage_name, created_at=now,
            )
    except IntegrityError:
        # The same upload arrived twice at once: the other request stored it.
        stored = Artifact.objects.filter(job_id=attempt.job_id, sha256=sha256).first()
        if stored is not None:
            return StoredArtifact(stored, created=False)
        _delete_unreferenced(storage_name)
        raise
    except BaseException:
        # Refused (quota, finished attempt) or failed (a value the database refused): no file without its row.
        _delete_unreferenced(storage_name)
        raise
    return StoredArtifact(artifact, created=True)


def _finished(attempt_id: int, *, lock: bool = False) -> bool:
    """Whether the attempt's finish was stored (it carries the finish's Idempotency-Key from then on)."""
    attempts = JobAttempt.objects.filter(pk=attempt_id)
    if lock:
        attempts = attempts.select_for_update()
    return bool(attempts.values_list("finish_idempotency_key", flat=True).first())


def _attempt_finished(attempt: JobAttempt) -> ProtocolError:
    return ProtocolError(
        409, "attempt_finished",
        _("Attempt %(attempt)d of job %(job)d already finished; it takes no more artifacts.")
        % {"attempt": attempt.number, "job": attempt.job_id},
    )


def _delete_unreferenced(storage_name: str) -> None:
    if storage_name and not Artifact.objects.filter(storage_name=storage_name, purged_at__isnull=True).exists():
        artifact_storage().delete(storage_name)


@dataclass(frozen=True)
class FinishReply:
    status_code: int
    body: dict[str, Any]
    replayed: bool


def attempt_finish(*, attempt: JobAttempt, idempotency_key: str, raw_body: bytes, payload: dict[str, Any],
                   now: datetime | None = None) -> FinishReply:
    """Store an attempt's finish once, in one transaction, and decide whether it is the job's canonical result.

    A repeat with the same key and the same bytes gets the stored reply; the same key with other bytes is 409.
    A finish from a superseded attempt is stored too, never canonical. Ingest is queued when the transaction commits.
    """
    from apps.benchmarks.tasks import ingest_result

    _check_attempt_number(attempt, payload["attempt"])
    now = now or timezone.now()
    body_sha256 = hashlib.sha256(raw_body).hexdigest()
    with transaction.atomic():
        _lock_group_of(attempt.job_id)
        attempt = JobAttempt.objects.select_for_update().select_related("agent").get(pk=attempt.pk)
        job = Job.objects.select_for_update().get(pk=attempt.job_id)
        if attempt.finish_idempotency_key:
            if attempt.finish_idempotency_key != idempotency_key:
                raise ProtocolError(409, "attempt_finished",
                                    _("Attempt %(attempt)d of job %(job)d already finished under another key.")
                                    % {"attempt": attempt.number, "job": job.pk})
            if attempt.finish_body_sha256 != body_sha256:
                raise ProtocolError(409, "idempotency_key_reused",
                                    _("This Idempotency-Key was already used with a different body."))
            return FinishReply(attempt.finish_reply_status, attempt.finish_reply, replayed=True)

        listed = {item["sha256"] for item in payload["artifacts"]}
        artifacts = list(Artifact.objects.filter(job=job, sha256__in=listed))
        missing = sorted(listed - {artifact.sha256 for artifact in artifacts})
        if missing:
            raise ProtocolError(400, "artifacts_missing",
                                _("%(count)d listed artifacts were never uploaded.") % {"count": len(missing)},
                                extra={"missing": missing})

        status = payload["status"]
        canonical = _settle_job(job=job, attempt=attempt, status=status, error=payload.get("error"), now=now)
        # A run on a CPU or against the built-in mock stack is a rehearsal, never a GPU measurement.
        rehearsal_reasons = result_rehearsal_reasons(spec=job.spec, result_data=payload.get("result"),
                                                     attempt=attempt)
        result = Result.objects.create(
            job=job, attempt=attempt, status=status, canonical=canonical, result=payload.get("result"),
            error=payload.get("error"), started_at=payload.get("started_at"), finished_at=payload["finished_at"],
            event_count=payload["event_count"], events_received=attempt.events.count(),
            agent_version=payload.get("agent_version") or attempt.agent.version, spec=job.spec,
            spec_sha256=job.spec_sha256, acceptance_criteria=job.acceptance_criteria, recorded_at=now,
            rehearsal=bool(rehearsal_reasons), rehearsal_reasons=rehearsal_reasons,
        )
        result.artifacts.set(artifacts)
        reply = {"job_id": str(job.pk), "attempt": attempt.number, "status": status, "canonical": canonical,
                 "recorded_at": protocol.format_timestamp(now)}
        attempt.finish_idempotency_key = idempotency_key
        attempt.finish_body_sha256 = body_sha256
        attempt.finish_reply_status = 201
        attempt.finish_reply = reply
        if attempt.status in LIVE_ATTEMPT_STATUSES:
            attempt.status = status
        attempt.ended_at = attempt.ended_at or now
        attempt.save(update_fields=["finish_idempotency_key", "finish_body_sha256", "finish_reply_status",
                                    "finish_reply", "status", "ended_at"])
        ingest_result.delay_on_commit(result.pk)
    if not attempt.agent.attempts.filter(status__in=LIVE_ATTEMPT_STATUSES).exists():
        agent_touch(agent=attempt.agent, status=AgentStatus.ONLINE, now=now)
    return FinishReply(201, reply, replayed=False)


def _adopt_late_success(*, job: Job, attempt: JobAttempt, status: str, now: datetime) -> bool:
    """A success from an attempt the reaper gave up on is the job's result while nothing else is (True when adopted).

    The reaper cannot tell a dead agent from one that could not reach the server (the web tier down, a network cut):
    both fall silent. When the silent agent's success arrives after all, the work is done — the job is not left
    queued for a re-run, and a re-run already claimed is stopped (its attempt ends cancelled; its agent's next lease
    renewal answers 409 attempt_not_running and the agent abandons it). Job groups rerun as a whole instead (§8).
    """
    if status != ResultStatus.SUCCEEDED or attempt.status != AttemptStatus.AGENT_LOST or job.group_id is not None:
        return False
    if job.cancel_requested or job.status in (JobStatus.SUCCEEDED, JobStatus.CANCELLED):
        return False
    if job.results.filter(canonical=True).exists():
        return False
    newer = JobAttempt.objects.filter(job=job, number__gt=attempt.number)
    stopped = newer.filter(status__in=LIVE_ATTEMPT_STATUSES).update(status=AttemptStatus.CANCELLED, ended_at=now)
    job.status = JobStatus.SUCCEEDED
    job.failure_reason = ""
    job.finished_at = now
    job.save(update_fields=["status", "failure_reason", "finished_at"])
    logger.info("job %s: the success of attempt %s arrived after its lease was reaped; adopted (%d newer attempt(s) "
                "stopped)", job.pk, attempt.number, stopped)
    return True


def _settle_job(*, job: Job, attempt: JobAttempt, status: str, error: dict | None, now: datetime) -> bool:
    """Move the (locked) job on after its attempt finished; True when this finish is the canonical result.

    Only the job's current attempt counts, and only while no newer attempt is queued: a finish from an attempt the
    reaper already replaced is kept for the record, not canonical. A failed or handed-back attempt is retried while
    the attempt limit allows and nobody asked to cancel.
    """
    if _adopt_late_success(job=job, attempt=attempt, status=status, now=now):
        return True
    current = attempt.number == job.attempt_count
    still_open = job.status in ACTIVE_JOB_STATUSES or (
        job.status == JobStatus.FAILED and attempt.status == AttemptStatus.AGENT_LOST
    )
    if not current or not still_open or job.results.filter(canonical=True).exists():
        return False
    if job.group_id is not None and attempt.group_generation is not None:
        group_status = JobGroup.objects.filter(pk=job.group_id).values_list("status", flat=True).first()
        if group_status == JobGroupStatus.FAILED or job.is_final:
            return False  # the group already ended this job: a late finish is kept, never canonical
        if status == ResultStatus.SUCCEEDED:
            _group_settle_success(job=job, now=now)
        elif status in (ResultStatus.FAILED, ResultStatus.HANDED_BACK) and _group_rerun(
            group_id=job.group_id, now=now,
            reason=f"rank {job.group_rank} (job {job.pk}, attempt {attempt.number}) ended {status}",
        ):
            job.refresh_from_db()
            return False
        else:
            job.refresh_from_db()
            if job.is_final:  # the group failed: this finish is the job's result
                return True
    retry_allowed = job.attempt_count < job.max_attempts and not job.cancel_requested
    repeated = _repeated_failure(job=job, attempt=attempt, status=status, error=error)
    if (status in (ResultStatus.FAILED, ResultStatus.HANDED_BACK) and retry_allowed and job.status != JobStatus.FAILED
            and repeated is None):
        job.status = JobStatus.QUEUED
        job.save(update_fields=["status"])
        return False
    if repeated is not None and not job.cancel_requested:
        # Two identical consecutive failures: a third try would fail the same way, so the job stops and says why.
        job.status = JobStatus.FAILED
        job.failure_reason = (_("failed twice with the same error: %(error)s") % {"error": repeated})[:300]
    elif status == ResultStatus.SUCCEEDED:
        job.status = JobStatus.SUCCEEDED
        job.failure_reason = ""
    elif status == ResultStatus.CANCELLED or job.cancel_requested:
        job.status = JobStatus.CANCELLED
    else:
        job.status = JobStatus.FAILED
        message = (error or {}).get("message") if isinstance(error, dict) else None
        job.failure_reason = str(message or status)[:300]
    job.finished_at = now
    job.save(update_fields=["status", "failure_reason", "finished_at"])
    return True


def offline_operations_needed(*, agent: Agent, kind: str, spec: dict[str, Any]) -> list[str]:
    """The node operations an offline run of `kind` needs; ProtocolError 400 unless the agent declared the kind and
    every one of them, as a plan is refused for an agent that did not declare them (check_declared_operations)."""
    declared_kinds = list(agent.job_kinds or [])
    if kind not in declared_kinds:
        raise ProtocolError(400, "validation_error", _("This agent did not declare the job kind it ran offline."),
                            fields={"kind": [_("%(kind)s is not one of the job kinds this agent declared (%(kinds)s).")
                                             % {"kind": kind, "kinds": ", ".join(declared_kinds) or "-"}]})
    declared = list(agent.operations or [])
    try:
        needed = operations_needed(JobEntry(kind=kind, spec=spec), declared)
    except PlanError as error:
        raise ProtocolError(400, "validation_error", _("The offline run's spec is not valid."),
                            fields={"spec": [str(error)]}) from None
    missing = sorted(set(needed) - set(declared))
    if missing:
        raise ProtocolError(400, "validation_error", _("This agent did not declare every operation its run needs."),
                            fields={"spec": [_("The agent did not declare the operations %(operations)s.")
                                             % {"operations": ", ".join(missing)}]})
    return needed


def _repeated_failure(*, job: Job, attempt: JobAttempt, status: str, error: dict | None) -> str | None:
    """The error text ("Type: message") when this failed attempt failed exactly like the attempt just before it.

    The rule: two consecutive attempts of the job both ended `failed` with the same error type and the same message
    (whitespace at the ends ignored). An attempt that was handed back, lost or cancelled in between breaks the run,
    and an error with neither a type nor a message never counts as "the same".
    """
    if status != ResultStatus.FAILED or attempt.number < 2:
        return None
    text = error_text(error)
    if not text:
        return None
    previous = Result.objects.filter(job=job, attempt__number=attempt.number - 1).values_list("status", "error").first()
    if previous is None or previous[0] != ResultStatus.FAILED or error_text(previous[1]) != text:
        return None
    return text


def offline_job_create(*, agent: Agent, offline_run_id: str, kind: str, spec: dict[str, Any],
                       now: datetime | None = None) -> tuple[Claim, bool]:
    """Create (or find again) the job and attempt of a run made offline, with a fresh job token.

    The job targets only this agent and has one attempt: nobody else can re-run what happened on that node. A new
    one must be of a job kind the agent declared, needing only operations it declared (offline_operations_needed).
    """
    now = now or timezone.now()
    secret = protocol.new_token(protocol.JOB_TOKEN_PREFIX)
    lease_end = now + timedelta(seconds=protocol_settings().claim_lease_s)
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(target_agent=agent, offline_run_id=offline_run_id).first()
        created = job is None
        if created:
            required = offline_operations_needed(agent=agent, kind=kind, spec=spec)
            job = Job.objects.create(
                team_id=agent.pool.team_id, kind=kind, spec=spec, spec_sha256=protocol.canonical_sha256(spec),
                required_operations=required,
                target_pool_id=agent.pool_id, target_agent=agent, status=JobStatus.CLAIMED, attempt_count=1,
                max_attempts=1, offline_run_id=offline_run_id, created_at=now,
                candidate_id=_team_candidate_id(agent.pool.team_id, agent.candidate_id),
            )
            attempt = JobAttempt.objects.create(
                job=job, number=1, agent=agent, token_hash=protocol.token_hash(secret), claimed_at=now,
                lease_expires_at=lease_end,
            )
        else:
            attempt = JobAttempt.objects.select_for_update().get(job=job, number=1)
            attempt.token_hash = protocol.token_hash(secret)
            fields = ["token_hash"]
            if attempt.status in LIVE_ATTEMPT_STATUSES:
                attempt.lease_expires_at = max(attempt.lease_expires_at, lease_end)
                fields.append("lease_expires_at")
            attempt.save(update_fields=fields)
    return Claim(job=job, attempt=attempt, job_token=secret, lease=_lease_of(attempt)), created


# --- Celery task bodies ---------------------------------------------------------------------------------------------


#: Kind-specific ingest: job kind → dotted path of `handler(*, result, now) -> dict`, called inside result_ingest's
#: transaction (so exactly once per result); the dict it returns is merged into the result's summary.
INGEST_HANDLERS: dict[str, str] = {
    "throughput": "apps.benchmarks.throughput.ingest_throughput",
    "memory_fit": "apps.benchmarks.memory_fit.ingest_memory_fit",
    "operations": "apps.benchmarks.resilience.ingest",
    "acceptance": "apps.benchmarks.resilience.ingest",
    "checkpoint": "apps.benchmarks.resilience.ingest",
    "allreduce": "apps.benchmarks.resilience.ingest",
}


#: What follows when results of a job kind stop being canonical (a job group's abandoned generation): job kind →
#: dotted path of `handler(*, team, actor)`, called inside the transaction that changed the flag.
CANONICAL_CHANGE_HANDLERS: dict[str, str] = {
    "memory_fit": "apps.benchmarks.memory_fit.canonical_changed",
}


def result_ingest(*, result_id: int, now: datetime | None = None) -> bool:
    """Compute a result's summary (telemetry, event completeness, inventory) exactly once; False if nothing to do."""
    now = now or timezone.now()
    with transaction.atomic():
        result = Result.objects.select_for_update().select_related("job", "attempt__agent").filter(pk=result_id).first()
        if result is None or result.ingested_at is not None:
            return False
        events = JobEvent.objects.filter(attempt_id=result.attempt_id)
        telemetry = telemetry_samples(events.filter(kind="telemetry").order_by("seq").values_list("data", flat=True)
                                      .iterator())
        summary: dict[str, Any] = {
            "events_expected": result.event_count,
            "events_received": events.count(),
            "telemetry": summarise_samples(telemetry),
            "artifacts": result.artifacts.count(),
        }
        summary["events_complete"] = summary["events_received"] >= result.event_count
        if (
            result.job.kind == "inventory"
            and result.status == ResultStatus.SUCCEEDED
            and isinstance(result.result, dict)
        ):
            snapshot = record_inventory(agent=result.attempt.agent, inventory=result.result,
                                        source=InventorySource.JOB, now=now)
            summary["inventory_sha256"] = snapshot.sha256
            summary["gpu_count"] = snapshot.gpu_count
            summary["gpu_names"] = snapshot.gpu_names
        handler = INGEST_HANDLERS.get(result.job.kind)
        if handler is not None:
            summary.update(import_string(handler)(result=result, now=now))
        result.summary = summary
        result.ingested_at = now
        result.save(update_fields=["summary", "ingested_at"])
    return True


def reap_expired_leases(*, now: datetime | None = None) -> int:
    """Attempts whose lease expired become agent_lost and their job is queued again (within its attempt limit).

    Each attempt is taken with a conditional UPDATE, so a lease renewed meanwhile, or a second reaper, wins cleanly.
    """
    now = now or timezone.now()
    reaped = 0
    expired = JobAttempt.objects.filter(status__in=LIVE_ATTEMPT_STATUSES, lease_expires_at__lt=now)
    for attempt_id, job_id, agent_id in list(expired.values_list("pk", "job_id", "agent_id")[:500]):
        with transaction.atomic():
            _lock_group_of(job_id)
            if JobAttempt.objects.filter(
                pk=attempt_id, status__in=LIVE_ATTEMPT_STATUSES, lease_expires_at__lt=now
            ).update(status=AttemptStatus.AGENT_LOST, ended_at=now) != 1:
                continue
            reaped += 1
            job = Job.objects.select_for_update().get(pk=job_id)
            attempt = JobAttempt.objects.get(pk=attempt_id)
            current = attempt.number == job.attempt_count and job.status in ACTIVE_JOB_STATUSES
            if current and job.group_id:
                # The whole group runs again; when it cannot (cancelled, out of generations) this job ends below,
                # unless the group already ended it.
                rerun = _group_rerun(group_id=job.group_id, now=now,
                                     reason=f"rank {job.group_rank} (job {job.pk}, attempt {attempt.number}): "
                                            "agent lost")
                job.refresh_from_db()
                current = not rerun and not job.is_final
            if current:
                if job.cancel_requested:
                    job.status = JobStatus.CANCELLED
                    job.finished_at = now
                elif job.attempt_count < job.max_attempts:
                    job.status = JobStatus.QUEUED
                else:
                    job.status = JobStatus.FAILED
                    job.failure_reason = (
                        f"the agent was lost during each of {job.attempt_count} attempts (attempt limit reached)"
                    )
                    job.finished_at = now
                job.save(update_fields=["status", "failure_reason", "finished_at"])
            logger.info("reaped attempt %s of job %s (lease expired); job is now %s", attempt.number, job.pk,
                        job.status)
        agent_mark_lost_if_silent(agent_id=agent_id, now=now)
    agents_mark_offline(now=now)
    return reaped


@dataclass(frozen=True)
class Pending:
    plan_ids: list[int]
    result_ids: list[int]


def pending_work(*, now: datetime | None = None, older_than_s: int | None = None) -> Pending:
    """What still waits for a task whose message may have been lost: plans not dispatched, results not ingested."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.DOSSIER_REDRIVE_AFTER_S if older_than_s is None else older_than_s)
    plans = BenchmarkPlan.objects.filter(status=PlanStatus.DISPATCHING, dispatch_requested_at__lt=cutoff)
    results = Result.objects.filter(ingested_at__isnull=True, recorded_at__lt=cutoff)
    return Pending(plan_ids=list(plans.values_list("pk", flat=True)[:500]),
                   result_ids=list(results.values_list("pk", flat=True)[:500]))


def artifacts_purge_expired(*, now: datetime | None = None) -> int:
    """Delete the files of unpinned artifacts older than the retention period; the rows stay, marked purged."""
    days = settings.DOSSIER_ARTIFACT_RETENTION_DAYS
    if days <= 0:
        return 0
    now = now or timezone.now()
    cutoff = now - timedelta(days=days)
    purged = 0
    for artifact in Artifact.objects.filter(pinned=False, purged_at__isnull=True, created_at__lt=cutoff)[:1000]:
        with transaction.atomic():
            if Artifact.objects.filter(pk=artifact.pk, pinned=False, purged_at__isnull=True).update(purged_at=now) != 1:
                continue
            purged += 1
            transaction.on_commit(lambda name=artifact.storage_name: _delete_unreferenced(name))
    return purged


@transaction.atomic
def artifact_set_pinned(*, artifact: Artifact, pinned: bool, actor=None) -> Artifact:
    """Pin (never purge) or unpin an artifact; a purged artifact cannot be pinned again (its bytes are gone)."""
    if pinned and artifact.purged_at is not None:
        raise PlanError(_("This artifact was purged; it cannot be pinned."))
    before = model_snapshot(artifact, ["id", "pinned"])
    artifact.pinned = pinned
    artifact.save(update_fields=["pinned"])
    record_change(actor=actor, instance=artifact, action="update", before=before,
                  after=model_snapshot(artifact, ["id", "pinned"]), team=artifact.job.team)
    return artifact


def artifacts_pin(*, actor, team, artifact_ids) -> int:
    """Pin every one of the team's artifacts among `artifact_ids` that is still stored and not yet pinned (a decision
    record pins what its snapshot cites, so the retention purge never deletes it); returns how many were pinned."""
    pinned = 0
    for artifact in Artifact.objects.for_team(team).filter(pk__in=artifact_ids, pinned=False, purged_at__isnull=True):
        artifact_set_pinned(artifact=artifact, pinned=True, actor=actor)
        pinned += 1
    return pinned
