"""The actuals API under /api/v1/actuals/records/<pk>/: read the current actuals of a decision record and the
comparison with the decision (any role of the team), and send a new version (finance, platform, admin) as a sheet
(multipart: `file`, `source`) or as a JSON list of days (`source`, `days`) — for a cloud billing export or an
observability query a team runs itself. One bad day and nothing is saved: the 400 names each row and column."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.exceptions import ValidationError as ApiValidationError
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.permissions import HasAnyRole
from apps.actuals import selectors, services
from apps.actuals.forms import MAX_UPLOAD_BYTES
from apps.common import money
from apps.decisions import selectors as decision_selectors


class DaySerializer(serializers.Serializer):
    """One day in the documented format (docs/actuals.md); numbers as strings keep every digit."""

    date = serializers.DateField()
    gpu_hours = serializers.DecimalField(max_digits=24, decimal_places=6, coerce_to_string=True)
    outputs = serializers.DecimalField(max_digits=24, decimal_places=6, coerce_to_string=True,
                                       help_text=_("Requests or outputs produced, in the decision's unit."))
    accepted_outputs = serializers.DecimalField(max_digits=24, decimal_places=6, coerce_to_string=True)
    spend = serializers.DecimalField(max_digits=24, decimal_places=6, coerce_to_string=True,
                                     help_text=_("Everything paid for the day, in the decision's currency."))
    currency = serializers.CharField(max_length=3)


class DaysUploadSerializer(serializers.Serializer):
    source = serializers.CharField(help_text=_("Where the figures come from: the billing export, the query."))
    days = DaySerializer(many=True)


class FileUploadSerializer(serializers.Serializer):
    source = serializers.CharField(help_text=_("Where the figures come from: the billing export, the query."))
    file = serializers.FileField(help_text=_("A .csv or .xlsx sheet in the documented format."))


class VersionSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    channel = serializers.CharField()
    file_name = serializers.CharField()
    source = serializers.CharField()
    row_count = serializers.IntegerField()
    currency = serializers.CharField()
    first_day = serializers.DateField()
    last_day = serializers.DateField()
    uploaded_by = serializers.CharField(source="uploaded_by.username")
    uploaded_at = serializers.DateTimeField()


def _exact(value):
    """Exact and without trailing zeros (a stored 351.500000 is "351.5")."""
    return money.exact(value.normalize()) if value is not None else None


def actuals_data(user, record) -> dict:
    """The record's actuals as the API returns them: exact decimal strings, unrounded."""
    view = selectors.planned_against_actual(user, record)
    planned, report = view.planned, view.report
    data = {
        "record": record.pk,
        "reference": record.reference,
        "planned": None,
        "current": None,
        "comparison": None,
        "versions": VersionSerializer(view.uploads, many=True).data,
    }
    if planned is not None:
        data["planned"] = {
            "candidate_id": planned.candidate_id,
            "label": planned.label,
            "currency": planned.currency,
            "unit": planned.unit,
            "cost_per_accepted_output": _exact(planned.cost_per_accepted_output),
            "accepted_outputs_per_period": _exact(planned.accepted_outputs),
            "period_hours": _exact(planned.period_hours),
            "gpu_hours_per_period": _exact(planned.gpu_hours),
            "idle_share": _exact(planned.idle_share),
            "quality_acceptance": _exact(planned.quality_acceptance),
        }
    if view.current is not None:
        data["current"] = {
            **VersionSerializer(view.current).data,
            "days": [
                {"date": day.date.isoformat(), "gpu_hours": _exact(day.gpu_hours), "outputs": _exact(day.outputs),
                 "accepted_outputs": _exact(day.accepted_outputs), "spend": _exact(day.spend),
                 "currency": day.currency}
                for day in selectors.days_of(view.current)
            ],
        }
    if report is not None:
        actual = report.actual
        data["comparison"] = {
            "version": view.current.version,
            "days": actual.days,
            "spend": _exact(actual.spend),
            "gpu_hours": _exact(actual.gpu_hours),
            "outputs": _exact(actual.outputs),
            "accepted_outputs": _exact(actual.accepted_outputs),
            "planned_cost_per_accepted_output": _exact(planned.cost_per_accepted_output),
            "actual_cost_per_accepted_output": _exact(actual.cost_per_accepted_output),
            "drift": _exact(report.drift),
            "threshold_percent": _exact(report.threshold_percent),
            "beyond_threshold": report.beyond_threshold,
            "planned_gpu_hours_for_days": _exact(report.planned_gpu_hours_for_days),
            "gpu_hours_ratio": _exact(report.gpu_hours_ratio),
            "planned_idle_share": _exact(planned.idle_share),
            "actual_idle_share": _exact(report.actual_idle_share),
            "faster_than_planned": report.faster_than_planned,
            "actual_acceptance": _exact(actual.acceptance),
        }
    return data


