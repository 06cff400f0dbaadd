"""Writes of the quotes app. Every service is keyword-only, atomic, validates with full_clean() and writes the
audit log.

Prices are never edited in place: `price_record` adds a version; cost lines are replaced, not edited.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from apps.audit.models import ObjectChange
from apps.audit.services import model_create, model_snapshot, model_update, record_change
from apps.common import money
from apps.common.errors import DetailedValidationError
from apps.quotes import documents, selectors, signals
from apps.quotes.models import (
    Candidate,
    ChecklistAnswer,
    ChecklistQuestion,
    CostLine,
    ExchangeRate,
    PriceComponent,
    PriceVersion,
    Quote,
    QuoteDocument,
    StalePriceFlag,
    Vendor,
    candidate_kind_for,
)

Action = ObjectChange.Action

# ---------------------------------------------------------------------------------------------------------------
# Vendors

VENDOR_FIELDS = ("name", "website", "contact", "notes")


@transaction.atomic
def vendor_create(*, actor, team, name: str, website: str = "", contact: str = "", notes: str = "") -> Vendor:
    vendor = Vendor(team=team, name=name.strip(), website=website, contact=contact, notes=notes)
    return model_create(instance=vendor, actor=actor)


@transaction.atomic
def vendor_update(*, actor, vendor: Vendor, **changes) -> Vendor:
    vendor, _changed = model_update(instance=vendor, actor=actor, data=changes, fields=VENDOR_FIELDS)
    return vendor


# ---------------------------------------------------------------------------------------------------------------
# Quotes (their terms; prices are versions)

#: A quote's terms by group, in the order the quote form shows them.
QUOTE_OFFER_FIELDS = (
    "vendor",
    "title",
    "vendor_reference",
    "sku",
    "region",
    "zone",
)
QUOTE_HARDWARE_FIELDS = (
    "gpu",
    "served_model",
    "form_factor",
    "gpu_memory_gb",
    "gpus_per_node",
    "node_count",
    "vcpus_per_node",
    "ram_gb_per_node",
    "local_nvme_tb_per_node",
    "interconnect_intra_node",
    "interconnect_inter_node",
    "storage_bandwidth",
    "network_bandwidth",
    "placement",
)
QUOTE_COMMERCIAL_FIELDS = (
    "commercial_model",
    "price_unit",
    "currency",
    "billing_granularity_seconds",
    "minimum_billed_seconds",
    "term_months",
    "committed_hours_per_month",
    "payment_option",
    "cancellation_terms",
    "support_tier",
    "spot_preemption_rate_per_hour",
    "spot_preemption_source",
)
QUOTE_OWNING_FIELDS = (
    "amortisation_months",
    "amortisation_source",
    "power_kw_per_node",
    "power_source",
    "pue",
    "pue_source",
)
QUOTE_TERM_FIELDS = (
    *QUOTE_OFFER_FIELDS,
    *QUOTE_HARDWARE_FIELDS,
    *QUOTE_COMMERCIAL_FIELDS,
    *QUOTE_OWNING_FIELDS,
    "notes",
)


def _check_terms(terms: dict) -> None:
    unknown = set(terms) - set(QUOTE_TERM_FIELDS)
    if unknown:
        raise TypeError(f"not quote terms: {sorted(unknown)}")


def _check_vendor(team, vendor: Vendor) -> None:
    if vendor.team_id != team.pk:
        raise ValidationError({"vendor": _("This vendor belongs to another team.")})


@transaction.atomic
def quote_create(*, actor, team, vendor: Vendor, **terms) -> Quote:
    _check_terms(terms)
    _check_vendor(team, vendor)
    quote = Quote(team=team, vendor=vendor, created_by=actor if getattr(actor, "pk", None) else None, **terms)
    return model_create(instance=quote, actor=actor)


@transaction.atomic
def quote_update(*, actor, quote: Quote, **changes) -> Quote:
    if "vendor" in changes:
        _check_vendor(quote.team, changes["vendor"])
    # A changed currency applies to new price versions only: every version keeps the currency it was quoted in.
    quote, _changed = model_update(instance=quote, actor=actor, data=changes, fields=QUOTE_TERM_FIELDS)
    return quote


# ---------------------------------------------------------------------------------------------------------------
# Prices


def _price_summary(version: PriceVersion | None) -> dict | None:
    if version is None:
        return None
    return {
        "version": version.number,
        "amount": money.canonical(version.amount),
        "currency": version.currency,
        "source": version.source_reference,
        "observed_at": version.observed_at.isoformat(),
        "valid_until": version.valid_until.isoformat() if version.valid_until else None,
    }


@transaction.atomic
def price_record(
    *,
    actor,
    quote: Quote,
    component: str,
    amount: Decimal | int | str,
    source_kind: str,
    source_reference: str,
    observed_at: datetime.datetime | None,
    valid_until: datetime.date | None = None,
    document: QuoteDocument | None = None,
    currency: str | None = None,
    note: str = "",
) -> PriceVersion:
    """Add the next version of one priced item. The previous version stays as it was."""
    if component not in PriceComponent.values:
        raise ValidationError({"component": _("Unknown priced item.")})
    # Lock the quote row so two people adding a version at once get numbers 1 and 2, not two 1s.
    Quote.objects.select_for_update().filter(pk=quote.pk).first()
    previous = (
        PriceVersion.objects.filter(quote=quote, component=component).order_by("-number").first()
    )
    number = (previous.number if previous else 0) + 1
    try:
        amount_value = money.to_decimal(amount) if amount not in (None, "") else None
    except money.MoneyError:
        raise ValidationError({"amount": _("Enter a decimal number.")}) from None
    version = PriceVersion(
        quote=quote,
        component=component,
        number=number,
        amount=amount_value,
        currency=currency or quote.currency,
        source_kind=source_kind,
        source_reference=(source_reference or "").strip(),
        document=document,
        observed_at=observed_at,
        valid_until=valid_until,
        note=note,
        entered_by=actor if getattr(actor, "pk", None) else None,
        entered_at=timezone.now(),
    )
    version.full_clean()
    version.save()
    label = PriceComponent(component).label
    record_change(
        actor=actor,
        instance=quote,
        action=Action.UPDATE,
        before={component: _price_summary(previous)},
        after={component: _price_summary(version)},
        message=_("%(item)s: version %(number)s") % {"item": label, "number": number},
    )
    # The layers above (decisions: records citing this price) react once the version is committed, never before.
    transaction.on_commit(lambda: signals.send_price_version_committed(version))
    return version


# ---------------------------------------------------------------------------------------------------------------
# Documents


@transaction.atomic
def document_attach(*, actor, quote: Quote, upload: UploadedFile, description: str = "") -> QuoteDocument:
    checked = documents.check_document(upload.name, upload, upload.size)
    document = QuoteDocument(
        quote=quote,
        original_name=upload.name[:255],
        kind=checked.kind,
        size_bytes=checked.size_bytes,
        sha256=checked.sha256,
        description=description,
        uploaded_by=actor if getattr(actor, "pk", None) else None,
    )
    document.full_clean(exclude=["file"])
    document.file.save(upload.name, upload, save=False)
    document.save()
    # The file itself is not JSON: the audit entry records its stored name beside the other fields.
    fields = [field.name for field in QuoteDocument._meta.concrete_fields if field.name != "file"]
    snapshot = model_snapshot(document, fields=fields)
    record_change(
        actor=actor,
        instance=document,
        action=Action.CREATE,
        after={**snapshot, "file": document.file.name},
        team=quote.team,
    )
    return document


# ---------------------------------------------------------------------------------------------------------------
# Cost lines

COST_LINE_FIELDS = (
    "kind",
    "candidate",
    "description",
    "quantity",
    "unit",
    "rate",
    "currency",
    "period",
    "source_reference",
    "observed_at",
    "estimated_by",
    "estimate_reason",
)


def _new_cost_line(*, actor, quote: Quote, values: dict) -> CostLine:
    unknown = set(values) - set(COST_LINE_FIELDS)
    if unknown:
        raise TypeError(f"not cost line fields: {sorted(unknown)}")
    values = dict(values)
    values.setdefault("currency", quote.currency)
    if values.get("source_reference"):
        values["source_reference"] = values["source_reference"].strip()
    if not values.get("source_reference"):
        # An estimate: whoever enters it owns it unless someone else is named.
        values["estimated_by"] = values.get("estimated_by") or (actor if getattr(actor, "pk", None) else None)
        values["observed_at"] = None
    else:
        values["estimated_by"] = None
        values["estimate_reason"] = ""
    line = CostLine(quote=quote, entered_by=actor if getattr(actor, "pk", None) else None, **values)
    line.full_clean(exclude=["replaced_by"])
    line.save()
    return line


@transaction.atomic
def cost_line_add(*, actor, quote: Quote, **values) -> CostLine:
    line = _new_cost_line(actor=actor, quote=quote, values=values)
    record_change(actor=actor, instance=line, action=Action.CREATE, after=model_snapshot(line), team=quote.team)
    return line


@transaction.atomic
def cost_line_replace(*, actor, line: CostLine, **changes) -> CostLine:
    """A changed cost line is a new line; the old one stays, marked as replaced by it."""
    line = CostLine.objects.select_for_update().get(pk=line.pk)
    if not line.is_current:
        raise ValidationError(_("This cost line was already replaced or removed."))
    values = {name: getattr(line, name) for name in COST_LINE_FIELDS}
    values.update(changes)
    new_line = _new_cost_line(actor=actor, quote=line.quote, values=values)
    before = model_snapshot(line)
    line.replaced_by = new_line
    line.save(update_fields=["replaced_by"])
    record_change(
        actor=actor,
        instance=line,
        action=Action.UPDATE,
        before=before,
        after=model_snapshot(new_line),
        message=_("replaced by line %(id)s") % {"id": new_line.pk},
        team=line.quote.team,
    )
    return new_line


@transaction.atomic
def cost_line_remove(*, actor, line: CostLine) -> CostLine:
    line = CostLine.objects.select_for_update().get(pk=line.pk)
    if not line.is_current:
        raise ValidationError(_("This cost line was already replaced or removed."))
    line, _changed = model_update(
        instance=line,
        actor=actor,
        data={"removed_at": timezone.now()},
        fields=["removed_at"],
        action=Action.DELETE,
        team=line.quote.team,
    )
    return line


# ---------------------------------------------------------------------------------------------------------------
# The checklist


@transaction.atomic
def checklist_answer_set(
    *,
    actor,
    quote: Quote,
    question: ChecklistQuestion,
    status: str,
    value: str = "",
    evidence: str = "",
    evidence_document: QuoteDocument | None = None,
) -> ChecklistAnswer:
    """Answer (or re-answer) one checklist question of a quote; the previous answer stays in the audit log."""
    values = {
        "status": status,
        "value": (value or "").strip(),
        "evidence": (evidence or "").strip(),
        "evidence_document": evidence_document,
        "answered_by": actor if getattr(actor, "pk", None) else None,
        "answered_at": timezone.now(),
    }
    answer = ChecklistAnswer.objects.select_for_update().filter(quote=quote, question=question).first()
    if answer is not None:
        answer, _changed = model_update(instance=answer, actor=actor, data=values, fields=values, team=quote.team)
        return answer
    answer = ChecklistAnswer(quote=quote, question=question, **values)
    return model_create(instance=answer, actor=actor, team=quote.team)


# ---------------------------------------------------------------------------------------------------------------
# Exchange rates


@transaction.atomic
def exchange_rate_record(
    *,
    actor,
    team,
    from_currency: str,
    to_currency: str,
    rate: Decimal | int | str,
    source: str,
    as_of: datetime.date | None,
) -> ExchangeRate:
    """Record a rate with its source and date. Rates are never changed: a new day's rate is a new row."""
    try:
        rate_value = money.to_decimal(rate) if rate not in (None, "") else None
    except money.MoneyError:
        raise ValidationError({"rate": _("Enter a decimal number.")}) from None
    exchange_rate = ExchangeRate(
        team=team,
        from_currency=from_currency,
        to_currency=to_currency,
        rate=rate_value,
        source=(source or "").strip(),
        as_of=as_of,
        entered_by=actor if getattr(actor, "pk", None) else None,
    )
    return model_create(instance=exchange_rate, actor=actor)


