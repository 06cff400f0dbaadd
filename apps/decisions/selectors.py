"""Reads of decision records: the scoped querysets, the snapshot of every input a proposal freezes, the live inputs
hash that tells whether anything changed since, and the reasons an accepted record should be revisited.

The snapshot is plain data (str, int, bool, None, lists, dicts: every Decimal as its exact string) written as
canonical JSON (sorted keys, no spaces, UTF-8), so its SHA-256 is the same on every machine and every database.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db.models import Exists, F, OuterRef, Prefetch, Q, QuerySet
from django.shortcuts import get_object_or_404
from django.utils import timezone

from apps.accounts.roles import user_roles
from apps.audit.services import model_snapshot
from apps.benchmarks import selectors as benchmark_selectors
from apps.budgets import selectors as budget_selectors
from apps.budgets.spend import CommittedRecord
from apps.comparison import selectors as comparison_selectors
from apps.decisions.models import (
    ApprovalStage,
    DecisionRecord,
    Notification,
    RecordStatus,
    RevisitFlag,
    RevisitReason,
    StageKind,
    StageStatus,
)
from apps.decisions.snapshot import (
    budget_check_of,
    canonical_json,
    comparison_from_data,
    comparison_to_data,
    plain,
    sha256_of,
)
from apps.quotes import selectors as quote_selectors
from apps.quotes.freshness import FreshnessStatus
from apps.quotes.models import Candidate, CostLine, ExchangeRate, PriceVersion
from apps.workloads.models import Status as WorkloadStatus
from apps.workloads.models import WorkloadSummary
from apps.workloads.selectors import catalog_gpus

#: Bumped when the layout of the snapshot changes; a record renders with the layout it was frozen with.
SNAPSHOT_FORMAT = 1

#: The key of a candidate's figures in the frozen inputs of a record. Records frozen before the figures got their own
#: app use it, and a frozen record never changes: it keeps its first name.
FIGURES_KEY = "phase4_inputs"
#: A measured figure's reference starts with its benchmark job: "job:42", "job 42", "job-42" or "#42", alone or
#: followed by what the ingest says about it ("job:42 (measured): end-to-end p95", as apps/benchmarks writes it).
JOB_REFERENCE = re.compile(r"^\s*(?:job\s*[:#\-]?\s*|#)(\d+)(?![\d.,])", re.IGNORECASE)

#: Fields whose value changes without the input changing (timestamps written on every save).
VOLATILE_FIELDS = frozenset({"updated_at", "entered_at", "created_at"})


class SystemReader:
    """Reads a team's inputs the same way whoever looks (a reviewer, the beat task): the workload version itself
    scopes what is read, so the snapshot and its hash never depend on the viewer."""

    is_authenticated = True
    is_superuser = True
    pk = None

    def get_username(self) -> str:
        return "system"


SYSTEM_READER = SystemReader()


# ---------------------------------------------------------------------------------------------------------------
# Querysets


def records_for(user) -> QuerySet[DecisionRecord]:
    return DecisionRecord.objects.for_user(user).select_related(
        "team", "workload_summary__workload", "chosen_option__quote__vendor", "author", "supersedes", "superseded_by"
    )


def record_list(user, *, team=None) -> QuerySet[DecisionRecord]:
    """The records list with its revisit flags prefetched (a fixed number of queries)."""
    records = records_for(user).prefetch_related(
        Prefetch("revisit_flags", queryset=RevisitFlag.objects.filter(cleared_at__isnull=True), to_attr="open_flags")
    )
    return records.filter(team=team) if team is not None else records


def record_get(user, pk) -> DecisionRecord:
    return get_object_or_404(records_for(user), pk=pk)


def stages_of(record: DecisionRecord) -> list[ApprovalStage]:
    """Every stage of every round, oldest round first: the approval trail."""
    return list(record.stages.select_related("reviewer").order_by("round", "position"))


def current_stages(record: DecisionRecord) -> list[ApprovalStage]:
    return [stage for stage in stages_of(record) if stage.round == record.proposal_round]


def open_flags(record: DecisionRecord) -> list[RevisitFlag]:
    return list(record.revisit_flags.filter(cleared_at__isnull=True).order_by("reason", "subject"))


def notifications_for(user) -> QuerySet[Notification]:
    return (
        Notification.objects.for_user(user)
        .filter(recipient_id=user.pk, in_app=True)
        .select_related("record")
    )


def unread_count(user) -> int:
    if not getattr(user, "is_authenticated", False):
        return 0
    return notifications_for(user).filter(read_at__isnull=True).count()


def stages_waiting_for(user) -> QuerySet[ApprovalStage]:
    """The stages that wait for `user`'s signature now, oldest proposal first: the first pending stage of the current
    round of a proposed record of the user's teams (inputs unchanged since the proposal), of a kind the user's roles
    sign, on a record the user did not write, when the user signed no other stage of that round.

    The same rules as services.stage_refusal, in one query, so the page and the badge agree with who may sign."""
    if not getattr(user, "is_authenticated", False):
        return ApprovalStage.objects.none()
    kinds = user_roles(user) & set(StageKind.values)
    if not kinds:
        return ApprovalStage.objects.none()
    same_round = ApprovalStage.objects.filter(record=OuterRef("record"), round=OuterRef("round"))
    earlier_pending = same_round.filter(position__lt=OuterRef("position"), status=StageStatus.PENDING)
    signed_other = same_round.filter(reviewer_id=user.pk).exclude(kind=OuterRef("kind")).exclude(
        status=StageStatus.WITHDRAWN
    )
    return (
        ApprovalStage.objects.for_user(user)
        .filter(
            status=StageStatus.PENDING,
            kind__in=sorted(kinds),
            record__status=RecordStatus.PROPOSED,
            record__inputs_changed_at__isnull=True,
            round=F("record__proposal_round"),
        )
        .exclude(record__author_id=user.pk)
        .filter(~Exists(earlier_pending), ~Exists(signed_other))
        .select_related("record__team", "record__author", "record__workload_summary__workload")
        .order_by("record__proposed_at", "record__pk")
    )


def waiting_count(user) -> int:
    return stages_waiting_for(user).count()


def superseding_draft(record: DecisionRecord) -> DecisionRecord | None:
    """The open record (draft or proposed) that would supersede this one, if someone started it."""
    return (
        DecisionRecord.objects.filter(supersedes=record, status__in=[RecordStatus.DRAFT, RecordStatus.PROPOSED])
        .order_by("-pk")
        .first()
    )


def selectable_summaries(user, team) -> QuerySet[WorkloadSummary]:
    """The ready workload versions a record may decide on."""
    return (
        WorkloadSummary.objects.for_user(user)
        .filter(team=team, status=WorkloadStatus.READY)
        .select_related("workload")
        .order_by("name", "-version")
    )


def options_of(summary: WorkloadSummary) -> QuerySet[Candidate]:
    """The considered options of a record: every candidate of its workload version."""
    return Candidate.objects.filter(workload_summary=summary).select_related("quote__vendor").order_by("label", "pk")


# ---------------------------------------------------------------------------------------------------------------
# Plain data


def _stable(instance, exclude: frozenset[str] = VOLATILE_FIELDS) -> dict:
    return {key: value for key, value in model_snapshot(instance).items() if key not in exclude}


# ---------------------------------------------------------------------------------------------------------------
# The comparison as data


def _person(user) -> dict | None:
    if user is None:
        return None
    return {"id": user.pk, "username": user.get_username(), "name": user.get_full_name() or user.get_username()}


# ---------------------------------------------------------------------------------------------------------------
# The inputs: everything the comparison reads, as it is now


def _cited_prices(candidate: Candidate) -> list[dict]:
    """The current version of each priced item of the candidate's quote: the prices the comparison uses."""
    prices = quote_selectors.current_prices(candidate.quote)
    return [
        {
            "id": version.pk,
            "quote_id": version.quote_id,
            "component": version.component,
            "number": version.number,
            "amount": version.amount,
            "currency": version.currency,
            "source_kind": version.source_kind,
            "source_reference": version.source_reference,
            "document_id": version.document_id,
            "observed_at": version.observed_at,
            "valid_until": version.valid_until,
        }
        for _component, version in sorted(prices.items())
    ]


