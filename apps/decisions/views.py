"""Browser pages of decision records: the list, a draft's start and edit, the record page (the phase-4 table,
charts and six mistakes from the snapshot, the approval trail, the revisit flags), the sign-off of each stage, the
print view, the exports, the snapshot itself, the records waiting for one's signature, and each person's
notifications and their preferences.

Every role of the owning team reads; platform and admin draft and propose; each stage is signed by its own role.
Records come from `for_user` querysets, so another team's record answers 404. A step the record's state does not
allow (any change to an accepted record) answers 409 with the reason.
"""

from __future__ import annotations

import re

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST, require_safe

from apps.budgets import selectors as budget_selectors
from apps.common import page_parts
from apps.common.forms import add_service_errors
from apps.comparison import display, exports
from apps.decisions import notifications, selectors, services, snapshot
from apps.decisions.filters import RecordFilterSet
from apps.decisions.forms import NotificationPreferenceForm, RecordForm, RecordStartForm, StageForm
from apps.decisions.models import STAGE_ORDER, CapacityModel, RecordStatus, StageKind, StageStatus
from apps.quotes.models import PriceComponent

CONFLICT = 409


def _active_team(request):
    team = getattr(request, "active_team", None)
    if not team:
        raise PermissionDenied(_("You belong to no team yet: ask an admin."))
    return team


def _require_author_role(request) -> None:
    if not services.may_author(request.user):
        raise PermissionDenied(_("Only the platform and admin roles may draft or propose decision records."))


def _refused(request, record, message: str, status: int = CONFLICT):
    return render(request, "decisions/records/refused.html", {"record": record, "message": message}, status=status)


def _error_text(error: ValidationError) -> str:
    return " ".join(error.messages)


# ---------------------------------------------------------------------------------------------------------------
# The list


def _chosen_unit_cost(record) -> tuple[str, str] | None:
    """(effective unit cost, currency) of the chosen option as frozen in the snapshot; None for a draft."""
    if not record.is_frozen:
        return None
    comparison = record.snapshot["comparison"]
    chosen = next((item for item in comparison["results"] if item["id"] == comparison["chosen_id"]), None)
    if chosen is None or chosen["row"] is None:
        return None
    return chosen["row"]["effective_unit_cost"], comparison["currency"]


@require_safe
def record_list(request):
    team = getattr(request, "active_team", None)
    filterset = RecordFilterSet(
        request.GET or None, queryset=selectors.record_list(request.user, team=team or None), request=request
    )
    records = list(filterset.qs)
    rows = [{"record": record, "unit_cost": _chosen_unit_cost(record)} for record in records]
    return render(
        request,
        "decisions/records/list.html",
        {
            "filterset": filterset,
            "rows": rows,
            "can_author": services.may_author(request.user),
            "unread": selectors.unread_count(request.user),
        },
    )


@require_safe
def waiting_for_me(request):
    """The records whose current stage waits for a signature the user may give (any of the user's teams)."""
    stages = list(selectors.stages_waiting_for(request.user))
    return render(request, "decisions/records/waiting.html", {"stages": stages})


# ---------------------------------------------------------------------------------------------------------------
# Drafts


def record_create(request):
    _require_author_role(request)
    team = _active_team(request)
    form = RecordStartForm(request.POST or None, user=request.user, team=team)
    if request.method == "POST" and form.is_valid():
        try:
            record = services.record_create(actor=request.user, team=team, **form.cleaned_data)
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, _("Draft %(record)s started: now state the decision.") % {"record": record})
            return redirect("records:edit", pk=record.pk)
    return render(request, "decisions/records/start.html", {"form": form}, status=400 if form.errors else 200)


def record_edit(request, pk: int):
    _require_author_role(request)
    record = selectors.record_get(request.user, pk)
    if record.status != RecordStatus.DRAFT:
        return _refused(
            request, record, _("Only a draft can be edited; this record is %(status)s.")
            % {"status": record.get_status_display()}
        )
    form = RecordForm(request.POST or None, record=record)
    if request.method == "POST" and form.is_valid():
        try:
            services.record_update(actor=request.user, record=record, **form.cleaned_data)
        except services.RecordConflict as error:
            return _refused(request, record, _error_text(error))
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, _("Draft saved."))
            return redirect(record)
    return render(
        request, "decisions/records/edit.html", {"form": form, "record": record}, status=400 if form.errors else 200
    )


