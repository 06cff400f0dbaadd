"""Serializers of the quotes API. Money travels as decimal strings ("0.000000123"), never as JSON numbers."""

from __future__ import annotations

from decimal import Decimal

from django.utils.translation import gettext_lazy as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.catalog.models import GpuModel
from apps.common import money
from apps.common.api_fields import ScopedPrimaryKeyRelatedField, TeamChoiceField
from apps.common.fields import ExactDecimalField
from apps.quotes import selectors
from apps.quotes.models import (
    AnswerStatus,
    Candidate,
    ChecklistAnswer,
    ChecklistQuestion,
    CommitmentTier,
    CostLine,
    ExchangeRate,
    PriceVersion,
    Quote,
    QuoteDocument,
    StalePriceFlag,
    Vendor,
)
from apps.quotes.services import CANDIDATE_FIELDS, COST_LINE_FIELDS, QUOTE_TERM_FIELDS
from apps.workloads.models import WorkloadSummary


@extend_schema_field(OpenApiTypes.STR)
class DecimalStringField(serializers.Field):
    """An exact decimal as a string. JSON numbers are refused: a float has already lost digits."""

    default_error_messages = {
        "invalid": _("Send the amount as a decimal string, e.g. \"0.000000123\"."),
        "negative": _("This value cannot be negative."),
    }

    def __init__(self, *, allow_negative: bool = False, **kwargs):
        self.allow_negative = allow_negative
        super().__init__(**kwargs)

    def to_internal_value(self, data) -> Decimal:
        if isinstance(data, bool) or not isinstance(data, str | int):
            self.fail("invalid")
        try:
            value = money.to_decimal(data)
        except money.MoneyError:
            self.fail("invalid")
        if value < 0 and not self.allow_negative:
            self.fail("negative")
        return value

    def to_representation(self, value) -> str:
        return money.canonical(value)