def _cost_lines(candidate: Candidate) -> list[dict]:
    lines = CostLine.objects.current().filter(Q(candidate__isnull=True) | Q(candidate=candidate), quote=candidate.quote)
    return [_stable(line) for line in lines.order_by("pk")]


def job_ids_cited(inputs: Mapping[str, Any]) -> list[int]:
    """The benchmark jobs that measured figures of the comparison name."""
    ids = set()
    for candidate in inputs.get("candidates", []):
        for item in candidate.get(FIGURES_KEY, []):
            if item.get("source") == "measured":
                found = JOB_REFERENCE.match(item.get("reference") or "")
                if found:
                    ids.add(int(found.group(1)))
    return sorted(ids)


def _catalog_memory(candidates: list[Candidate]) -> list[dict]:

    gpu_ids = sorted({candidate.quote.gpu_id for candidate in candidates if candidate.quote.gpu_id})
    if not gpu_ids:
        return []
    return [
        {
            "gpu_id": item.gpu.pk,
            "name": item.gpu.display_name,
            "usable_bytes": item.usable_memory.bytes,
            "basis": str(item.usable_memory.basis),
            "source": item.usable_memory.source,
        }
        for item in catalog_gpus(gpu_ids)
    ]


ACCEPTANCE_FIELDS = (
    "unit_of_success",
    "quality_acceptance_rate",
    "quality_acceptance_source",
    "latency_class",
    "p95_ttft_ms",
    "p99_ttft_ms",
    "p95_tpot_ms",
    "p99_tpot_ms",
    "p95_e2e_ms",
    "p99_e2e_ms",
    "target_eval_metric",
    "target_eval_score",
)