def _budget_choices(request, record) -> dict:
    """The cost centre and tags the propose form sent (a field the form did not send is left as it is)."""
    choices = {}
    if "cost_centre" in request.POST:
        value = request.POST["cost_centre"].strip()
        if not value:
            choices["cost_centre"] = None
        else:
            centre = budget_selectors.cost_centres_for(request.user).filter(team=record.team, pk=value).first() \
                if value.isdigit() else None
            if centre is None:
                raise ValidationError({"cost_centre": _("Choose one of the team's cost centres.")})
            choices["cost_centre"] = centre
    if "tags" in request.POST:
        choices["tags"] = request.POST["tags"]
    return choices


@require_POST
def record_propose(request, pk: int):
    _require_author_role(request)
    record = selectors.record_get(request.user, pk)
    try:
        record = services.record_propose(actor=request.user, record=record, **_budget_choices(request, record))
    except services.BudgetBlocked as error:
        return _refused(request, record, _error_text(error), status=400)
    except services.RecordConflict as error:
        return _refused(request, record, _error_text(error))
    except ValidationError as error:
        return _refused(
            request, record, _("The record cannot be proposed yet: %(reasons)s") % {"reasons": _error_text(error)},
            status=400,
        )
    messages.success(request, _("Proposed: the inputs are frozen and the platform review is asked for."))
    frozen = snapshot.budget_check_of(record.snapshot)
    if frozen is not None and frozen["result"]["outcome"] == "warn":
        messages.warning(request, frozen["message"])
    return redirect(record)


@require_POST
def record_withdraw(request, pk: int):
    _require_author_role(request)
    record = selectors.record_get(request.user, pk)
    try:
        record = services.record_withdraw(actor=request.user, record=record)
    except services.RecordConflict as error:
        return _refused(request, record, _error_text(error))
    messages.success(request, _("Proposal withdrawn: the record is a draft again."))
    return redirect(record)


@require_POST
def record_supersede(request, pk: int):
    _require_author_role(request)
    record = selectors.record_get(request.user, pk)
    try:
        draft = services.record_start_superseding_draft(actor=request.user, record=record)
    except services.RecordConflict as error:
        return _refused(request, record, _error_text(error))
    messages.success(
        request, _("Superseding draft %(new)s started from %(old)s with today's inputs.")
        % {"new": draft.reference, "old": record.reference}
    )
    return redirect("records:edit", pk=draft.pk)


# ---------------------------------------------------------------------------------------------------------------
# The record page and its sign-off


def _record_context(request, record, *, stage_form: StageForm | None = None) -> dict:
    comparison = selectors.view_comparison(record)
    stages = selectors.stages_of(record)
    current = [stage for stage in stages if stage.round == record.proposal_round] if record.proposal_round else []
    waiting = next((stage for stage in current if stage.status == StageStatus.PENDING), None)
    may_sign = (
        record.status == RecordStatus.PROPOSED
        and record.inputs_changed_at is None
        and waiting is not None
        and services.stage_refusal(request.user, record, waiting.kind) is None
    )
    inputs_changed = record.inputs_changed_at is not None or (
        record.status == RecordStatus.PROPOSED and services.inputs_changed(record)
    )
    content = selectors.record_content(record) if not record.is_frozen else record.snapshot["record"]
    capacity = content.get("capacity_model")
    flags = selectors.open_flags(record) if record.status == RecordStatus.ACCEPTED else []
    data = record.snapshot if record.is_frozen else None
    return {
        "record": record,
        "content": content,
        "team_name": selectors.team_name_shown(record, stages),
        "cited_jobs": selectors.cited_jobs(data) if data is not None else [],
        "drivers": [line.strip() for line in (content.get("drivers") or "").splitlines() if line.strip()],
        "capacity_model_label": CapacityModel(capacity).label if capacity in CapacityModel.values else "",
        "waiting_url": f"records:review-{waiting.kind}" if waiting is not None else "",
        "summary": comparison.summary,
        "comparison": comparison,
        "rows": display.table_rows(comparison),
        "hybrid": display.hybrid_row(comparison),
        "charts": display.chart_list(comparison),
        "stages": stages,
        "rounds": _rounds(stages),
        "current_stages": current,
        "waiting": waiting,
        "may_sign": may_sign,
        "stage_form": stage_form or StageForm(),
        "flags": flags,
        "flag_texts": [flag_text(flag) for flag in flags],
        "successor": selectors.superseding_draft(record),
        "can_author": services.may_author(request.user),
        "inputs_changed": inputs_changed,
        "hash_ok": record.snapshot_matches_hash() if record.is_frozen else None,
        # What higher apps show on the record page (the actuals app: planned against actual).
        "record_parts": page_parts.render("decisions.record.detail", request, record=record),
        "budget_check": snapshot.budget_check_of(data),
        "cost_centres": budget_selectors.cost_centres_for(request.user).filter(team=record.team)
        if record.status in (RecordStatus.DRAFT, RecordStatus.PROPOSED) else [],
    }


