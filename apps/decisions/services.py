"""Writes of decision records: draft, propose (freeze the snapshot), the three sign-off stages, accept or reject,
supersede, and the revisit flags. Every state change is a conditional UPDATE on the status it expects, and every
step is written to the audit log with who took it.

Rules (docs/permissions.md):
- platform and admin members draft, edit and propose; nothing but a draft can be edited;
- the stages are signed in order (platform review, finance, product) by a member holding that role who is not the
  author and has signed no other stage of the same proposal;
- a change to any input after the proposal withdraws the approvals given: the record must be proposed again;
- an accepted record never changes; the record it supersedes flips to superseded only then.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from apps.accounts.models import Team
from apps.accounts.roles import Role, has_role
from apps.audit.models import ObjectChange
from apps.audit.services import model_snapshot, record_change
from apps.benchmarks import services as benchmark_services
from apps.budgets import selectors as budget_selectors
from apps.budgets.tags import MAX_TAGS, TagError, parse_tags
from apps.common.errors import Conflict
from apps.decisions import notifications, selectors
from apps.decisions.models import (
    EXTERNAL_REASONS,
    STAGE_ORDER,
    ApprovalStage,
    DecisionRecord,
    RecordStatus,
    RevisitFlag,
    RevisitReason,
    StageKind,
    StageStatus,
)
from apps.quotes.models import Candidate
from apps.workloads.models import Status as WorkloadStatus

Action = ObjectChange.Action

#: The fields of a record a person writes (MADR); the people fields are lists of users.
CONTENT_FIELDS = (
    "title",
    "context",
    "drivers",
    "chosen_option",
    "capacity_model",
    "rationale",
    "consequences",
    "confirmation_metric",
    "revisit_on",
    "revisit_triggers",
)
PEOPLE_FIELDS = ("deciders", "consulted", "informed")
#: What a proposal needs besides a title.
REQUIRED_TO_PROPOSE = ("chosen_option", "capacity_model", "rationale")


class RecordConflict(Conflict):
    """The record is not in a state that allows this step (answered 409 by the API)."""


class InputsChanged(RecordConflict):
    """An input changed after the proposal: the approvals were withdrawn, the record must be proposed again."""


# ---------------------------------------------------------------------------------------------------------------
# Who may do what


def may_author(user) -> bool:
    """Draft, edit, propose, withdraw and start a superseding draft: the platform and admin roles."""
    return has_role(user, Role.PLATFORM, Role.ADMIN)


def _require_author_role(actor) -> None:
    if not may_author(actor):
        raise PermissionDenied(_("Only the platform and admin roles may draft or propose decision records."))


def stage_refusal(user, record: DecisionRecord, kind: str) -> str | None:
    """Why `user` may not sign the `kind` stage of this record (None: they may, when it is that stage's turn)."""
    if not has_role(user, kind):
        return _("The stage %(stage)s is signed by a member holding the role %(role)s.") % {
            "stage": StageKind(kind).label,
            "role": Role(kind).label,
        }
    if user.pk == record.author_id:
        return _("The author of a record signs none of its stages.")
    signed_other = (
        ApprovalStage.objects.filter(record=record, round=record.proposal_round, reviewer_id=user.pk)
        .exclude(kind=kind)
        .exclude(status=StageStatus.WITHDRAWN)
        .exists()
    )
    if signed_other:
        return _("You signed another stage of this proposal: each stage needs a different person.")
    return None


def check_may_sign(user, record: DecisionRecord, kind: str) -> None:
    if kind not in StageKind.values:
        raise PermissionDenied(_("Unknown stage."))
    refusal = stage_refusal(user, record, kind)
    if refusal:
        raise PermissionDenied(refusal)


def current_stage(record: DecisionRecord) -> ApprovalStage | None:
    """The first stage of the current round still waiting (None when none waits)."""
    return (
        ApprovalStage.objects.filter(record=record, round=record.proposal_round, status=StageStatus.PENDING)
        .order_by("position")
        .first()
    )


# ---------------------------------------------------------------------------------------------------------------
# Drafts


def _locked(record: DecisionRecord) -> DecisionRecord:
    return DecisionRecord.objects.select_for_update().select_related("team", "workload_summary").get(pk=record.pk)


def _people_snapshot(record: DecisionRecord) -> dict:
    return {name: sorted(getattr(record, name).values_list("pk", flat=True)) for name in PEOPLE_FIELDS}


def _content_snapshot(record: DecisionRecord) -> dict:
    data = model_snapshot(record, [*CONTENT_FIELDS, "status", "workload_summary"])
    data.update(_people_snapshot(record))
    return data


def _check_people(team: Team, people: dict) -> None:
    for name, users in people.items():
        outsiders = [user for user in users if not user.memberships.filter(team=team).exists()]
        if outsiders:
            raise ValidationError({name: _("Only members of the team can be named here.")})


def _check_choice(record: DecisionRecord) -> None:
    chosen = record.chosen_option
    if chosen is not None and chosen.workload_summary_id != record.workload_summary_id:
        raise ValidationError(
            {"chosen_option": _("The chosen option must be a candidate of the record's workload version.")}
        )


def _check_summary(team: Team, summary) -> None:
    if summary.team_id != team.pk:
        raise ValidationError({"workload_summary": _("This workload belongs to another team.")})
    if summary.status != WorkloadStatus.READY:
        raise ValidationError({"workload_summary": _("A decision is made on a ready workload version, not a draft.")})


def _next_number(team: Team) -> int:
    Team.objects.select_for_update().filter(pk=team.pk).first()  # two drafts at once get different numbers
    last = DecisionRecord.objects.filter(team=team).order_by("-number").values_list("number", flat=True).first()
    return (last or 0) + 1


def _split(values: dict) -> tuple[dict, dict]:
    unknown = set(values) - set(CONTENT_FIELDS) - set(PEOPLE_FIELDS)
    if unknown:
        raise TypeError(f"not decision record fields: {sorted(unknown)}")
    content = {name: value for name, value in values.items() if name in CONTENT_FIELDS}
    people = {name: list(value or []) for name, value in values.items() if name in PEOPLE_FIELDS}
    return content, people


@transaction.atomic
def record_create(*, actor, team: Team, workload_summary, title: str, supersedes=None, **values) -> DecisionRecord:
    """Start a draft decision on a ready workload version of `team`."""
    _require_author_role(actor)
    _check_summary(team, workload_summary)
    content, people = _split(values)
    _check_people(team, people)
    record = DecisionRecord(
        team=team,
        number=_next_number(team),
        workload_summary=workload_summary,
        title=(title or "").strip(),
        author=actor,
        supersedes=supersedes,
        **content,
    )
    record.full_clean()
    _check_choice(record)
    record.save()
    for name, users in people.items():
        getattr(record, name).set(users)
    record_change(
        actor=actor,
        instance=record,
        action=Action.CREATE,
        after=_content_snapshot(record),
        message=_("Draft started.") if supersedes is None else _("Superseding draft of %(old)s started.")
        % {"old": supersedes.reference},
    )
    return record


@transaction.atomic
def record_update(*, actor, record: DecisionRecord, **values) -> DecisionRecord:
    """Change a draft. Anything but a draft is refused: a proposal is withdrawn first, an accepted record never
    changes."""
    _require_author_role(actor)
    content, people = _split(values)
    current = _locked(record)
    if current.status != RecordStatus.DRAFT:
        raise RecordConflict(
            _("Only a draft can be edited; this record is %(status)s.") % {"status": current.get_status_display()}
        )
    _check_people(current.team, people)
    before = _content_snapshot(current)
    for name, value in content.items():
        setattr(current, name, value.strip() if isinstance(value, str) and name == "title" else value)
    current.full_clean()
    _check_choice(current)
    columns = {DecisionRecord._meta.get_field(name).attname for name in content}
    updated = DecisionRecord.objects.filter(pk=current.pk, status=RecordStatus.DRAFT).update(
        **{column: getattr(current, column) for column in columns}, updated_at=timezone.now()
    )
    if updated != 1:
        raise RecordConflict(_("The record changed state while you edited it."))
    for name, users in people.items():
        getattr(current, name).set(users)
    after = _content_snapshot(current)
    if before != after:
        record_change(actor=actor, instance=current, action=Action.UPDATE, before=before, after=after)
    return current


# ---------------------------------------------------------------------------------------------------------------
# Proposal


def _missing_for_proposal(record: DecisionRecord) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for name in REQUIRED_TO_PROPOSE:
        if not getattr(record, name if name != "chosen_option" else "chosen_option_id"):
            errors.setdefault(name, []).append(_("A proposal needs this."))
    return errors


def _reviewers_of(record: DecisionRecord, kind: str) -> list:
    signed = set(
        ApprovalStage.objects.filter(record=record, round=record.proposal_round, reviewer__isnull=False)
        .exclude(status=StageStatus.WITHDRAWN)
        .values_list("reviewer_id", flat=True)
    )
    return [
        user
        for user in notifications.team_members_with_role(record.team, kind)
        if user.pk != record.author_id and user.pk not in signed
    ]


def _pin_artifacts(*, actor, team: Team, artifact_ids: tuple[int, ...]) -> int:
    """Pin every benchmark artifact the snapshot cites, so the retention purge never deletes it."""
    return benchmark_services.artifacts_pin(actor=actor, team=team, artifact_ids=artifact_ids)


def _withdraw_round(record: DecisionRecord, proposal_round: int, now: datetime.datetime) -> list[ApprovalStage]:
    """Withdraw the waiting and approved stages of a round; returns the approved ones (their reviewers are told)."""
    stages = list(
        ApprovalStage.objects.select_related("reviewer").filter(
            record=record, round=proposal_round, status__in=[StageStatus.PENDING, StageStatus.APPROVED]
        )
    )
    approved = [stage for stage in stages if stage.status == StageStatus.APPROVED]
    ApprovalStage.objects.filter(pk__in=[stage.pk for stage in stages]).update(
        status=StageStatus.WITHDRAWN, withdrawn_at=now
    )
    return approved


class BudgetBlocked(ValidationError):
    """The team's blocking policy refuses the proposal: the record is over its cost centre's budget (answered 400,
    with the budget and the figures). `check` is the budget check (apps/budgets/selectors.RecordCheck)."""

    def __init__(self, message: str, check):
        super().__init__({"cost_centre": [message]})
        self.check = check


#: What `record_propose` leaves as it is when the caller does not pass it.
UNCHANGED = object()


def _set_budget_fields(record: DecisionRecord, cost_centre, tags) -> None:
    """The cost centre and tags chosen at the proposal (UNCHANGED keeps the record's), validated."""
    if cost_centre is not UNCHANGED:
        if cost_centre is not None and cost_centre.team_id != record.team_id:
            raise ValidationError({"cost_centre": _("This cost centre belongs to another team.")})
        record.cost_centre = cost_centre
    if tags is not UNCHANGED:
        try:
            record.tags = parse_tags(tags)
        except TagError as error:
            raise ValidationError(
                {"tags": _("Tags are short slugs (letters, digits, hyphens), at most %(count)s: %(tag)s is not one.")
                 % {"count": MAX_TAGS, "tag": str(error)}}
            ) from None
    if record.cost_centre_id is None and budget_selectors.cost_centre_required(record.team):
        raise ValidationError({"cost_centre": _("Choose the cost centre whose budget this record spends.")})


@transaction.atomic
def record_propose(*, actor, record: DecisionRecord, cost_centre=UNCHANGED, tags=UNCHANGED) -> DecisionRecord:
    """Freeze the snapshot and open the three stages. A proposed record may be proposed again (after its inputs
    changed): the fresh snapshot replaces the old one and every stage starts over.

    The cost centre and tags are chosen here. With a cost centre, its budget is checked and the check frozen into
    the snapshot: over the budget under the team's blocking policy refuses the proposal (`BudgetBlocked`); under a
    warning policy the record is proposed and the check's message says why it warns."""
    _require_author_role(actor)
    current = _locked(record)
    if current.status not in (RecordStatus.DRAFT, RecordStatus.PROPOSED):
        raise RecordConflict(
            _("Only a draft or a proposed record can be proposed; this record is %(status)s.")
            % {"status": current.get_status_display()}
        )
    missing = _missing_for_proposal(current)
    if missing:
        raise ValidationError(missing)
    _check_choice(current)
    before_budget = {"cost_centre": current.cost_centre_id, "tags": list(current.tags or [])}
    _set_budget_fields(current, cost_centre, tags)
    now = timezone.now()
    new_round = current.proposal_round + 1
    frozen = selectors.build_snapshot(current, actor=actor, now=now, proposal_round=new_round)
    if frozen.budget_check is not None and frozen.budget_check.result.blocks:
        checked = frozen.budget_check
        raise BudgetBlocked(
            _("Refused by the team's budget policy. %(check)s")
            % {"check": budget_selectors.message(checked.result, checked.context)},
            checked,
        )
    before = {"status": current.status, "snapshot_sha256": current.snapshot_sha256, "round": current.proposal_round,
              **before_budget}
    updated = DecisionRecord.objects.filter(
        pk=current.pk, status=current.status, proposal_round=current.proposal_round
    ).update(
        cost_centre=current.cost_centre,
        tags=current.tags,
        status=RecordStatus.PROPOSED,
        proposal_round=new_round,
        snapshot_json=frozen.text,
        snapshot_sha256=frozen.sha256,
        inputs_sha256=frozen.inputs_sha256,
        proposed_at=now,
        inputs_changed_at=None,
        updated_at=now,
    )
    if updated != 1:
        raise RecordConflict(_("The record changed state while you proposed it."))
    _withdraw_round(current, current.proposal_round, now)
    ApprovalStage.objects.bulk_create(
        [
            ApprovalStage(record=current, round=new_round, kind=kind, position=position)
            for position, kind in enumerate(STAGE_ORDER, start=1)
        ]
    )
    pinned = _pin_artifacts(actor=actor, team=current.team, artifact_ids=frozen.artifact_ids)
    current.refresh_from_db()
    record_change(
        actor=actor,
        instance=current,
        action=Action.TRANSITION,
        before=before,
        after={"status": current.status, "snapshot_sha256": current.snapshot_sha256, "round": new_round,
               "cost_centre": current.cost_centre_id, "tags": list(current.tags or []),
               "budget_check": frozen.data["budget_check"]["result"]["outcome"] if frozen.budget_check else None},
        message=_("Proposed: snapshot %(hash)s frozen, %(pinned)s artifact(s) pinned; waiting for %(stage)s.")
        % {"hash": current.snapshot_sha256[:12], "pinned": pinned, "stage": StageKind.PLATFORM.label},
    )
    notifications.notify(
        record=current,
        recipients=_reviewers_of(current, StageKind.PLATFORM),
        event="stage_requested",
        params={"stage": StageKind.PLATFORM.value},
        exclude=[actor],
    )
    return current


@transaction.atomic
def record_withdraw(*, actor, record: DecisionRecord) -> DecisionRecord:
    """Take a proposal back to a draft (to change its content): its snapshot goes, every stage is withdrawn."""
    _require_author_role(actor)
    current = _locked(record)
    now = timezone.now()
    updated = DecisionRecord.objects.filter(pk=current.pk, status=RecordStatus.PROPOSED).update(
        status=RecordStatus.DRAFT, snapshot_json="", snapshot_sha256="", inputs_sha256="", updated_at=now
    )
    if updated != 1:
        raise RecordConflict(
            _("Only a proposed record can be withdrawn; this record is %(status)s.")
            % {"status": current.get_status_display()}
        )
    _withdraw_round(current, current.proposal_round, now)
    record_change(
        actor=actor,
        instance=current,
        action=Action.TRANSITION,
        before={"status": RecordStatus.PROPOSED.value, "snapshot_sha256": current.snapshot_sha256},
        after={"status": RecordStatus.DRAFT.value, "snapshot_sha256": ""},
        message=_("Proposal withdrawn: back to a draft."),
    )
    current.refresh_from_db()
    return current


# ---------------------------------------------------------------------------------------------------------------
# Inputs changed after the proposal


def _withdraw_for_changed_inputs(actor, record: DecisionRecord, live_sha256: str) -> bool:
    """Withdraw the approvals of a proposed record whose live inputs no longer hash to the frozen ones (once)."""
    now = timezone.now()
    updated = DecisionRecord.objects.filter(
        pk=record.pk, status=RecordStatus.PROPOSED, proposal_round=record.proposal_round, inputs_changed_at=None
    ).update(inputs_changed_at=now)
    if updated != 1:
        return False
    approved = _withdraw_round(record, record.proposal_round, now)
    record_change(
        actor=actor,
        instance=record,
        action=Action.TRANSITION,
        before={"inputs_sha256": record.inputs_sha256, "approved_stages": [stage.kind for stage in approved]},
        after={"inputs_sha256": live_sha256, "approved_stages": []},
        message=_("An input changed after the proposal: %(count)s approval(s) withdrawn; it must be proposed again.")
        % {"count": len(approved)},
    )
    notifications.notify(
        record=record,
        recipients=[record.author, *[stage.reviewer for stage in approved]],
        event="approvals_withdrawn",
    )
    return True


def inputs_changed(record: DecisionRecord) -> bool:
    """True when the live inputs of a proposed record no longer hash to what its snapshot froze."""
    return record.status == RecordStatus.PROPOSED and selectors.live_inputs_sha256(record) != record.inputs_sha256


# ---------------------------------------------------------------------------------------------------------------
# The stages


@dataclass(frozen=True)
class StageDecision:
    stage: ApprovalStage
    record: DecisionRecord


def stage_decide(*, actor, record: DecisionRecord, kind: str, approve: bool, comment: str = "") -> StageDecision:
    """Sign (approve or reject) the `kind` stage. Not one transaction on purpose: when the inputs changed, the
    withdrawal of the approvals is committed and then InputsChanged is raised."""
    comment = (comment or "").strip()
    decision: StageDecision | None = None
    with transaction.atomic():
        current = _locked(record)
        check_may_sign(actor, current, kind)
        if current.status != RecordStatus.PROPOSED:
            raise RecordConflict(
                _("Only a proposed record is signed; this record is %(status)s.")
                % {"status": current.get_status_display()}
            )
        if current.inputs_changed_at is not None:
            raise InputsChanged(
                _("An input changed after the proposal; the record must be proposed again before it is signed.")
            )
        if not approve and not comment:
            raise ValidationError({"comment": _("A rejection needs its reason.")})
        waiting = current_stage(current)
        if waiting is None or waiting.kind != kind:
            raise RecordConflict(
                _("The stage %(stage)s is not the one waiting; stages are signed in order: platform review, finance, "
                  "product.") % {"stage": StageKind(kind).label}
            )
        live = selectors.live_inputs_sha256(current)
        if live != current.inputs_sha256:
            _withdraw_for_changed_inputs(actor, current, live)  # committed when this block ends
        else:
            decision = _sign(actor, current, waiting, approve=approve, comment=comment)
    if decision is None:
        raise InputsChanged(
            _("An input changed after the proposal: the approvals given so far were withdrawn. Propose the record "
              "again to freeze the new inputs.")
        )
    return decision


def _sign(actor, record: DecisionRecord, stage: ApprovalStage, *, approve: bool, comment: str) -> StageDecision:
    now = timezone.now()
    status = StageStatus.APPROVED if approve else StageStatus.REJECTED
    team_name = Team.objects.filter(pk=record.team_id).values_list("name", flat=True).first() or ""
    updated = ApprovalStage.objects.filter(pk=stage.pk, status=StageStatus.PENDING).update(
        status=status,
        reviewer=actor,
        decided_at=now,
        comment=comment,
        snapshot_sha256=record.snapshot_sha256,
        # The names as they are now, kept with the signature (a later rename changes nothing the record shows).
        reviewer_username=actor.get_username(),
        reviewer_name=actor.get_full_name() or actor.get_username(),
        team_name=team_name,
    )
    if updated != 1:
        raise RecordConflict(_("Someone signed this stage a moment ago."))
    stage.refresh_from_db()
    record_change(
        actor=actor,
        instance=record,
        action=Action.TRANSITION,
        before={"stage": stage.kind, "stage_status": StageStatus.PENDING.value},
        after={"stage": stage.kind, "stage_status": status.value, "snapshot_sha256": record.snapshot_sha256},
        message=(_("%(stage)s approved.") if approve else _("%(stage)s rejected: %(reason)s"))
        % {"stage": stage.get_kind_display(), "reason": comment},
    )
    if not approve:
        return StageDecision(stage, _reject(actor, record, stage, now))
    following = current_stage(record)
    if following is not None:
        notifications.notify(
            record=record,
            recipients=_reviewers_of(record, following.kind),
            event="stage_requested",
            params={"stage": following.kind},
            exclude=[actor],
        )
        return StageDecision(stage, record)
    return StageDecision(stage, _accept(actor, record, now))


def _decision_audience(record: DecisionRecord) -> list:
    reviewers = [
        stage.reviewer
        for stage in ApprovalStage.objects.select_related("reviewer").filter(
            record=record, round=record.proposal_round, reviewer__isnull=False
        )
    ]
    return [
        record.author,
        *record.deciders.all(),
        *record.consulted.all(),
        *record.informed.all(),
        *reviewers,
    ]


def _reject(actor, record: DecisionRecord, stage: ApprovalStage, now: datetime.datetime) -> DecisionRecord:
    updated = DecisionRecord.objects.filter(
        pk=record.pk, status=RecordStatus.PROPOSED, proposal_round=record.proposal_round
    ).update(status=RecordStatus.REJECTED, decided_at=now, updated_at=now)
    if updated != 1:
        raise RecordConflict(_("The record changed state while you signed it."))
    ApprovalStage.objects.filter(record=record, round=record.proposal_round, status=StageStatus.PENDING).update(
        status=StageStatus.WITHDRAWN, withdrawn_at=now
    )
    record.refresh_from_db()
    record_change(
        actor=actor,
        instance=record,
        action=Action.TRANSITION,
        before={"status": RecordStatus.PROPOSED.value},
        after={"status": RecordStatus.REJECTED.value, "reason": stage.comment},
        message=_("Rejected at the stage %(stage)s.") % {"stage": stage.get_kind_display()},
    )
    notifications.notify(
        record=record,
        recipients=_decision_audience(record),
        event="rejected",
        params={"stage": stage.kind, "reviewer": actor.get_username(), "reason": stage.comment},
        exclude=[actor],
    )
    return record


def _accept(actor, record: DecisionRecord, now: datetime.datetime) -> DecisionRecord:
    updated = DecisionRecord.objects.filter(
        pk=record.pk, status=RecordStatus.PROPOSED, proposal_round=record.proposal_round
    ).update(status=RecordStatus.ACCEPTED, decided_at=now, updated_at=now)
    if updated != 1:
        raise RecordConflict(_("The record changed state while you signed it."))
    record.refresh_from_db()
    record_change(
        actor=actor,
        instance=record,
        action=Action.TRANSITION,
        before={"status": RecordStatus.PROPOSED.value},
        after={"status": RecordStatus.ACCEPTED.value, "snapshot_sha256": record.snapshot_sha256},
        message=_("Accepted: every stage signed the snapshot %(hash)s.") % {"hash": record.snapshot_sha256[:12]},
    )
    notifications.notify(record=record, recipients=_decision_audience(record), event="accepted", exclude=[actor])
    if record.supersedes_id is not None:
        _supersede(actor, old_id=record.supersedes_id, new=record, now=now)
    return record


def _supersede(actor, *, old_id: int, new: DecisionRecord, now: datetime.datetime) -> None:
    """The old record flips to superseded, linked to the new one, only now that the new one is accepted."""
    updated = DecisionRecord.objects.filter(pk=old_id, status=RecordStatus.ACCEPTED, superseded_by__isnull=True).update(
        status=RecordStatus.SUPERSEDED, superseded_by=new, updated_at=now
    )
    old = DecisionRecord.objects.select_related("team").get(pk=old_id)
    if updated != 1:
        record_change(
            actor=actor,
            instance=new,
            action=Action.TRANSITION,
            message=_("%(old)s was not accepted any more, so it stays %(status)s.")
            % {"old": old.reference, "status": old.get_status_display()},
        )
        return
    RevisitFlag.objects.filter(record=old, cleared_at__isnull=True).update(cleared_at=now)
    record_change(
        actor=actor,
        instance=old,
        action=Action.TRANSITION,
        before={"status": RecordStatus.ACCEPTED.value, "superseded_by": None},
        after={"status": RecordStatus.SUPERSEDED.value, "superseded_by": new.pk},
        message=_("Superseded by %(new)s.") % {"new": new.reference},
    )
    notifications.notify(
        record=old, recipients=_decision_audience(old), event="superseded", params={"new": str(new)}, exclude=[actor]
    )


# ---------------------------------------------------------------------------------------------------------------
# Superseding drafts


def _successor_option(record: DecisionRecord, summary) -> Candidate | None:
    chosen = record.chosen_option
    if chosen is None:
        return None
    if summary.pk == record.workload_summary_id:
        return chosen
    return Candidate.objects.filter(workload_summary=summary, quote_id=chosen.quote_id).first()


@transaction.atomic
def record_start_superseding_draft(*, actor, record: DecisionRecord) -> DecisionRecord:
    """A draft pre-filled from an accepted record, on the newest ready version of its workload, reading today's
    inputs. When one is already open (draft or proposed), that one is returned."""
    _require_author_role(actor)
    current = _locked(record)
    if current.status != RecordStatus.ACCEPTED:
        raise RecordConflict(
            _("Only an accepted record can be superseded; this record is %(status)s.")
            % {"status": current.get_status_display()}
        )
    existing = selectors.superseding_draft(current)
    if existing is not None:
        return existing
    summary = (
        current.workload_summary.workload.versions.filter(status=WorkloadStatus.READY).order_by("-version").first()
        or current.workload_summary
    )
    draft = record_create(
        actor=actor,
        team=current.team,
        workload_summary=summary,
        title=current.title,
        supersedes=current,
        context=current.context,
        drivers=current.drivers,
        chosen_option=_successor_option(current, summary),
        capacity_model=current.capacity_model,
        rationale=current.rationale,
        consequences=current.consequences,
        confirmation_metric=current.confirmation_metric,
        revisit_triggers=current.revisit_triggers,
        deciders=list(current.deciders.all()),
        consulted=list(current.consulted.all()),
        informed=list(current.informed.all()),
    )
    record_change(
        actor=actor,
        instance=current,
        action=Action.UPDATE,
        message=_("Superseding draft %(new)s started; this record stays accepted until that one is.")
        % {"new": draft.reference},
    )
    return draft


# ---------------------------------------------------------------------------------------------------------------
# Revisit flags (the beat task)


@dataclass(frozen=True)
class RevisitReport:
    flagged: int
    cleared: int
    withdrawn: int


#: Who the audit log names for the flags the beat task opens, and for those a new price version opens on commit.
REVISIT_TASK_ACTOR = "decisions.flag_records_for_revisit"
PRICE_VERSION_ACTOR = "decisions.price_version_committed"


def record_flags_refresh(
    record: DecisionRecord, *, now: datetime.datetime, actor: str = REVISIT_TASK_ACTOR
) -> tuple[int, int]:
    """Open a flag for each new reason to revisit an accepted record, clear those that no longer hold; the people of
    the record are told about new flags. Returns (opened, cleared)."""
    findings = {(finding.reason, finding.subject): finding for finding in selectors.revisit_findings(record, now=now)}
    open_flags = {
        (flag.reason, flag.subject): flag
        for flag in RevisitFlag.objects.select_for_update()
        .filter(record=record, cleared_at__isnull=True)
        .exclude(reason__in=EXTERNAL_REASONS)
    }
    cleared = 0
    for key, flag in open_flags.items():
        if key not in findings:
            RevisitFlag.objects.filter(pk=flag.pk, cleared_at__isnull=True).update(cleared_at=now)
            cleared += 1
    opened = []
    for key, finding in findings.items():
        flag = open_flags.get(key)
        if flag is not None:
            if flag.details != finding.details:
                RevisitFlag.objects.filter(pk=flag.pk).update(details=finding.details)
            continue
        opened.append(
            RevisitFlag.objects.create(
                record=record, reason=finding.reason, subject=finding.subject, details=finding.details, flagged_at=now
            )
        )
    if opened:
        record_change(
            actor=actor,
            instance=record,
            action=Action.UPDATE,
            after={"revisit_flags": [f"{flag.reason}:{flag.subject}" for flag in opened]},
            message=_("To revisit: %(reasons)s.")
            % {"reasons": ", ".join(str(RevisitReason(flag.reason).label) for flag in opened)},
        )
        notifications.notify(
            record=record,
            recipients=_revisit_audience(record),
            event="revisit_flagged",
            params={"count": len(opened), "reasons": [flag.reason for flag in opened]},
        )
    return len(opened), cleared


def _revisit_audience(record: DecisionRecord) -> list:
    """Who is told that a record should be revisited: its author, deciders, consulted and informed."""
    return [record.author, *record.deciders.all(), *record.consulted.all(), *record.informed.all()]


@transaction.atomic
def record_flag_raise(
    *, actor, record: DecisionRecord, reason: str, subject: str, details: dict, now: datetime.datetime | None = None
) -> tuple[RevisitFlag, bool]:
    """Open a revisit flag another app found (one of EXTERNAL_REASONS) on an accepted record, and tell the record's
    people as for every other reason; when that flag is already open its details are brought up to date and nobody is
    told again. Returns (flag, opened)."""
    if reason not in EXTERNAL_REASONS:
        raise ValueError(f"{reason!r} is raised by the beat task, not by another app")
    current = _locked(record)
    if current.status != RecordStatus.ACCEPTED:
        raise RecordConflict(
            _("Only an accepted record is flagged for a revisit; this record is %(status)s.")
            % {"status": current.get_status_display()}
        )
    moment = now or timezone.now()
    flag = RevisitFlag.objects.filter(
        record=current, reason=reason, subject=subject, cleared_at__isnull=True
    ).first()
    if flag is not None:
        if flag.details != details:
            RevisitFlag.objects.filter(pk=flag.pk).update(details=details)
            flag.details = details
        return flag, False
    flag = RevisitFlag.objects.create(
        record=current, reason=reason, subject=subject, details=details, flagged_at=moment
    )
    record_change(
        actor=actor,
        instance=current,
        action=Action.UPDATE,
        after={"revisit_flags": [f"{flag.reason}:{flag.subject}"]},
        message=_("To revisit: %(reasons)s.") % {"reasons": str(RevisitReason(flag.reason).label)},
    )
    notifications.notify(
        record=current,
        recipients=_revisit_audience(current),
        event="revisit_flagged",
        params={"count": 1, "reasons": [flag.reason]},
    )
    return flag, True


@transaction.atomic
def record_flag_clear(
    *, actor, record: DecisionRecord, reason: str, subject: str, now: datetime.datetime | None = None
) -> bool:
    """Clear the open flag of another app's reason (it no longer holds). Returns whether one was open."""
    if reason not in EXTERNAL_REASONS:
        raise ValueError(f"{reason!r} is cleared by the beat task, not by another app")
    cleared = RevisitFlag.objects.filter(
        record=record, reason=reason, subject=subject, cleared_at__isnull=True
    ).update(cleared_at=now or timezone.now())
    if cleared:
        record_change(
            actor=actor,
            instance=record,
            action=Action.UPDATE,
            before={"revisit_flags": [f"{reason}:{subject}"]},
            after={"revisit_flags": []},
            message=_("No longer to revisit: %(reasons)s.") % {"reasons": str(RevisitReason(reason).label)},
        )
    return bool(cleared)


def records_flag_for_revisit(*, now: datetime.datetime | None = None) -> RevisitReport:
    """Idempotent: flag accepted records to revisit, and withdraw the approvals of proposed records whose inputs
    changed. Each record is handled in its own transaction."""
    moment = now or timezone.now()
    flagged = cleared = withdrawn = 0
    accepted = DecisionRecord.objects.filter(status=RecordStatus.ACCEPTED).select_related("team", "workload_summary")
    for record in accepted.iterator(chunk_size=200):
        with transaction.atomic():
            opened, closed = record_flags_refresh(record, now=moment)
        flagged += opened
        cleared += closed
    proposed = DecisionRecord.objects.filter(status=RecordStatus.PROPOSED, inputs_changed_at__isnull=True)
    for record in proposed.select_related("team", "workload_summary", "author").iterator(chunk_size=200):
        with transaction.atomic():
            current = _locked(record)
            live = selectors.live_inputs_sha256(current)
            if current.status == RecordStatus.PROPOSED and live != current.inputs_sha256:
                withdrawn += int(_withdraw_for_changed_inputs(REVISIT_TASK_ACTOR, current, live))
    return RevisitReport(flagged=flagged, cleared=cleared, withdrawn=withdrawn)


def records_flag_for_price(price_version, *, now: datetime.datetime | None = None) -> RevisitReport:
    """Right after a price version commits: refresh the flags of every accepted record that cites a version of the
    same priced item, by the same rules as the beat task (so the two never disagree, and a second run opens nothing).
    Each record is handled in its own transaction, its row locked like a sign-off locks it."""
    moment = now or timezone.now()
    flagged = cleared = 0
    citing = selectors.records_citing_price_item(
        team_id=price_version.quote.team_id, quote_id=price_version.quote_id, component=price_version.component
    )
    for record in citing:
        with transaction.atomic():
            current = _locked(record)
            if current.status != RecordStatus.ACCEPTED:
                continue
            opened, closed = record_flags_refresh(current, now=moment, actor=PRICE_VERSION_ACTOR)
        flagged += opened
        cleared += closed
    return RevisitReport(flagged=flagged, cleared=cleared, withdrawn=0)


def on_price_version_committed(sender, *, price_version, **kwargs) -> None:
    """Receiver of `apps.quotes.signals.price_version_committed`, connected in DecisionsConfig.ready()."""
    records_flag_for_price(price_version)
