"""The quotes API under /api/v1/quotes/. Every role of the owning team reads; platform and admin write (finance and
product get 403 on writes); a user of another team gets 404. Writes call the same services as the browser.

Prices are never edited: price versions offer list, retrieve and create only. A cost line PUT/PATCH replaces the
line (the old one stays, linked), DELETE marks it removed.
"""

from __future__ import annotations

from django.http import FileResponse, Http404
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.permissions import HasAnyRole, ReadAnyRoleWritePlatform
from apps.accounts.selectors import teams_for_user
from apps.quotes import importing, selectors, services
from apps.quotes.api import serializers
from apps.quotes.filters import CandidateFilterSet, QuoteFilterSet
from apps.quotes.models import (
    ChecklistAnswer,
    ChecklistQuestion,
    CommitmentTier,
    CostLine,
    PriceVersion,
    QuoteDocument,
)


class _ScopedViewSet(viewsets.GenericViewSet):
    """Each subclass's get_queryset() starts from a for_user queryset, so another team's rows are 404."""

    permission_classes = [ReadAnyRoleWritePlatform]


class VendorViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, mixins.UpdateModelMixin,
    _ScopedViewSet,
):
    serializer_class = serializers.VendorSerializer
    ordering_fields = ["name", "created_at"]
    ordering = ["name"]

    def get_queryset(self):
        return selectors.vendors_for(self.request.user)

    def perform_create(self, serializer):
        data = dict(serializer.validated_data)
        team = serializers.team_from(serializer, data)
        serializer.instance = services.vendor_create(actor=self.request.user, team=team, **data)

    def perform_update(self, serializer):
        data = dict(serializer.validated_data)
        data.pop("team", None)
        serializer.instance = services.vendor_update(actor=self.request.user, vendor=serializer.instance, **data)


class QuoteViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, mixins.UpdateModelMixin,
    _ScopedViewSet,
):
    """Quotes with their current prices, freshness, checklist completeness and commitment-policy check."""

    serializer_class = serializers.QuoteSerializer
    filterset_class = QuoteFilterSet
    ordering_fields = ["title", "created_at", "updated_at"]
    ordering = ["vendor__name", "title"]

    def get_queryset(self):
        return selectors.quotes_for(self.request.user)

    def get_serializer_context(self):
        context = super().get_serializer_context()
        context["questions"] = selectors.active_questions()
        context["tiers"] = selectors.policy_tiers()
        return context

    def perform_create(self, serializer):
        data = dict(serializer.validated_data)
        team = serializers.team_from(serializer, data)
        serializer.instance = services.quote_create(actor=self.request.user, team=team, **data)

    def perform_update(self, serializer):
        data = dict(serializer.validated_data)
        data.pop("team", None)
        services.quote_update(actor=self.request.user, quote=serializer.instance, **data)
        serializer.instance = selectors.quote_get(self.request.user, serializer.instance.pk)

    @extend_schema(
        summary="Answer many checklist questions of the quote at once",
        description=(
            "A list of answers, one per question code. All of them are saved, or none: a refused answer makes the "
            "whole request a 400 whose body names each refused question by its code, "
            '`{"interconnect": {"value": ["message"]}, "node-shape": {"question": ["message"]}}`. An answer equal '
            "to the stored one is left as it is (an answer from the quote stays so); any other becomes the "
            "person's answer. Answers that the quote's own terms give are already there (origin `quote`)."
        ),
        request=serializers.BulkAnswerSerializer(many=True),
        responses={200: serializers.BulkAnswersResultSerializer},
    )
    @action(
        detail=True, methods=["post"], url_path="checklist/answers", url_name="checklist-answers",
        parser_classes=[JSONParser],
    )
    def checklist_answers(self, request, pk=None):
        quote = self.get_object()
        items: list[services.AnswerInput] = []
        if not isinstance(request.data, list) or not request.data:
            raise ValidationError({"non_field_errors": [_("Send a non-empty list of answers.")]})
        questions = {question.code: question for question in ChecklistQuestion.objects.all()}
        documents = {document.pk: document for document in QuoteDocument.objects.filter(quote=quote)}
        errors: dict[str, dict] = {}
        seen: set = set()
        for index, raw in enumerate(request.data):
            item = serializers.BulkAnswerSerializer(data=raw)
            code = str(raw.get("question") or f"#{index}") if isinstance(raw, dict) else f"#{index}"
            if not item.is_valid():
                errors[code] = item.errors
                continue
            data = item.validated_data
            question = questions.get(data["question"])
            if question is None:
                errors[code] = {"question": [_("No question has this code.")]}
                continue
            if question in seen:
                errors[code] = {"question": [_("This question is answered twice.")]}
                continue
            seen.add(question)
            document = None
            if data.get("evidence_document") is not None:
                document = documents.get(data["evidence_document"])
                if document is None:
                    errors[code] = {"evidence_document": [_("No document with this id is attached to this quote.")]}
                    continue
            items.append(
                services.AnswerInput(
                    question=question, status=data["status"], value=data.get("value", ""),
                    evidence=data.get("evidence", ""), evidence_document=document,
                )
            )
        if errors:
            raise ValidationError(errors)
        answers = services.checklist_answers_set(actor=request.user, quote=quote, answers=items)
        quote = selectors.quote_get(request.user, quote.pk)
        result = {
            "answers": answers,
            "checklist": selectors.checklist_progress(quote),
            "policy": selectors.policy_check(quote),
        }
        return Response(serializers.BulkAnswersResultSerializer(result, context={"request": request}).data)


class PriceVersionViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, _ScopedViewSet
):
    """Every version of every price. POST adds the next version; nothing is ever updated or deleted.

    A price from the vendor's file: POST it as multipart/form-data with the file in `file`; the file is attached to
    the quote and cited by the price in one transaction (both saved, or neither). Or attach it first
    (POST /api/v1/quotes/documents/) and cite its id in `document`.
    """

    serializer_class = serializers.PriceVersionSerializer
    parser_classes = [JSONParser, MultiPartParser, FormParser]
    filterset_fields = ["quote", "component"]
    ordering_fields = ["observed_at", "entered_at", "number"]
    ordering = ["quote", "component", "-number"]

    def get_queryset(self):
        return PriceVersion.objects.for_user(self.request.user).select_related("quote__team", "entered_by")

    def perform_create(self, serializer):
        data = dict(serializer.validated_data)
        data["currency"] = data.get("currency") or None
        upload = data.pop("file", None)
        if upload is not None:
            serializer.instance = services.price_record_citing_upload(
                actor=self.request.user, upload=upload, **data
            )
        else:
            serializer.instance = services.price_record(actor=self.request.user, **data)


class CostLineViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, mixins.UpdateModelMixin,
    mixins.DestroyModelMixin, _ScopedViewSet,
):
    serializer_class = serializers.CostLineSerializer
    filterset_fields = ["quote", "candidate", "kind"]
    ordering = ["quote", "kind", "pk"]

    def get_queryset(self):
        return CostLine.objects.for_user(self.request.user).select_related("estimated_by")

    def perform_create(self, serializer):
        quote = serializer.validated_data["quote"]
        serializer.instance = services.cost_line_add(
            actor=self.request.user, quote=quote, **serializer.service_values()
        )

    def update(self, request, *args, **kwargs):
        """Replace the line: the answer is the new line (201); the old one stays, marked replaced."""
        line = self.get_object()
        serializer = self.get_serializer(line, data=request.data, partial=kwargs.get("partial", False))
        serializer.is_valid(raise_exception=True)
        if serializer.validated_data.get("quote", line.quote) != line.quote:
            raise ValidationError({"quote": [_("A cost line stays on its quote.")]})
        new_line = services.cost_line_replace(actor=request.user, line=line, **serializer.service_values())
        return Response(self.get_serializer(new_line).data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance):
        services.cost_line_remove(actor=self.request.user, line=instance)


class DocumentViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, _ScopedViewSet):
    serializer_class = serializers.DocumentSerializer
    parser_classes = [MultiPartParser, FormParser]
    filterset_fields = ["quote", "kind"]
    ordering = ["quote", "-uploaded_at"]

    def get_queryset(self):
        return QuoteDocument.objects.for_user(self.request.user)

    def perform_create(self, serializer):
        data = serializer.validated_data
        serializer.instance = services.document_attach(
            actor=self.request.user,
            quote=data["quote"],
            upload=data["file"],
            description=data.get("description", ""),
        )

    # The file as uploaded: its media type is guessed from its name (application/pdf, …; else octet-stream).
    @extend_schema(responses={(200, "*/*"): bytes})
    @action(detail=True, methods=["get"])
    def download(self, request, pk=None):
        document = self.get_object()
        try:
            handle = document.file.open("rb")
        except FileNotFoundError:
            raise Http404 from None
        return FileResponse(handle, as_attachment=True, filename=document.original_name)


class ChecklistQuestionViewSet(viewsets.ReadOnlyModelViewSet):
    """The procurement checklist's questions (global data, edited by admins in the Django admin)."""

    serializer_class = serializers.ChecklistQuestionSerializer
    queryset = ChecklistQuestion.objects.all()
    permission_classes = [HasAnyRole]
    filterset_fields = ["group", "active"]
    ordering = ["group", "position", "code"]