class ServiceModelSerializer(serializers.ModelSerializer):
    """A ModelSerializer whose exact-decimal model fields travel as strings; writes go through services."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        ExactDecimalField: DecimalStringField,
    }

    def build_standard_field(self, field_name, model_field):
        field_class, field_kwargs = super().build_standard_field(field_name, model_field)
        if field_class is DecimalStringField:
            field_kwargs = {
                key: value
                for key, value in field_kwargs.items()
                if key in {"required", "allow_null", "read_only", "label", "help_text", "default"}
            }
        return field_class, field_kwargs


def team_from(serializer, validated) -> object:
    team = validated.pop("team", None) or getattr(serializer.context["request"], "active_team", None)
    if not team:
        raise serializers.ValidationError({"team": [_("Name one of your teams.")]})
    return team


class VendorSerializer(ServiceModelSerializer):
    team = TeamChoiceField()

    class Meta:
        model = Vendor
        fields = ["id", "team", "name", "website", "contact", "notes", "created_at"]
        read_only_fields = ["created_at"]
        validators = []  # uniqueness is the service's (and the database's) job


class PriceVersionSerializer(ServiceModelSerializer):
    quote = ScopedPrimaryKeyRelatedField(model=Quote)
    document = ScopedPrimaryKeyRelatedField(model=QuoteDocument, required=False, allow_null=True)
    currency = serializers.CharField(required=False, allow_blank=True, max_length=3)
    file = serializers.FileField(
        write_only=True,
        required=False,
        help_text=_(
            "The vendor's file (PDF, XLSX, CSV or EML), sent as multipart/form-data: attached to the quote and cited "
            "by this price in one transaction (both saved, or neither). Leave `document` empty then."
        ),
    )
    entered_by = serializers.StringRelatedField(allow_null=True)  # nobody, once the account is gone (SET_NULL)
    freshness = serializers.SerializerMethodField()

    class Meta:
        model = PriceVersion
        fields = [
            "id",
            "quote",
            "component",
            "number",
            "amount",
            "currency",
            "source_kind",
            "source_reference",
            "document",
            "file",
            "observed_at",
            "valid_until",
            "note",
            "entered_by",
            "entered_at",
            "freshness",
        ]
        read_only_fields = ["number", "entered_by", "entered_at"]
        extra_kwargs = {"observed_at": {"required": True, "allow_null": True}}
        validators = []

    @extend_schema_field(OpenApiTypes.STR)
    def get_freshness(self, version: PriceVersion) -> str:
        return selectors.freshness_of(version, stale_after_days=version.quote.team.stale_price_age_days).status.value


class CostLineSerializer(ServiceModelSerializer):
    quote = ScopedPrimaryKeyRelatedField(model=Quote)
    candidate = ScopedPrimaryKeyRelatedField(model=Candidate, required=False, allow_null=True)
    currency = serializers.CharField(required=False, allow_blank=True, max_length=3)
    estimated_by = serializers.StringRelatedField(allow_null=True)  # nobody, once the account is gone (SET_NULL)
    amount = serializers.SerializerMethodField()
    is_current = serializers.BooleanField(read_only=True)

    class Meta:
        model = CostLine
        fields = [
            "id",
            "quote",
            "candidate",
            "kind",
            "description",
            "quantity",
            "unit",
            "rate",
            "amount",
            "currency",
            "period",
            "source_reference",
            "observed_at",
            "estimated_by",
            "estimate_reason",
            "replaced_by",
            "removed_at",
            "is_current",
            "entered_at",
        ]
        read_only_fields = ["replaced_by", "removed_at", "entered_at"]
        validators = []

    @extend_schema_field(OpenApiTypes.STR)
    def get_amount(self, line: CostLine) -> str:
        return money.canonical(line.amount)

    def service_values(self) -> dict:
        values = {name: value for name, value in self.validated_data.items() if name in COST_LINE_FIELDS}
        if not values.get("currency"):
            values.pop("currency", None)
        return values


class DocumentSerializer(serializers.ModelSerializer):
    quote = ScopedPrimaryKeyRelatedField(model=Quote)
    file = serializers.FileField(write_only=True)
    download_url = serializers.SerializerMethodField()

    class Meta:
        model = QuoteDocument
        fields = [
            "id",
            "quote",
            "file",
            "original_name",
            "kind",
            "size_bytes",
            "sha256",
            "description",
            "uploaded_at",
            "download_url",
        ]
        read_only_fields = ["original_name", "kind", "size_bytes", "sha256", "uploaded_at"]

    @extend_schema_field(OpenApiTypes.URI)
    def get_download_url(self, document: QuoteDocument) -> str:
        request = self.context.get("request")
        url = document.get_absolute_url()
        return request.build_absolute_uri(url) if request is not None else url


class ChecklistQuestionSerializer(serializers.ModelSerializer):
    text = serializers.CharField(read_only=True)

    class Meta:
        model = ChecklistQuestion
        fields = ["id", "code", "group", "position", "active", "text", "text_en", "text_fr", "text_id"]


class BulkAnswerSerializer(serializers.Serializer):
    """One answer of POST /api/v1/quotes/quotes/{id}/checklist/answers/."""

    question = serializers.CharField(max_length=60, help_text=_("The question's code, e.g. \"interconnect\"."))
    status = serializers.ChoiceField(choices=AnswerStatus.choices)
    value = serializers.CharField(required=False, allow_blank=True, default="", trim_whitespace=True)
    evidence = serializers.CharField(required=False, allow_blank=True, default="", max_length=500)
    evidence_document = serializers.IntegerField(
        required=False, allow_null=True, default=None, help_text=_("The id of a document attached to this quote.")
    )

    def validate(self, attrs):
        if attrs["status"] == AnswerStatus.ANSWERED and not attrs.get("value"):
            raise serializers.ValidationError(
                {"value": _("Write the answer, or mark it not provided or not applicable.")}
            )
        return attrs


class ChecklistProgressSerializer(serializers.Serializer):
    answered = serializers.IntegerField()
    total = serializers.IntegerField()


class ChecklistAnswerSerializer(serializers.ModelSerializer):
    quote = ScopedPrimaryKeyRelatedField(model=Quote)
    question = serializers.SlugRelatedField(slug_field="code", queryset=ChecklistQuestion.objects.filter(active=True))
    evidence_document = ScopedPrimaryKeyRelatedField(model=QuoteDocument, required=False, allow_null=True)
    status = serializers.ChoiceField(choices=AnswerStatus.choices)
    answered_by = serializers.StringRelatedField(allow_null=True)  # nobody, once the account is gone (SET_NULL)

    class Meta:
        model = ChecklistAnswer
        fields = ["id", "quote", "question", "status", "value", "evidence", "evidence_document", "origin",
                  "answered_by", "answered_at"]
        read_only_fields = ["origin", "answered_by", "answered_at"]
        validators = []


class MissingAnswerSerializer(serializers.Serializer):
    question = serializers.CharField(source="question.code")
    text = serializers.CharField(source="question.text")
    reason = serializers.CharField()


class PolicySerializer(serializers.Serializer):
    met = serializers.BooleanField(source="ok")
    commitment = DecimalStringField()
    currency = serializers.CharField()
    tier = serializers.CharField(source="tier.name", default=None)
    missing = MissingAnswerSerializer(many=True)
    problems = serializers.ListField(child=serializers.CharField())


class BulkAnswersResultSerializer(serializers.Serializer):
    """The answer to a bulk save: the answers sent (as stored), the checklist's progress and the policy check."""

    answers = ChecklistAnswerSerializer(many=True)
    checklist = ChecklistProgressSerializer()
    policy = PolicySerializer()