def collect_inputs(summary: WorkloadSummary, comparison: comparison_selectors.Comparison) -> dict:
    """Every input of the comparison of `summary`, as plain data: the workload version, each candidate with its quote,
    the current price versions, cost lines and phase-4 inputs, the exchange rates used, the catalog memory figures,
    the cited benchmark results and the acceptance criteria."""
    candidates = [result.candidate for result in comparison.results]
    entries = []
    for candidate in sorted(candidates, key=lambda candidate: candidate.pk):
        entries.append(
            {
                "candidate": _stable(candidate),
                "quote": _stable(candidate.quote),
                "vendor": {"id": candidate.quote.vendor_id, "name": candidate.quote.vendor.name},
                "prices": _cited_prices(candidate),
                "cost_lines": _cost_lines(candidate),
                FIGURES_KEY: [
                    _stable(item)
                    for item in sorted(candidate.figures.all(), key=lambda item: (item.metric, item.pk))
                ],
            }
        )
    rate_ids = []
    for rate in comparison.exchange_rates:
        reference = rate.provenance.reference
        if reference.startswith("exchange-rate:"):
            rate_ids.append(int(reference.split(":", 1)[1]))

    rates = [_stable(rate) for rate in ExchangeRate.objects.filter(pk__in=rate_ids).order_by("pk")]
    inputs = {
        "team": {"id": summary.team_id, "reporting_currency": summary.team.reporting_currency},
        "workload": _stable(summary),
        # A newer version of the workload (even a draft) is a change of input for a record still being signed.
        "workload_latest_version": summary.workload.versions.order_by("-version").values_list("version", flat=True)[0],
        "candidates": entries,
        "exchange_rates": rates,
        "catalog_memory": _catalog_memory(candidates),
        "acceptance_criteria": {name: getattr(summary, name) for name in ACCEPTANCE_FIELDS},
    }
    inputs["benchmark_results"] = benchmark_selectors.cited_job_results(summary.team, job_ids_cited(inputs))
    return plain(inputs)


def live_comparison(record: DecisionRecord) -> comparison_selectors.Comparison:
    return comparison_selectors.comparison_for(
        SYSTEM_READER, record.workload_summary, chosen_id=record.chosen_option_id
    )


def live_inputs(record: DecisionRecord) -> tuple[dict, comparison_selectors.Comparison]:
    comparison = live_comparison(record)
    return collect_inputs(record.workload_summary, comparison), comparison


def live_inputs_sha256(record: DecisionRecord) -> str:
    inputs, _comparison = live_inputs(record)
    return sha256_of(canonical_json(inputs))


# ---------------------------------------------------------------------------------------------------------------
# The snapshot


