"""The decision-records API under /api/v1/decisions/records/: list, read, draft and edit records (platform and
admin), propose, withdraw, sign each stage (its own role), start a superseding draft, and read the frozen snapshot
and the exports made from it. Another team's record answers 404; a step the record's state forbids (any change to an
accepted record) answers 409. The views call the same services as the pages.
"""

from __future__ import annotations

from django.http import Http404, HttpResponse
from django.utils.translation import gettext_lazy as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.permissions import HasAnyRole, ReadAnyRoleWritePlatform
from apps.budgets.models import CostCentre
from apps.common.api_fields import ScopedPrimaryKeyRelatedField, TeamChoiceField, TeamMemberField
from apps.comparison import exports
from apps.decisions import selectors, services
from apps.decisions.filters import RecordFilterSet
from apps.decisions.models import ApprovalStage, CapacityModel, DecisionRecord, RevisitFlag, StageKind
from apps.decisions.snapshot import budget_check_of
from apps.quotes.models import Candidate
from apps.workloads.models import WorkloadSummary

# ---------------------------------------------------------------------------------------------------------------
# Serializers


class StageSerializer(serializers.ModelSerializer):
    # The signer and the team as they were named at signing (a later rename changes nothing here).
    reviewer = serializers.SerializerMethodField()
    reviewer_name = serializers.SerializerMethodField()

    class Meta:
        model = ApprovalStage
        fields = ["id", "round", "kind", "position", "status", "reviewer", "reviewer_name", "team_name",
                  "decided_at", "comment", "snapshot_sha256", "withdrawn_at"]
        read_only_fields = fields

    def get_reviewer(self, stage) -> str | None:
        return stage.signer_username or None

    def get_reviewer_name(self, stage) -> str | None:
        return stage.signer_name or None


class FlagSerializer(serializers.ModelSerializer):
    class Meta:
        model = RevisitFlag
        fields = ["id", "reason", "subject", "details", "flagged_at"]


class RecordSerializer(serializers.ModelSerializer):
    """A record in the list: its state, its choice and, once proposed, the chosen option's frozen unit cost."""

    team = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    author = serializers.SlugRelatedField(slug_field="username", read_only=True)
    workload = serializers.SerializerMethodField()
    chosen = serializers.SerializerMethodField()
    effective_unit_cost = serializers.SerializerMethodField()
    revisit_flags = serializers.SerializerMethodField()

    class Meta:
        model = DecisionRecord
        fields = ["id", "reference", "team", "title", "status", "workload", "workload_summary", "chosen_option",
                  "chosen", "capacity_model", "effective_unit_cost", "revisit_flags", "author", "supersedes",
                  "superseded_by", "proposal_round", "snapshot_sha256", "inputs_sha256", "proposed_at",
                  "inputs_changed_at", "decided_at", "created_at"]
        read_only_fields = fields

    def get_reviewer(self, stage) -> str | None:
        return stage.signer_username or None

    def get_reviewer_name(self, stage) -> str | None:
        return stage.signer_name or None

    def get_workload(self, record) -> dict:
        summary = record.workload_summary
        return {"id": summary.pk, "name": summary.name, "version": summary.version}

    def get_chosen(self, record) -> dict | None:
        if record.is_frozen:
            return record.snapshot["record"]["chosen_option"]
        chosen = record.chosen_option
        return {"id": chosen.pk, "label": chosen.label, "kind": str(chosen.kind)} if chosen else None

    def get_effective_unit_cost(self, record) -> dict | None:
        """The chosen option's effective unit cost as frozen (exact decimal string); null for a draft."""
        if not record.is_frozen:
            return None
        comparison = record.snapshot["comparison"]
        chosen = next((item for item in comparison["results"] if item["id"] == comparison["chosen_id"]), None)
        if chosen is None or chosen["row"] is None:
            return None
        return {"amount": chosen["row"]["effective_unit_cost"], "currency": comparison["currency"]}

    def get_revisit_flags(self, record) -> list[dict]:
        flags = getattr(record, "open_flags", None)
        if flags is None:
            flags = selectors.open_flags(record)
        return FlagSerializer(flags, many=True).data