class QuoteSerializer(ServiceModelSerializer):
    team = TeamChoiceField()
    vendor = ScopedPrimaryKeyRelatedField(model=Vendor)
    gpu = serializers.PrimaryKeyRelatedField(queryset=GpuModel.objects.all(), required=False, allow_null=True)
    current_prices = serializers.SerializerMethodField()
    freshness = serializers.SerializerMethodField()
    checklist = serializers.SerializerMethodField()
    policy = serializers.SerializerMethodField()
    billing_model = serializers.CharField(read_only=True)

    class Meta:
        model = Quote
        fields = [
            "id",
            "team",
            *QUOTE_TERM_FIELDS,
            "billing_model",
            "current_prices",
            "freshness",
            "checklist",
            "policy",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["created_at", "updated_at"]
        validators = []

    def get_current_prices(self, quote: Quote) -> dict:
        prices = selectors.current_prices(quote)
        for version in prices.values():
            version.quote = quote  # the prefetched versions share the quote already loaded: no query per price
        return {
            component: PriceVersionSerializer(version, context=self.context).data
            for component, version in prices.items()
        }

    @extend_schema_field(OpenApiTypes.STR)
    def get_freshness(self, quote: Quote) -> str:
        return selectors.quote_freshness(quote).status.value

    def get_checklist(self, quote: Quote) -> dict:
        progress = selectors.checklist_progress(quote, self.context.get("questions"))
        return {"answered": progress.answered, "total": progress.total}

    @extend_schema_field(PolicySerializer)
    def get_policy(self, quote: Quote) -> dict:
        check = selectors.policy_check(quote, tiers=self.context.get("tiers"))
        return PolicySerializer(check).data


class ExchangeRateSerializer(ServiceModelSerializer):
    team = TeamChoiceField()
    entered_by = serializers.StringRelatedField(allow_null=True)  # nobody, once the account is gone (SET_NULL)

    class Meta:
        model = ExchangeRate
        fields = ["id", "team", "from_currency", "to_currency", "rate", "source", "as_of", "entered_by", "entered_at"]
        read_only_fields = ["entered_by", "entered_at"]
        extra_kwargs = {"as_of": {"required": True, "allow_null": True}}
        validators = []


class CommitmentTierSerializer(serializers.ModelSerializer):
    name = serializers.CharField(read_only=True)
    minimum_commitment = DecimalStringField()
    required_questions = serializers.SlugRelatedField(slug_field="code", many=True, read_only=True)

    class Meta:
        model = CommitmentTier
        fields = ["id", "name", "name_en", "name_fr", "name_id", "minimum_commitment", "currency",
                  "evidence_required", "required_questions"]


class StalePriceFlagSerializer(serializers.ModelSerializer):
    price = PriceVersionSerializer(read_only=True)
    quote = serializers.IntegerField(source="price.quote_id", read_only=True)

    class Meta:
        model = StalePriceFlag
        fields = ["id", "quote", "price", "reason", "flagged_at", "cleared_at"]


class CandidateSerializer(ServiceModelSerializer):
    team = TeamChoiceField()
    quote = ScopedPrimaryKeyRelatedField(model=Quote)
    workload_summary = ScopedPrimaryKeyRelatedField(model=WorkloadSummary)
    label = serializers.CharField(required=False, max_length=200)
    kind = serializers.CharField(read_only=True)
    freshness = serializers.SerializerMethodField()
    platform_labor_warning = serializers.SerializerMethodField()
    cost_lines = serializers.SerializerMethodField()

    class Meta:
        model = Candidate
        fields = [
            "id",
            "team",
            "quote",
            "workload_summary",
            "kind",
            *CANDIDATE_FIELDS,
            "freshness",
            "platform_labor_warning",
            "cost_lines",
            "created_at",
        ]
        read_only_fields = ["created_at"]
        validators = []

    @extend_schema_field(OpenApiTypes.STR)
    def get_freshness(self, candidate: Candidate) -> str:
        return selectors.quote_freshness(candidate.quote).status.value

    @extend_schema_field(OpenApiTypes.BOOL)
    def get_platform_labor_warning(self, candidate: Candidate) -> bool:
        return selectors.platform_labor_missing(candidate)

    @extend_schema_field(CostLineSerializer(many=True))
    def get_cost_lines(self, candidate: Candidate) -> list:
        return CostLineSerializer(selectors.candidate_cost_lines(candidate), many=True, context=self.context).data


class ComparisonRowSerializer(serializers.Serializer):
    quote = serializers.IntegerField(source="quote.pk")
    vendor = serializers.CharField(source="quote.vendor.name")
    title = serializers.CharField(source="quote.title")
    gpu = serializers.SerializerMethodField()
    commercial_model = serializers.CharField(source="quote.commercial_model")
    reporting_currency = serializers.SerializerMethodField()
    list_per_gpu_hour = serializers.SerializerMethodField()
    contracted_per_gpu_hour = serializers.SerializerMethodField()
    input_per_million = serializers.SerializerMethodField()
    output_per_million = serializers.SerializerMethodField()
    missing_exchange_rates = serializers.ListField(source="missing_rates", child=serializers.CharField())
    checklist_answered = serializers.IntegerField(source="progress.answered")
    checklist_total = serializers.IntegerField(source="progress.total")
    policy = PolicySerializer()
    freshness = serializers.CharField(source="freshness.status.value")

    @extend_schema_field(OpenApiTypes.STR)
    def get_gpu(self, row) -> str | None:
        return row.quote.gpu.display_name if row.quote.gpu else None

    @extend_schema_field(OpenApiTypes.STR)
    def get_reporting_currency(self, row) -> str:
        return row.quote.team.reporting_currency

    @staticmethod
    def _amount(converted) -> str | None:
        if converted is None or converted.amount is None:
            return None
        return money.canonical(converted.amount)

    @extend_schema_field(OpenApiTypes.STR)
    def get_list_per_gpu_hour(self, row) -> str | None:
        return self._amount(row.list_per_gpu_hour)

    @extend_schema_field(OpenApiTypes.STR)
    def get_contracted_per_gpu_hour(self, row) -> str | None:
        return self._amount(row.contracted_per_gpu_hour)

    @extend_schema_field(OpenApiTypes.STR)
    def get_input_per_million(self, row) -> str | None:
        return self._amount(row.input_per_million)

    @extend_schema_field(OpenApiTypes.STR)
    def get_output_per_million(self, row) -> str | None:
        return self._amount(row.output_per_million)


class ImportReportSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    rows = serializers.IntegerField()
    created = serializers.SerializerMethodField()
    errors = serializers.SerializerMethodField()

    def get_created(self, report) -> list[int]:
        return [quote.pk for quote in report.created]

    def get_errors(self, report) -> list[dict]:
        return [
            {"row": error.row, "column": error.column, "column_letter": letter, "message": error.message}
            for error, letter in report.located_errors()
        ]


class ImportUploadSerializer(serializers.Serializer):
    file = serializers.FileField()
    team = TeamChoiceField()