def record_content(record: DecisionRecord) -> dict:
    """The decision itself (MADR fields) as the proposal states it."""
    chosen = record.chosen_option
    return plain(
        {
            "id": record.pk,
            "reference": record.reference,
            "team": {"id": record.team_id, "name": record.team.name},
            "title": record.title,
            "context": record.context,
            "drivers": record.drivers,
            "workload_summary": {
                "id": record.workload_summary_id,
                "name": record.workload_summary.name,
                "version": record.workload_summary.version,
            },
            "options": [
                {"id": candidate.pk, "label": candidate.label, "kind": str(candidate.kind)}
                for candidate in options_of(record.workload_summary)
            ],
            "chosen_option": {"id": chosen.pk, "label": chosen.label, "kind": str(chosen.kind)} if chosen else None,
            "capacity_model": record.capacity_model,
            "rationale": record.rationale,
            "consequences": record.consequences,
            "confirmation_metric": record.confirmation_metric,
            "revisit_on": record.revisit_on,
            "revisit_triggers": record.revisit_triggers,
            "author": _person(record.author),
            "deciders": [_person(user) for user in record.deciders.order_by("username")],
            "consulted": [_person(user) for user in record.consulted.order_by("username")],
            "informed": [_person(user) for user in record.informed.order_by("username")],
            "supersedes": (
                {"id": record.supersedes_id, "reference": record.supersedes.reference} if record.supersedes_id else None
            ),
            "cost_centre": (
                {"id": record.cost_centre_id, "code": record.cost_centre.code, "name": record.cost_centre.name}
                if record.cost_centre_id else None
            ),
            "tags": list(record.tags or []),
        }
    )


@dataclass(frozen=True)
class FrozenSnapshot:
    data: dict
    text: str
    sha256: str
    inputs_sha256: str
    artifact_ids: tuple[int, ...]
    budget_check: budget_selectors.RecordCheck | None = None


def budget_check(record: DecisionRecord, comparison: comparison_selectors.Comparison, *, now: datetime.datetime):
    """The budget check of the record on its cost centre (None without one): its chosen option's monthly total and
    commitment against the budget in force, counting the team's accepted records on the same cost centre except the
    record itself and the one it supersedes (accepting this one replaces it)."""
    if record.cost_centre_id is None:
        return None
    return budget_selectors.record_check(
        team=record.team,
        cost_centre=record.cost_centre,
        figures=budget_selectors.record_spend(comparison),
        on=timezone.localdate(now),
        exclude_record_ids=[pk for pk in (record.pk, record.supersedes_id) if pk is not None],
    )


def build_snapshot(record: DecisionRecord, *, actor, now: datetime.datetime, proposal_round: int) -> FrozenSnapshot:
    """Freeze the record, every input and the comparison computed from them (with the record's choice passed to the
    six-mistakes check) into canonical JSON, with the budget check when the record names a cost centre."""
    inputs, comparison = live_inputs(record)
    checked = budget_check(record, comparison, now=now)
    inputs_sha256 = sha256_of(canonical_json(inputs))
    artifacts = [
        artifact
        for entry in inputs["benchmark_results"]
        if entry["result"] is not None
        for artifact in entry["result"]["artifacts"]
    ]
    data = {
        "format": SNAPSHOT_FORMAT,
        "frozen_at": plain(now),
        "frozen_by": _person(actor) if getattr(actor, "is_authenticated", False) else None,
        "proposal_round": proposal_round,
        "record": record_content(record),
        "inputs": inputs,
        "inputs_sha256": inputs_sha256,
        "comparison": comparison_to_data(comparison),
        "cited_artifacts": artifacts,
    }
    if checked is not None:
        data["budget_check"] = checked.data()
    text = canonical_json(data)
    return FrozenSnapshot(
        data=data,
        text=text,
        sha256=sha256_of(text),
        inputs_sha256=inputs_sha256,
        artifact_ids=tuple(sorted({artifact["id"] for artifact in artifacts})),
        budget_check=checked,
    )


def draft_view_data(record: DecisionRecord) -> dict:
    """What a draft shows: the same layout as a snapshot, computed from the live inputs (nothing is frozen yet)."""
    inputs, comparison = live_inputs(record)
    return {
        "format": SNAPSHOT_FORMAT,
        "frozen_at": None,
        "record": record_content(record),
        "inputs": inputs,
        "inputs_sha256": sha256_of(canonical_json(inputs)),
        "comparison": comparison_to_data(comparison),
        "cited_artifacts": [],
    }


def view_data(record: DecisionRecord) -> dict:
    """The data a record page, print view and export show: the frozen snapshot, or the live inputs of a draft."""
    return record.snapshot if record.is_frozen else draft_view_data(record)


def view_comparison(record: DecisionRecord) -> comparison_selectors.Comparison:
    """The comparison a record shows: rebuilt from its snapshot once proposed (no input is read again), computed
    from the live inputs while a draft."""
    if record.is_frozen:
        return comparison_from_data(record.snapshot["comparison"])
    return live_comparison(record)