# ---------------------------------------------------------------------------------------------------------------
# Candidates

CANDIDATE_FIELDS = (
    "label",
    "expected_retry_rate",
    "retry_rate_source",
    "quality_acceptance",
    "quality_acceptance_source",
    "spot_rework_hours",
    "spot_rework_source",
    "notes",
)


class PolicyNotMet(DetailedValidationError):
    """The quote's checklist is below the commitment policy; `policy` lists what is missing, and so do the details
    (question codes) that the API adds to its answer."""

    def __init__(self, policy: selectors.PolicyCheck):
        self.policy = policy
        reasons = [f"{missing.question.text} ({missing.reason})" for missing in policy.missing] + policy.problems
        message = _(
            "This quote cannot back a candidate until its checklist meets the commitment policy: %(missing)s"
        ) % {"missing": "; ".join(reasons)}
        super().__init__(
            {"quote": ValidationError(message, code="policy")},
            details={
                "missing_answers": [
                    {"question": missing.question.code, "reason": missing.reason} for missing in policy.missing
                ],
                "problems": policy.problems,
            },
        )


def _check_candidate_quote(team, quote: Quote) -> None:
    if quote.team_id != team.pk:
        raise ValidationError({"quote": _("This quote belongs to another team.")})
    missing = selectors.missing_prices(quote)
    if missing:
        raise ValidationError(
            {"quote": _("This quote has no %(items)s yet.") % {"items": ", ".join(missing)}}, code="prices"
        )
    policy = selectors.policy_check(quote)
    if not policy.ok:
        raise PolicyNotMet(policy)