class RecordDetailSerializer(RecordSerializer):
    """One record: its MADR content, the approval trail, and the comparison — from the snapshot once proposed."""

    content = serializers.SerializerMethodField()
    stages = serializers.SerializerMethodField()
    snapshot_matches_hash = serializers.SerializerMethodField()
    comparison = serializers.SerializerMethodField()
    budget_check = serializers.SerializerMethodField()

    class Meta(RecordSerializer.Meta):
        fields = [*RecordSerializer.Meta.fields, "content", "stages", "snapshot_matches_hash", "comparison",
                  "budget_check"]
        read_only_fields = fields

    def get_budget_check(self, record) -> dict | None:
        """The budget check frozen at the proposal (None: a draft, no cost centre, or frozen before budgets)."""
        return budget_check_of(record.snapshot)

    def get_reviewer(self, stage) -> str | None:
        return stage.signer_username or None

    def get_reviewer_name(self, stage) -> str | None:
        return stage.signer_name or None

    def get_content(self, record) -> dict:
        return record.snapshot["record"] if record.is_frozen else selectors.record_content(record)

    def get_stages(self, record) -> list[dict]:
        return StageSerializer(selectors.stages_of(record), many=True).data

    def get_snapshot_matches_hash(self, record) -> bool | None:
        return record.snapshot_matches_hash() if record.is_frozen else None

    def get_comparison(self, record) -> dict:
        return exports.comparison_data(selectors.view_comparison(record))


class RecordWriteSerializer(serializers.Serializer):
    """What a person states in a draft (every field optional on PATCH)."""

    team = TeamChoiceField(help_text=_("Slug of one of your teams (default: your active team)."))
    workload_summary = ScopedPrimaryKeyRelatedField(model=WorkloadSummary, required=False)
    title = serializers.CharField(max_length=200)
    context = serializers.CharField(required=False, allow_blank=True)
    drivers = serializers.CharField(required=False, allow_blank=True)
    chosen_option = ScopedPrimaryKeyRelatedField(model=Candidate, required=False, allow_null=True)
    capacity_model = serializers.ChoiceField(choices=CapacityModel.choices, required=False, allow_blank=True)
    rationale = serializers.CharField(required=False, allow_blank=True)
    consequences = serializers.CharField(required=False, allow_blank=True)
    confirmation_metric = serializers.CharField(required=False, allow_blank=True)
    revisit_on = serializers.DateField(required=False, allow_null=True)
    revisit_triggers = serializers.CharField(required=False, allow_blank=True)
    deciders = TeamMemberField(many=True, required=False)
    consulted = TeamMemberField(many=True, required=False)
    informed = TeamMemberField(many=True, required=False)


class StageDecisionSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=[("approve", _("Approve")), ("reject", _("Reject"))])
    comment = serializers.CharField(required=False, allow_blank=True, help_text=_("Required when rejecting."))


# ---------------------------------------------------------------------------------------------------------------
# Views


@extend_schema(parameters=[OpenApiParameter("id", OpenApiTypes.INT, OpenApiParameter.PATH)])
class RecordViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, mixins.UpdateModelMixin,
    viewsets.GenericViewSet,
):
    """Decision records. Create and update change drafts only; the rest of the lifecycle has its own endpoints."""

    permission_classes = [ReadAnyRoleWritePlatform]
    error_statuses = (409,)  # a write to a record that is no longer a draft (apps.common.api_schema)
    filterset_class = RecordFilterSet
    ordering_fields = ["number", "created_at", "decided_at"]
    ordering = ["-number"]

    def get_queryset(self):
        return selectors.record_list(self.request.user)

    def get_serializer_class(self):
        if self.action in ("create", "update", "partial_update"):
            return RecordWriteSerializer
        return RecordDetailSerializer if self.action == "retrieve" else RecordSerializer

    @extend_schema(request=RecordWriteSerializer, responses={201: RecordDetailSerializer})
    def create(self, request, *args, **kwargs):
        write = RecordWriteSerializer(data=request.data, context={"request": request})
        write.is_valid(raise_exception=True)
        data = dict(write.validated_data)
        team = data.pop("team", None) or getattr(request, "active_team", None)
        if not team:
            raise ValidationError({"team": [_("Name one of your teams.")]})
        summary = data.pop("workload_summary", None)
        if summary is None:
            raise ValidationError({"workload_summary": [_("This field is required.")]})
        record = services.record_create(actor=request.user, team=team, workload_summary=summary, **data)
        return Response(
            RecordDetailSerializer(record, context={"request": request}).data, status=status.HTTP_201_CREATED
        )

    @extend_schema(request=RecordWriteSerializer, responses=RecordDetailSerializer)
    def update(self, request, *args, **kwargs):
        record = self.get_object()
        partial = kwargs.get("partial", False)
        write = RecordWriteSerializer(data=request.data, partial=partial, context={"request": request})
        write.is_valid(raise_exception=True)
        data = dict(write.validated_data)
        data.pop("team", None)
        if data.pop("workload_summary", None) not in (None, record.workload_summary):
            raise ValidationError(
                {"workload_summary": [_("A record keeps its workload version; start a new one.")]}
            )
        record = services.record_update(actor=request.user, record=record, **data)
        return Response(RecordDetailSerializer(record, context={"request": request}).data)