def team_name_shown(record: DecisionRecord, stages: list[ApprovalStage] | None = None) -> str:
    """The team's name as the record shows it: as it was at the last signature of the current proposal, else as the
    proposal froze it, else (a draft) as it is now. Renaming the team later leaves a signed record unchanged."""
    stages = stages if stages is not None else stages_of(record)
    signed = [
        stage for stage in stages
        if stage.round == record.proposal_round and stage.decided_at is not None and stage.team_name
    ]
    if signed:
        return max(signed, key=lambda stage: (stage.decided_at, stage.position)).team_name
    if record.is_frozen:
        frozen = (record.snapshot.get("record") or {}).get("team") or {}
        if frozen.get("name"):
            return frozen["name"]
    return record.team.name


@dataclass(frozen=True)
class CitedJob:
    """A benchmark job whose results the record's comparison used, as the snapshot froze it."""

    job_id: int
    kind: str
    status: str
    result_status: str
    artifacts: tuple[dict, ...]
    frozen: bool  # False: a figure names the job but the snapshot holds no result of it (no artifact was pinned)


def cited_jobs(data: Mapping[str, Any]) -> list[CitedJob]:
    """Every benchmark job the comparison's measured figures name, with the result and artifacts the snapshot holds
    for it. A job the snapshot holds no result of (unknown to the team when frozen, or a record frozen before every
    job reference was read) is listed as such: nothing of the frozen record changes."""
    inputs = data.get("inputs") or {}
    frozen = {entry["job_id"]: entry for entry in inputs.get("benchmark_results", [])}
    jobs = []
    for job_id in sorted(set(frozen) | set(job_ids_cited(inputs))):
        entry = frozen.get(job_id)
        result = (entry or {}).get("result") or {}
        jobs.append(
            CitedJob(
                job_id=job_id,
                kind=(entry or {}).get("kind", ""),
                status=(entry or {}).get("status", ""),
                result_status=result.get("status", ""),
                artifacts=tuple(result.get("artifacts", [])),
                frozen=entry is not None,
            )
        )
    return jobs


# ---------------------------------------------------------------------------------------------------------------
# Revisit


@dataclass(frozen=True)
class RevisitFinding:
    reason: str
    subject: str
    details: dict


def _percent_change(old: Decimal, new: Decimal) -> Decimal | None:
    if old == 0:
        return None
    return (new - old) / abs(old) * 100


def cited_prices(record: DecisionRecord) -> list[dict]:
    """The price versions a frozen record cites (as its snapshot froze them); none for a draft."""
    inputs = (record.snapshot or {}).get("inputs", {})
    return [price for entry in inputs.get("candidates", []) for price in entry.get("prices", [])]


def cites_price_item(record: DecisionRecord, *, quote_id: int, component: str) -> bool:
    """The record cites a version of this priced item (of this quote)."""
    return any(price["quote_id"] == quote_id and price["component"] == component for price in cited_prices(record))


def records_citing_price_item(*, team_id: int, quote_id: int, component: str) -> list[DecisionRecord]:
    """The team's accepted records whose snapshot cites a version of this priced item. The canonical JSON of a
    snapshot holds `"quote_id":N` for each cited price: a cheap filter in the database, checked exactly here."""
    found = (
        DecisionRecord.objects.accepted()
        .filter(team_id=team_id, snapshot_json__contains=f'"quote_id":{int(quote_id)}')
        .select_related("team", "workload_summary")
        .order_by("pk")
    )
    return [record for record in found if cites_price_item(record, quote_id=quote_id, component=component)]


