"""Writes of the quotes app. Every service is keyword-only, atomic, validates with full_clean() and writes the
audit log.

Prices are never edited in place: `price_record` adds a version; cost lines are replaced, not edited.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from apps.audit.models import ObjectChange
from apps.audit.services import model_create, model_snapshot, model_update, record_change
from apps.common import money
from apps.common.errors import DetailedValidationError
from apps.quotes import checklist_prefill as prefill
from apps.quotes import documents, selectors, signals
from apps.quotes.models import (
    AnswerOrigin,
    AnswerStatus,
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
    quote = model_create(instance=quote, actor=actor)
    checklist_prefill(actor=actor, quote=quote)
    return quote


@transaction.atomic
def quote_update(*, actor, quote: Quote, **changes) -> Quote:
    if "vendor" in changes:
        _check_vendor(quote.team, changes["vendor"])
    # A changed currency applies to new price versions only: every version keeps the currency it was quoted in.
    quote, changed = model_update(instance=quote, actor=actor, data=changes, fields=QUOTE_TERM_FIELDS)
    if changed:
        checklist_prefill(actor=actor, quote=quote)
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
    checklist_prefill(actor=actor, quote=quote)
    # The layers above (decisions: records citing this price) react once the version is committed, never before.
    transaction.on_commit(lambda: signals.send_price_version_committed(version))
    return version


def price_record_citing_upload(
    *, actor, quote: Quote, upload: UploadedFile, description: str = "", **price
) -> PriceVersion:
    """Attach `upload` to the quote (as `document_attach` does) and record the price citing it, in one transaction.

    `price` takes price_record's arguments except `document`. A refusal of either (the file's type or size, the
    price's amount, source or date) saves neither: no document row, no price version, and the stored file is
    deleted again.
    """
    if price.get("document") is not None:
        raise ValidationError(
            {"file": _("Either upload the vendor's file or pick a document already attached, not both.")}
        )
    price.pop("document", None)
    stored: list = []
    try:
        with transaction.atomic():
            try:
                document = document_attach(actor=actor, quote=quote, upload=upload, description=description)
            except ValidationError as error:
                # The file's refusal (type, content, size) belongs to the file field of the price form.
                raise error if hasattr(error, "error_dict") else ValidationError({"file": error.error_list}) from None
            stored.append(document.file)
            version = price_record(actor=actor, quote=quote, document=document, **price)
    except BaseException:
        for file in stored:
            file.storage.delete(file.name)
        raise
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
    try:
        document.save()
    except BaseException:
        document.file.storage.delete(document.file.name)
        raise
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
    checklist_prefill(actor=actor, quote=quote)
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
    checklist_prefill(actor=actor, quote=line.quote)
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
    checklist_prefill(actor=actor, quote=line.quote)
    return line


# ---------------------------------------------------------------------------------------------------------------
# The checklist


def _answer_values(*, actor, status, value, evidence, evidence_document, origin) -> dict:
    return {
        "status": status,
        "value": (value or "").strip(),
        "evidence": (evidence or "").strip(),
        "evidence_document": evidence_document,
        "answered_by": actor if getattr(actor, "pk", None) else None,
        "answered_at": timezone.now(),
        "origin": origin,
    }


def _answer_write(*, actor, quote: Quote, question: ChecklistQuestion, values: dict) -> ChecklistAnswer:
    if values["status"] == AnswerStatus.ANSWERED and not values["value"]:
        raise ValidationError({"value": _("Write the answer, or mark it not provided or not applicable.")})
    answer = ChecklistAnswer.objects.select_for_update().filter(quote=quote, question=question).first()
    if answer is not None:
        answer, _changed = model_update(instance=answer, actor=actor, data=values, fields=values, team=quote.team)
        return answer
    answer = ChecklistAnswer(quote=quote, question=question, **values)
    return model_create(instance=answer, actor=actor, team=quote.team)


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
    """Answer (or re-answer) one checklist question of a quote; the previous answer stays in the audit log.

    A person's answer: an answer that was "from the quote" becomes the person's, and the quote no longer rewrites it.
    """
    values = _answer_values(
        actor=actor, status=status, value=value, evidence=evidence, evidence_document=evidence_document,
        origin=AnswerOrigin.PERSON,
    )
    return _answer_write(actor=actor, quote=quote, question=question, values=values)


@dataclass(frozen=True)
class AnswerInput:
    """One answer of a bulk save (`checklist_answers_set`)."""

    question: ChecklistQuestion
    status: str
    value: str = ""
    evidence: str = ""
    evidence_document: QuoteDocument | None = None


def _message_lists(error: ValidationError) -> dict[str, list[str]]:
    if not hasattr(error, "error_dict"):
        return {NON_FIELD_ERRORS: list(error.messages)}
    return {field: list(ValidationError(errors).messages) for field, errors in error.error_dict.items()}


class ChecklistAnswersRefused(DetailedValidationError):
    """Some answers of a bulk save were refused, so none was saved. `per_question` maps each refused question's code
    to its ValidationError (by field); the API shows `{code: {field: [message]}}`, a form the messages by code."""

    def __init__(self, per_question: dict[str, ValidationError]):
        self.per_question = dict(per_question)
        by_code = {code: _message_lists(error) for code, error in self.per_question.items()}
        super().__init__(
            {
                code: [message for messages in fields.values() for message in messages]
                for code, fields in by_code.items()
            },
            details={
                code: {
                    ("non_field_errors" if field == NON_FIELD_ERRORS else field): messages
                    for field, messages in fields.items()
                }
                for code, fields in by_code.items()
            },
        )


def _unchanged(answer: ChecklistAnswer | None, item: AnswerInput) -> bool:
    return answer is not None and (
        answer.status,
        answer.value,
        answer.evidence,
        answer.evidence_document_id,
    ) == (
        item.status,
        (item.value or "").strip(),
        (item.evidence or "").strip(),
        item.evidence_document.pk if item.evidence_document is not None else None,
    )


@transaction.atomic
def checklist_answers_set(*, actor, quote: Quote, answers: Sequence[AnswerInput]) -> list[ChecklistAnswer]:
    """Answer many questions of one quote at once: all of them, or none (ChecklistAnswersRefused, by question code).

    An answer identical to the one stored is left as it is (no audit entry; one "from the quote" stays so). A
    question given twice is refused.
    """
    Quote.objects.select_for_update().filter(pk=quote.pk).first()
    stored = {answer.question_id: answer for answer in ChecklistAnswer.objects.filter(quote=quote)}
    errors: dict[str, ValidationError] = {}
    seen: set[int] = set()
    saved: list[ChecklistAnswer] = []
    for item in answers:
        code = item.question.code
        if item.question.pk in seen:
            errors[code] = ValidationError({"question": _("This question is answered twice.")})
            continue
        seen.add(item.question.pk)
        if not item.question.active:
            errors[code] = ValidationError({"question": _("This question is no longer asked.")})
            continue
        answer = stored.get(item.question.pk)
        if _unchanged(answer, item):
            saved.append(answer)
            continue
        values = _answer_values(
            actor=actor, status=item.status, value=item.value, evidence=item.evidence,
            evidence_document=item.evidence_document, origin=AnswerOrigin.PERSON,
        )
        try:
            saved.append(_answer_write(actor=actor, quote=quote, question=item.question, values=values))
        except ValidationError as error:
            errors[code] = error
    if errors:
        raise ChecklistAnswersRefused(errors)  # leaving the atomic block undoes the answers already written
    return saved


def checklist_prefill(*, actor, quote: Quote) -> list[ChecklistAnswer]:
    """Answer the questions that the quote's own facts answer completely (apps/quotes/checklist_prefill.py), marked
    "from the quote"; rewrite such an answer when the facts change, remove it when they no longer answer the question.
    A person's answer is never touched. Returns the answers from the quote as they now stand.

    Called by the services that change those facts (quote terms, prices, cost lines), inside their transaction.
    """
    with transaction.atomic():
        quote = Quote.objects.select_related("gpu").get(pk=quote.pk)  # fresh: no stale prefetched prices
        facts = prefill.quote_facts(quote)
        questions = {q.code: q for q in ChecklistQuestion.objects.filter(code__in=facts, active=True)}
        answers = {
            answer.question.code: answer
            for answer in ChecklistAnswer.objects.select_for_update()
            .filter(quote=quote, question__code__in=facts)
            .select_related("question")
        }
        result = []
        for code, fact in facts.items():
            question = questions.get(code)
            answer = answers.get(code)
            if question is None or (answer is not None and answer.origin != AnswerOrigin.QUOTE):
                continue
            if not fact.complete:
                if answer is not None:
                    before = model_snapshot(answer)
                    answer.delete()
                    answer.pk = before["id"]
                    record_change(
                        actor=actor, instance=answer, action=Action.DELETE, before=before, team=quote.team,
                        message=_("The quote no longer states it."),
                    )
                continue
            if answer is not None and (answer.status, answer.value) == (AnswerStatus.ANSWERED, fact.value):
                result.append(answer)
                continue
            values = _answer_values(
                actor=actor, status=AnswerStatus.ANSWERED, value=fact.value, evidence="", evidence_document=None,
                origin=AnswerOrigin.QUOTE,
            )
            result.append(_answer_write(actor=actor, quote=quote, question=question, values=values))
        return result


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