class _RecordAction(APIView):
    permission_classes = [ReadAnyRoleWritePlatform]
    error_statuses = (409,)  # the record's state forbids the step (apps.common.api_schema)

    def record(self, request, pk: int) -> DecisionRecord:
        return selectors.record_get(request.user, pk)


class ProposeSerializer(serializers.Serializer):
    """The cost centre whose budget the record spends and its tags (each optional: what is left out stays)."""

    cost_centre = ScopedPrimaryKeyRelatedField(model=CostCentre, required=False, allow_null=True)
    tags = serializers.ListField(child=serializers.CharField(max_length=40), required=False, max_length=20)


class RecordProposeView(_RecordAction):
    """Freeze the snapshot of every input and open the stages (again, after an input changed). With a cost centre,
    its budget is checked and the check frozen (`budget_check` in the answer): over the budget under a blocking
    policy answers 400 naming the budget and the figures."""

    @extend_schema(request=ProposeSerializer, responses=RecordDetailSerializer)
    def post(self, request, pk: int):
        record = self.record(request, pk)
        choices = ProposeSerializer(data=request.data, context={"request": request})
        choices.is_valid(raise_exception=True)
        record = services.record_propose(actor=request.user, record=record, **choices.validated_data)
        return Response(RecordDetailSerializer(record, context={"request": request}).data)


class RecordWithdrawView(_RecordAction):
    """Take a proposal back to a draft."""

    @extend_schema(request=None, responses=RecordDetailSerializer)
    def post(self, request, pk: int):
        record = services.record_withdraw(actor=request.user, record=self.record(request, pk))
        return Response(RecordDetailSerializer(record, context={"request": request}).data)


class RecordSupersedeView(_RecordAction):
    """Start (or return the open) superseding draft of an accepted record, with today's inputs."""

    @extend_schema(request=None, responses={201: RecordDetailSerializer})
    def post(self, request, pk: int):
        draft = services.record_start_superseding_draft(actor=request.user, record=self.record(request, pk))
        data = RecordDetailSerializer(draft, context={"request": request}).data
        return Response(data, status=status.HTTP_201_CREATED)


class RecordStageView(APIView):
    """Approve or reject one stage (platform review, finance, product), in order, by its own role; never the
    author. 409 when it is not that stage's turn or an input changed (the approvals are then withdrawn)."""

    permission_classes = [HasAnyRole]
    error_statuses = (409,)  # not that stage's turn, or an input changed (apps.common.api_schema)

    @extend_schema(
        parameters=[OpenApiParameter("stage", OpenApiTypes.STR, OpenApiParameter.PATH, enum=StageKind.values)],
        request=StageDecisionSerializer,
        responses=RecordDetailSerializer,
    )
    def post(self, request, pk: int, stage: str):
        if stage not in StageKind.values:
            raise Http404
        record = selectors.record_get(request.user, pk)
        services.check_may_sign(user=request.user, record=record, kind=stage)
        decision = StageDecisionSerializer(data=request.data)
        decision.is_valid(raise_exception=True)
        choice = decision.validated_data
        result = services.stage_decide(
            actor=request.user, record=record, kind=stage,
            approve=choice["decision"] == "approve", comment=choice.get("comment", ""),
        )
        return Response(RecordDetailSerializer(result.record, context={"request": request}).data)


class RecordSnapshotView(APIView):
    """The frozen snapshot exactly as hashed (canonical JSON); X-Content-SHA256 carries its hash. 404 for a draft."""

    permission_classes = [HasAnyRole]

    @extend_schema(responses={(200, "application/json"): OpenApiTypes.OBJECT})
    def get(self, request, pk: int):
        record = selectors.record_get(request.user, pk)
        if not record.is_frozen:
            raise Http404
        response = HttpResponse(record.snapshot_json.encode("utf-8"), content_type="application/json")
        response["X-Content-SHA256"] = record.snapshot_sha256
        return response


class RecordExportView(APIView):
    """The phase-4 exports of the record from its snapshot: `xlsx` (live formulas) or `csv`."""

    permission_classes = [HasAnyRole]

    @extend_schema(
        parameters=[OpenApiParameter("kind", OpenApiTypes.STR, OpenApiParameter.PATH, enum=["xlsx", "csv"])],
        responses={
            (200, "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"): OpenApiTypes.BINARY,
            (200, "text/csv"): OpenApiTypes.BINARY,
        },
    )
    def get(self, request, pk: int, kind: str):
        record = selectors.record_get(request.user, pk)
        comparison = selectors.view_comparison(record)
        if kind == "xlsx":
            response = HttpResponse(
                exports.comparison_xlsx(comparison),
                content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            )
        elif kind == "csv":
            response = HttpResponse(exports.comparison_csv(comparison), content_type="text/csv; charset=utf-8")
        else:
            raise Http404
        response["Content-Disposition"] = f'attachment; filename="{record.reference}.{kind}"'
        return response
