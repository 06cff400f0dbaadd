"""Browser forms of the quotes app. They only collect and type-check input; the services hold the rules."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from apps.catalog.models import GpuModel
from apps.common.forms import add_service_errors
from apps.quotes.checklist_prefill import QuoteFacts
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
    Vendor,
)
from apps.quotes.services import (
    COST_LINE_FIELDS,
    QUOTE_COMMERCIAL_FIELDS,
    QUOTE_HARDWARE_FIELDS,
    QUOTE_OFFER_FIELDS,
    QUOTE_OWNING_FIELDS,
    QUOTE_TERM_FIELDS,
    VENDOR_FIELDS,
    AnswerInput,
)
from apps.workloads.models import WorkloadSummary

DATETIME_LOCAL = "%Y-%m-%dT%H:%M"


def mark_data_choices(form: forms.BaseForm, *names: str) -> None:
    """Choices that are data (vendor names, GPU names, currency codes) are not translated: translate="no"."""
    for name in names:
        form.fields[name].widget.attrs["translate"] = "no"


class DateInput(forms.DateInput):
    input_type = "date"

    def __init__(self, attrs=None):
        super().__init__(attrs=attrs, format="%Y-%m-%d")


class DateTimeLocalInput(forms.DateTimeInput):
    input_type = "datetime-local"

    def __init__(self, attrs=None):
        super().__init__(attrs=attrs, format=DATETIME_LOCAL)


class ServiceModelForm(forms.ModelForm):
    """A ModelForm used for its fields only: a service builds, validates (full_clean) and saves the instance."""

    def _post_clean(self):
        # ModelForm would build and full_clean() an instance here; the service does that once, with its own rules.
        return


class VendorForm(ServiceModelForm):
    website = forms.URLField(label=_("website"), max_length=500, required=False, assume_scheme="https")

    class Meta:
        model = Vendor
        fields = list(VENDOR_FIELDS)
        widgets = {"notes": forms.Textarea(attrs={"rows": 3})}


#: The quote form's fieldsets, in order: (legend, field names).
QUOTE_FIELDSETS = [
    (_("Offer"), QUOTE_OFFER_FIELDS),
    (_("Hardware and topology"), QUOTE_HARDWARE_FIELDS),
    (_("Commercial terms"), QUOTE_COMMERCIAL_FIELDS),
    (_("Owning (purchase quotes)"), QUOTE_OWNING_FIELDS),
    (_("Notes"), ("notes",)),
]


class QuoteForm(ServiceModelForm):
    class Meta:
        model = Quote
        fields = list(QUOTE_TERM_FIELDS)
        widgets = {
            "placement": forms.Textarea(attrs={"rows": 2}),
            "cancellation_terms": forms.Textarea(attrs={"rows": 2}),
            "notes": forms.Textarea(attrs={"rows": 3}),
        }

    def __init__(self, *args, team, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["vendor"].queryset = Vendor.objects.for_team(team)
        self.fields["gpu"].queryset = GpuModel.objects.all()
        self.fields["currency"].initial = team.reporting_currency
        mark_data_choices(self, "vendor", "gpu", "currency")

    def fieldsets(self):
        return [(legend, [self[name] for name in names]) for legend, names in QUOTE_FIELDSETS]


class PriceVersionForm(ServiceModelForm):
    class Meta:
        model = PriceVersion
        fields = [
            "component",
            "amount",
            "currency",
            "source_kind",
            "source_reference",
            "document",
            "observed_at",
            "valid_until",
            "note",
        ]
        widgets = {"observed_at": DateTimeLocalInput(), "valid_until": DateInput()}

    def __init__(self, *args, quote: Quote, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["document"].queryset = QuoteDocument.objects.filter(quote=quote)
        self.fields["currency"].initial = quote.currency
        self.fields["currency"].required = False
        self.fields["observed_at"].initial = timezone.localtime().replace(second=0, microsecond=0)
        self.fields["observed_at"].input_formats = [DATETIME_LOCAL, "%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S"]
        mark_data_choices(self, "currency", "document")
        self.fields["component"].choices = [
            (value, label) for value, label in PriceComponent.choices if value in applicable_components(quote)
        ]
        self.fields["document"].help_text = _("A document already attached to this quote, or upload the file below.")
        # The vendor's file, uploaded with the price that cites it (services.price_record_citing_upload).
        self.fields["file"] = forms.FileField(
            label=_("Vendor's file"),
            required=False,
            help_text=_(
                "PDF, XLSX, CSV or EML. Attached to the quote and cited by this price, both saved together or neither."
            ),
        )

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("file") and cleaned.get("document"):
            self.add_error("file", _("Either upload the vendor's file or pick a document already attached, not both."))
        return cleaned

    def service_values(self) -> tuple[dict, object]:
        """(price_record's arguments, the uploaded file or None)."""
        values = dict(self.cleaned_data)
        upload = values.pop("file", None)
        values["currency"] = values.get("currency") or None
        return values, upload


def applicable_components(quote: Quote) -> list[str]:
    """The priced items that make sense for this kind of quote."""
    if quote.is_purchase:
        return [
            PriceComponent.LIST_PRICE,
            PriceComponent.CONTRACTED_PRICE,
            PriceComponent.SPARES_PER_NODE,
            PriceComponent.MAINTENANCE_PER_NODE_YEAR,
            PriceComponent.ENERGY_PER_KWH,
            PriceComponent.COLOCATION_PER_KW_MONTH,
        ]
    base = [PriceComponent.LIST_PRICE, PriceComponent.CONTRACTED_PRICE]
    if quote.price_unit == "million_tokens":
        base = [PriceComponent.INPUT_TOKENS, PriceComponent.OUTPUT_TOKENS]
    return [*base, PriceComponent.OVERAGE_RATE, PriceComponent.MINIMUM_COMMITMENT]


class CostLineForm(ServiceModelForm):
    class Meta:
        model = CostLine
        # Who estimated is the person entering the line: the service sets it.
        fields = [name for name in COST_LINE_FIELDS if name != "estimated_by"]
        widgets = {"observed_at": DateTimeLocalInput()}

    def __init__(self, *args, quote: Quote, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["candidate"].queryset = Candidate.objects.filter(quote=quote)
        self.fields["currency"].initial = quote.currency
        self.fields["currency"].required = False
        self.fields["observed_at"].input_formats = [DATETIME_LOCAL, "%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S"]
        self.fields["estimate_reason"].help_text = _("For an estimate (no source): why this figure.")
        mark_data_choices(self, "candidate", "currency")

    def service_values(self) -> dict:
        values = dict(self.cleaned_data)
        if not values.get("currency"):
            values.pop("currency", None)
        return values


class DocumentForm(forms.Form):
    file = forms.FileField(label=_("File"), help_text=_("PDF, XLSX, CSV or EML."))
    description = forms.CharField(label=_("Description"), max_length=300, required=False)


class AnswerForm(forms.Form):
    """One checklist question's answer; the form's prefix is the question's code.

    `answer` is the stored answer (None when there is none); `suggestion` the quote's facts for a question that the
    quote answers only in part (apps/quotes/checklist_prefill.py), offered as the initial answer.
    """

    status = forms.ChoiceField(
        label=_("Status"),
        choices=[("", _("Not answered yet")), *AnswerStatus.choices],
        required=False,
    )
    value = forms.CharField(
        label=_("Answer"), widget=forms.Textarea(attrs={"rows": 2, "translate": "no"}), required=False
    )
    evidence = forms.CharField(label=_("Evidence"), max_length=500, required=False)
    evidence_document = forms.ModelChoiceField(
        label=_("Evidence document"), queryset=QuoteDocument.objects.none(), required=False
    )

    def __init__(
        self, *args, question: ChecklistQuestion, quote: Quote, answer: ChecklistAnswer | None = None,
        suggestion: QuoteFacts | None = None, **kwargs,
    ):
        if answer is not None:
            kwargs["initial"] = {
                "status": answer.status,
                "value": answer.value,
                "evidence": answer.evidence,
                "evidence_document": answer.evidence_document_id,
            }
        elif suggestion is not None and suggestion.value:
            kwargs["initial"] = {"value": suggestion.value}
        super().__init__(*args, **kwargs)
        self.question = question
        self.answer = answer
        self.suggestion = suggestion if answer is None and suggestion is not None and suggestion.value else None
        self.fields["evidence_document"].queryset = QuoteDocument.objects.filter(quote=quote)
        mark_data_choices(self, "evidence_document")

    @property
    def from_quote(self) -> bool:
        return self.answer is not None and self.answer.origin == AnswerOrigin.QUOTE

    @property
    def missing_facts(self) -> str:
        return ", ".join(self.suggestion.missing) if self.suggestion else ""

    def answer_input(self) -> AnswerInput | None:
        """The answer to save, or None when the question is left unanswered (no status)."""
        data = self.cleaned_data
        if not data.get("status"):
            return None
        return AnswerInput(
            question=self.question,
            status=data["status"],
            value=data.get("value") or "",
            evidence=data.get("evidence") or "",
            evidence_document=data.get("evidence_document"),
        )

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("status") == AnswerStatus.ANSWERED and not (cleaned.get("value") or "").strip():
            self.add_error("value", _("Write the answer, or mark it not provided or not applicable."))
        return cleaned


class ChecklistFormSet:
    """Every given question's AnswerForm, validated together and saved in one transaction
    (services.checklist_answers_set): all answers or none, each refusal shown on its question's field.

    `sections` are selectors.checklist_sections(quote); `facts` is checklist_prefill.quote_facts(quote).
    """

    def __init__(self, data=None, *, quote: Quote, sections, facts: dict[str, QuoteFacts] | None = None):
        facts = facts or {}
        self.quote = quote
        self.sections = [
            (
                section,
                [
                    AnswerForm(
                        data, prefix=question.code, question=question, quote=quote, answer=answer,
                        suggestion=facts.get(question.code),
                    )
                    for question, answer in section.items
                ],
            )
            for section in sections
        ]

    @property
    def forms(self) -> list[AnswerForm]:
        return [form for _section, forms_ in self.sections for form in forms_]

    def is_valid(self) -> bool:
        return all([form.is_valid() for form in self.forms])  # a list: every form validates, errors on each

    def answer_inputs(self) -> list[AnswerInput]:
        return [answer for form in self.forms if (answer := form.answer_input()) is not None]

    def add_refusal(self, error: ValidationError) -> None:
        """Put a service's refusal on the forms: ChecklistAnswersRefused by question and field, anything else on the
        first form."""
        by_code = {form.question.code: form for form in self.forms}
        per_question = getattr(error, "per_question", None)
        if per_question is None:
            add_service_errors(self.forms[0], error)
            return
        for code, question_error in per_question.items():
            form = by_code.get(code) or self.forms[0]
            add_service_errors(form, question_error)

    @property
    def has_errors(self) -> bool:
        return any(form.errors for form in self.forms)


class ExchangeRateForm(ServiceModelForm):
    class Meta:
        model = ExchangeRate
        fields = ["from_currency", "to_currency", "rate", "source", "as_of"]
        widgets = {"as_of": DateInput()}

    def __init__(self, *args, team, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["to_currency"].initial = team.reporting_currency
        mark_data_choices(self, "from_currency", "to_currency")


class CandidateForm(ServiceModelForm):
    class Meta:
        model = Candidate
        fields = [
            "quote",
            "workload_summary",
            "label",
            "expected_retry_rate",
            "retry_rate_source",
            "quality_acceptance",
            "quality_acceptance_source",
            "spot_rework_hours",
            "spot_rework_source",
            "notes",
        ]
        widgets = {"notes": forms.Textarea(attrs={"rows": 3})}

    def __init__(self, *args, team, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["quote"].queryset = Quote.objects.for_team(team).select_related("vendor")
        self.fields["workload_summary"].queryset = WorkloadSummary.objects.for_team(team).ready()
        self.fields["label"].required = False
        mark_data_choices(self, "quote", "workload_summary")


class ImportForm(forms.Form):
    file = forms.FileField(label=_("Spreadsheet"), help_text=_("CSV (UTF-8) or XLSX, with the template's columns."))