class CommitmentTierViewSet(viewsets.ReadOnlyModelViewSet):
    """The commitment policy: which answers each commitment size requires (global data, edited by admins)."""

    serializer_class = serializers.CommitmentTierSerializer
    queryset = CommitmentTier.objects.prefetch_related("required_questions")
    permission_classes = [HasAnyRole]
    ordering = ["currency", "pk"]


class ChecklistAnswerViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, _ScopedViewSet
):
    """Answers per quote. POST answers a question, or re-answers it (the previous answer stays in the audit log)."""

    serializer_class = serializers.ChecklistAnswerSerializer
    filterset_fields = ["quote", "status"]
    ordering = ["quote", "question__group", "question__position"]

    def get_queryset(self):
        return ChecklistAnswer.objects.for_user(self.request.user).select_related("question", "answered_by")

    def perform_create(self, serializer):
        data = dict(serializer.validated_data)
        serializer.instance = services.checklist_answer_set(actor=self.request.user, **data)


class ExchangeRateViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, _ScopedViewSet):
    serializer_class = serializers.ExchangeRateSerializer
    filterset_fields = ["from_currency", "to_currency"]
    ordering = ["from_currency", "to_currency", "-as_of"]

    def get_queryset(self):
        return selectors.exchange_rates_for(self.request.user)

    def perform_create(self, serializer):
        data = dict(serializer.validated_data)
        team = serializers.team_from(serializer, data)
        serializer.instance = services.exchange_rate_record(actor=self.request.user, team=team, **data)


class StalePriceViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, _ScopedViewSet):
    """The open flags that the beat task `flag_stale_prices` raised."""

    serializer_class = serializers.StalePriceFlagSerializer
    ordering = ["-flagged_at"]

    def get_queryset(self):
        return selectors.open_stale_flags(self.request.user)


class CandidateViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, mixins.UpdateModelMixin,
    _ScopedViewSet,
):
    serializer_class = serializers.CandidateSerializer
    filterset_class = CandidateFilterSet
    ordering = ["label", "pk"]

    def get_queryset(self):
        return selectors.candidates_for(self.request.user)

    def perform_create(self, serializer):
        data = dict(serializer.validated_data)
        team = serializers.team_from(serializer, data)
        quote = data.pop("quote")
        summary = data.pop("workload_summary")
        serializer.instance = services.candidate_create(
            actor=self.request.user, team=team, quote=quote, workload_summary=summary, **data
        )

    def perform_update(self, serializer):
        data = dict(serializer.validated_data)
        for name in ("team", "quote", "workload_summary"):
            data.pop(name, None)
        serializer.instance = services.candidate_update(actor=self.request.user, candidate=serializer.instance, **data)


class ComparisonView(APIView):
    """The comparison table of one team's quotes, in its reporting currency (the team by slug, else the active one)."""

    permission_classes = [HasAnyRole]
    error_statuses = (404,)  # no such team of yours, or no active team (apps.common.api_schema)

    @extend_schema(responses=serializers.ComparisonRowSerializer(many=True))
    def get(self, request):
        team = _team_of(request, request.query_params.get("team"))
        filterset = QuoteFilterSet(
            request.query_params, queryset=selectors.quotes_for(request.user).filter(team=team), request=request
        )
        rows = selectors.comparison_rows(filterset.qs, team)
        return Response(serializers.ComparisonRowSerializer(rows, many=True).data)


class ImportView(APIView):
    """Import quotes from a CSV or XLSX file; all rows or none (400 with the row-by-row errors)."""

    permission_classes = [ReadAnyRoleWritePlatform]
    parser_classes = [MultiPartParser, FormParser, JSONParser]
    error_statuses = (404,)  # no active team (apps.common.api_schema)

    # 201 when every row was imported, 400 with the same report when a row was refused (or the upload's own errors).
    @extend_schema(request=serializers.ImportUploadSerializer,
                   responses={201: serializers.ImportReportSerializer, 400: serializers.ImportReportSerializer})
    def post(self, request):
        upload = serializers.ImportUploadSerializer(data=request.data, context={"request": request})
        upload.is_valid(raise_exception=True)
        team = upload.validated_data.get("team") or _team_of(request, None)
        report = importing.import_quotes(actor=request.user, team=team, upload=upload.validated_data["file"])
        return Response(
            serializers.ImportReportSerializer(report).data,
            status=status.HTTP_201_CREATED if report.ok else status.HTTP_400_BAD_REQUEST,
        )


def _team_of(request, slug: str | None):
    if slug:
        team = teams_for_user(request.user).filter(slug=slug).first()
        if team is None:
            raise Http404
        return team
    team = getattr(request, "active_team", None)
    if not team:
        raise Http404
    return team