def _rounds(stages) -> list[tuple[int, list]]:
    grouped: dict[int, list] = {}
    for stage in stages:
        grouped.setdefault(stage.round, []).append(stage)
    return sorted(grouped.items(), reverse=True)


def flag_text(flag) -> str:
    """Why the record should be revisited, in the active language."""
    details = dict(flag.details or {})
    if details.get("component") in PriceComponent.values:
        details["component"] = str(PriceComponent(details["component"]).label)
    if flag.reason == "price_changed":
        if details.get("change_percent") is None:
            return _(
                "%(component)s of quote #%(quote)s: version %(new_number)s costs %(new_amount)s %(new_currency)s, "
                "the record cites version %(cited_number)s at %(cited_amount)s %(cited_currency)s."
            ) % {**details, "quote": details.get("quote_id")}
        return _(
            "%(component)s of quote #%(quote)s: version %(new_number)s costs %(new_amount)s %(new_currency)s, "
            "%(change)s %% against version %(cited_number)s cited by the record (%(cited_amount)s); the team revisits "
            "above %(threshold)s %%."
        ) % {**details, "quote": details.get("quote_id"), "change": details.get("change_percent"),
             "threshold": details.get("threshold_percent")}
    if flag.reason == "quote_expired":
        return _("%(component)s of quote #%(quote)s cited by the record was valid until %(valid_until)s.") % {
            **details, "quote": details.get("quote_id")
        }
    if flag.reason == "price_stale":
        return _(
            "%(component)s of quote #%(quote)s cited by the record (version %(number)s) is stale: observed "
            "%(observed_at)s, older than the team's %(days)s days."
        ) % {**details, "quote": details.get("quote_id"), "number": details.get("number"),
             "observed_at": (details.get("observed_at") or "")[:10], "days": details.get("stale_after_days")}
    if flag.reason == "workload_changed":
        return _("The workload has version %(new_version)s; the record decided on version %(cited_version)s.") % details
    if flag.reason == "actual_drift":
        if details.get("drift_percent") is None:
            return _(
                "Actuals version %(version)s (%(first_day)s to %(last_day)s): %(spend)s %(currency)s spent with no "
                "accepted output."
            ) % {"version": "", "first_day": "", "last_day": "", "spend": "", "currency": "", **details}
        return _(
            "Actuals version %(version)s (%(first_day)s to %(last_day)s): %(actual)s %(currency)s per accepted output "
            "against %(planned)s decided, %(drift)s %%; the team revisits beyond %(threshold)s %%."
        ) % {"version": "", "first_day": "", "last_day": "", "actual": "", "planned": "", "currency": "",
             **details, "drift": details.get("drift_percent"), "threshold": details.get("threshold_percent")}
    if flag.reason == "revisit_date":
        return _("The revisit date %(revisit_on)s has come.") % details
    return flag.get_reason_display()