@transaction.atomic
def candidate_create(*, actor, team, quote: Quote, workload_summary, **values) -> Candidate:
    """Attach a priced quote whose checklist meets the commitment policy to a ready workload version."""
    unknown = set(values) - set(CANDIDATE_FIELDS)
    if unknown:
        raise TypeError(f"not candidate fields: {sorted(unknown)}")
    _check_candidate_quote(team, quote)
    values.setdefault("label", f"{quote} — {workload_summary}")
    candidate = Candidate(
        team=team,
        quote=quote,
        workload_summary=workload_summary,
        kind=candidate_kind_for(quote),
        created_by=actor if getattr(actor, "pk", None) else None,
        **values,
    )
    return model_create(instance=candidate, actor=actor)


@transaction.atomic
def candidate_update(*, actor, candidate: Candidate, **changes) -> Candidate:
    candidate, _changed = model_update(instance=candidate, actor=actor, data=changes, fields=CANDIDATE_FIELDS)
    return candidate


# ---------------------------------------------------------------------------------------------------------------
# Stale prices


@dataclass(frozen=True)
class StaleFlagReport:
    flagged: int
    cleared: int
    open: int


@transaction.atomic
def stale_prices_flag(*, now: datetime.datetime | None = None) -> StaleFlagReport:
    """Open a flag for every current price that is stale or expired now; clear flags that no longer hold.

    Idempotent: running it twice opens nothing new. A price that a newer version superseded is no longer current,
    so its flag is cleared.
    """
    moment = now or timezone.now()
    stale = {version.pk: (version, freshness) for version, freshness in selectors.stale_current_prices(now=moment)}
    open_flags = {flag.price_id: flag for flag in StalePriceFlag.objects.select_for_update().filter(cleared_at=None)}
    cleared = 0
    for price_id, flag in open_flags.items():
        if price_id not in stale:
            flag.cleared_at = moment
            flag.save(update_fields=["cleared_at"])
            cleared += 1
    flagged = 0
    for price_id, (version, freshness) in stale.items():
        flag = open_flags.get(price_id)
        if flag is not None and flag.reason == freshness.status.value:
            continue
        if flag is not None:
            # Stale turned expired (or the other way): close the old flag and open one with the new reason.
            flag.cleared_at = moment
            flag.save(update_fields=["cleared_at"])
        StalePriceFlag.objects.create(
            price=version, team=version.quote.team, reason=freshness.status.value, flagged_at=moment
        )
        flagged += 1
    return StaleFlagReport(flagged=flagged, cleared=cleared, open=len(stale))