def revisit_findings(record: DecisionRecord, *, now: datetime.datetime | None = None) -> list[RevisitFinding]:
    """Why an accepted record should be looked at again, now: expired cited quotes, cited prices with a newer version
    that moved by more than the team's percentage, cited prices still current but stale by age (the quotes app's
    freshness rule and the team's stale age), a newer workload version, the revisit date."""
    moment = now or timezone.now()
    today = timezone.localdate(moment)
    threshold = record.team.revisit_price_change_percent
    findings: list[RevisitFinding] = []

    cited = cited_prices(record)
    latest: dict[tuple[int, str], PriceVersion] = {}
    quote_ids = {price["quote_id"] for price in cited}
    for version in PriceVersion.objects.filter(quote_id__in=quote_ids).order_by("quote_id", "component", "number"):
        latest[(version.quote_id, version.component)] = version
    for price in cited:
        valid_until = price.get("valid_until")
        if valid_until and today > datetime.date.fromisoformat(valid_until):
            findings.append(
                RevisitFinding(
                    RevisitReason.QUOTE_EXPIRED,
                    f"price:{price['id']}",
                    {"price_id": price["id"], "quote_id": price["quote_id"], "component": price["component"],
                     "valid_until": valid_until, "status": FreshnessStatus.EXPIRED.value},
                )
            )
        newest = latest.get((price["quote_id"], price["component"]))
        if newest is not None and newest.pk == price["id"]:
            # Still the current price: it may have gone stale by age (expired is the flag above).
            freshness = quote_selectors.freshness_of(
                newest, stale_after_days=record.team.stale_price_age_days, now=moment
            )
            if freshness.status is FreshnessStatus.STALE:
                findings.append(
                    RevisitFinding(
                        RevisitReason.PRICE_STALE,
                        f"price:{price['id']}",
                        plain(
                            {
                                "price_id": price["id"],
                                "quote_id": price["quote_id"],
                                "component": price["component"],
                                "number": price["number"],
                                "observed_at": newest.observed_at,
                                "stale_at": freshness.stale_at,
                                "stale_after_days": record.team.stale_price_age_days,
                                "status": FreshnessStatus.STALE.value,
                            }
                        ),
                    )
                )
        if newest is None or newest.number <= price["number"]:
            continue
        old_amount = Decimal(price["amount"])
        change = _percent_change(old_amount, newest.amount) if newest.currency == price["currency"] else None
        if change is not None and abs(change) <= threshold:
            continue
        findings.append(
            RevisitFinding(
                RevisitReason.PRICE_CHANGED,
                f"price:{price['id']}",
                plain(
                    {
                        "price_id": price["id"],
                        "quote_id": price["quote_id"],
                        "component": price["component"],
                        "cited_number": price["number"],
                        "cited_amount": old_amount,
                        "cited_currency": price["currency"],
                        "new_id": newest.pk,
                        "new_number": newest.number,
                        "new_amount": newest.amount,
                        "new_currency": newest.currency,
                        "change_percent": change.quantize(Decimal("0.01")) if change is not None else None,
                        "threshold_percent": threshold,
                    }
                ),
            )
        )

    newer = record.workload_summary.newer_versions().order_by("-version").first()
    if newer is not None:
        findings.append(
            RevisitFinding(
                RevisitReason.WORKLOAD_CHANGED,
                f"workload:{newer.pk}",
                {"cited_version": record.workload_summary.version, "new_version": newer.version,
                 "new_id": newer.pk, "new_status": newer.status},
            )
        )
    if record.revisit_on is not None and today >= record.revisit_on:
        findings.append(
            RevisitFinding(RevisitReason.REVISIT_DATE, "date", {"revisit_on": record.revisit_on.isoformat()})
        )
    return findings


# ---------------------------------------------------------------------------------------------------------------
# Committed spend for the budgets (registered in DecisionsConfig.ready: apps/budgets/spend.py)


def committed_records(*, team_ids, cost_centre_ids=None, exclude_record_ids=()) -> list[CommittedRecord]:
    """The accepted records of these teams booked on a cost centre, each with the monthly total and commitment its
    snapshot froze: from its budget check, or, for a snapshot without one, from its frozen comparison."""
    records = DecisionRecord.objects.accepted().filter(team_id__in=list(team_ids), cost_centre__isnull=False)
    if cost_centre_ids is not None:
        records = records.filter(cost_centre_id__in=list(cost_centre_ids))
    found = []
    for record in records.exclude(pk__in=list(exclude_record_ids)).order_by("pk"):
        data = record.snapshot or {}
        frozen = budget_check_of(data)
        if frozen is not None:
            figures = frozen["context"]["record"]
            monthly = Decimal(figures["monthly_total"]) if figures["monthly_total"] is not None else None
            months = Decimal(figures["commitment_months"]) if figures["commitment_months"] is not None else None
            currency = figures["currency"]
        else:
            spent = budget_selectors.record_spend(comparison_from_data(data["comparison"]))
            monthly, months, currency = spent.monthly_total, spent.commitment_months, spent.currency
        found.append(
            CommittedRecord(
                team_id=record.team_id,
                cost_centre_id=record.cost_centre_id,
                record_id=record.pk,
                reference=record.reference,
                title=record.title,
                url=record.get_absolute_url(),
                monthly_total=monthly,
                currency=currency,
                commitment_months=months,
                accepted_at=record.decided_at,
                tags=tuple(record.tags or ()),
            )
        )
    return found