@require_safe
def record_detail(request, pk: int):
    record = selectors.record_get(request.user, pk)
    return render(request, "decisions/records/detail.html", _record_context(request, record))


@require_safe
def record_print(request, pk: int):
    record = selectors.record_get(request.user, pk)
    return render(request, "decisions/records/print.html", _record_context(request, record))


def _stage_view(stage: str):
    @require_POST
    def view(request, pk: int):
        record = selectors.record_get(request.user, pk)
        services.check_may_sign(request.user, record, stage)  # the wrong role, the author: 403
        form = StageForm(request.POST)
        if not form.is_valid():
            return render(
                request,
                "decisions/records/detail.html",
                _record_context(request, record, stage_form=form),
                status=400,
            )
        approve = form.cleaned_data["decision"] == "approve"
        try:
            decision = services.stage_decide(
                actor=request.user, record=record, kind=stage, approve=approve, comment=form.cleaned_data["comment"]
            )
        except services.RecordConflict as error:
            return _refused(request, record, _error_text(error))
        except ValidationError as error:
            add_service_errors(form, error)
            return render(
                request,
                "decisions/records/detail.html",
                _record_context(request, record, stage_form=form),
                status=400,
            )
        label = StageKind(stage).label
        if decision.record.status == RecordStatus.ACCEPTED:
            messages.success(request, _("%(stage)s approved: the record is accepted.") % {"stage": label})
        elif approve:
            messages.success(request, _("%(stage)s approved.") % {"stage": label})
        else:
            messages.success(request, _("%(stage)s rejected: the record is rejected.") % {"stage": label})
        return redirect(decision.record)

    view.__name__ = f"record_review_{stage}"
    return view


record_review = {kind: _stage_view(kind) for kind in STAGE_ORDER}


# ---------------------------------------------------------------------------------------------------------------
# Exports and the snapshot


def _filename(record, extension: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", record.title).strip("-").lower()[:60] or "record"
    return f"{record.reference}-{slug}.{extension}"


def _download(content, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(content, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@require_safe
def record_export(request, pk: int, kind: str):
    """The phase-4 exports of the record, made from its snapshot (from the live inputs while it is a draft)."""
    record = selectors.record_get(request.user, pk)
    comparison = selectors.view_comparison(record)
    if kind == "xlsx":
        return _download(
            exports.comparison_xlsx(comparison),
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            _filename(record, "xlsx"),
        )
    if kind == "csv":
        return _download(exports.comparison_csv(comparison), "text/csv; charset=utf-8", _filename(record, "csv"))
    raise Http404


@require_safe
def record_snapshot(request, pk: int):
    """The frozen snapshot exactly as hashed (canonical JSON); its SHA-256 is in the header X-Content-SHA256."""
    record = selectors.record_get(request.user, pk)
    if not record.is_frozen:
        raise Http404(_("A draft has no snapshot yet."))
    response = _download(record.snapshot_json.encode("utf-8"), "application/json", _filename(record, "snapshot.json"))
    response["X-Content-SHA256"] = record.snapshot_sha256
    return response


# ---------------------------------------------------------------------------------------------------------------
# Notifications


@require_safe
def notification_list(request):
    items = list(selectors.notifications_for(request.user)[:200])
    return render(
        request,
        "decisions/records/notifications.html",
        {"items": [(item, notifications.notification_text(item)) for item in items]},
    )


@require_POST
def notifications_mark_read(request):
    ids = [int(value) for value in request.POST.getlist("notification") if value.isdigit()]
    count = notifications.mark_read(user=request.user, notification_ids=ids or None)
    messages.success(request, _("%(count)s notification(s) marked read.") % {"count": count})
    return redirect("records:notifications")


def notification_preferences(request):
    preference = notifications.preference_for(request.user)
    form = NotificationPreferenceForm(request.POST or None, instance=preference)
    if request.method == "POST" and form.is_valid():
        notifications.preference_set(user=request.user, **form.cleaned_data)
        messages.success(request, _("Your notification choices are saved."))
        return redirect("records:notification-preferences")
    return render(request, "decisions/records/preferences.html", {"form": form})