ACTUALS_RESPONSE = inline_serializer(
    name="RecordActuals",
    fields={
        "record": serializers.IntegerField(),
        "reference": serializers.CharField(),
        "planned": serializers.DictField(allow_null=True, help_text=_("The decision's figures, from its snapshot.")),
        "current": serializers.DictField(allow_null=True, help_text=_("The current version with its days.")),
        "comparison": serializers.DictField(
            allow_null=True, help_text=_("Planned against actual (docs/actuals.md states each rule).")
        ),
        "versions": VersionSerializer(many=True),
    },
)


class RecordActualsView(APIView):
    permission_classes = [HasAnyRole]
    parser_classes = [JSONParser, MultiPartParser, FormParser]

    @extend_schema(
        parameters=[OpenApiParameter("pk", OpenApiTypes.INT, OpenApiParameter.PATH)],
        responses=ACTUALS_RESPONSE,
        summary="Planned against actual",
        description="The decision's figures, the current actuals with their days, the comparison and every version.",
    )
    def get(self, request, pk: int):
        record = decision_selectors.record_get(request.user, pk)
        return Response(actuals_data(request.user, record))

    @extend_schema(
        parameters=[OpenApiParameter("pk", OpenApiTypes.INT, OpenApiParameter.PATH)],
        request={"application/json": DaysUploadSerializer, "multipart/form-data": FileUploadSerializer},
        responses={201: ACTUALS_RESPONSE},
        summary="Send a new version of the actuals",
        description=(
            "Finance, platform and admin; accepted records only (409 otherwise). All or nothing: a 400 lists every "
            "bad row and column in `errors` ([{row, column, code, message}]) and saves nothing. Drift beyond the "
            "team's revisit percentage flags the record and notifies its people."
        ),
        examples=[OpenApiExample(
            "Two days", request_only=True, media_type="application/json",
            value={"source": "AWS CUR export, January 2026", "days": [
                {"date": "2026-01-01", "gpu_hours": "72", "outputs": "1500000", "accepted_outputs": "1480000",
                 "spend": "252.00", "currency": "USD"},
                {"date": "2026-01-02", "gpu_hours": "72", "outputs": "1490000", "accepted_outputs": "1475000",
                 "spend": "252.00", "currency": "USD"}]},
        )],
    )
    def post(self, request, pk: int):
        record = decision_selectors.record_get(request.user, pk)
        if not services.may_upload(request.user):
            raise PermissionDenied(_("Only the finance, platform and admin roles send actuals."))
        source = request.data.get("source", "")
        upload = request.FILES.get("file")
        try:
            if upload is not None:
                if upload.size > MAX_UPLOAD_BYTES:
                    raise ApiValidationError({"file": [_("The file is over %(size)s MB.")
                                                       % {"size": MAX_UPLOAD_BYTES // (1024 * 1024)}]})
                services.actuals_upload_file(actor=request.user, record=record, name=upload.name,
                                             content=upload.read(), source=source)
            elif "days" in request.data:
                services.actuals_upload_items(actor=request.user, record=record, items=request.data.get("days"),
                                              source=source)
            else:
                raise ApiValidationError(
                    {"days": [_("Send `days` (a JSON list) or `file` (a .csv or .xlsx sheet).")]}
                )
        except services.ActualsRejected as rejected:
            # Answered here so that `errors` keeps its row numbers as numbers (DRF's errors are all text).
            body = {field: list(messages) for field, messages in rejected.message_dict.items()}
            return Response({**body, **rejected.details}, status=status.HTTP_400_BAD_REQUEST)
        record.refresh_from_db()
        return Response(actuals_data(request.user, record), status=status.HTTP_201_CREATED)
