"""Serializers of the user API for plans, jobs, events, artifacts and results."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.benchmarks import verdicts
from apps.benchmarks.measurements import counts_as_measured
from apps.benchmarks.models import Artifact, BenchmarkPlan, FigureMeasurement, Job, JobAttempt, JobEvent, Result


class BenchmarkPlanSerializer(serializers.ModelSerializer):
    class Meta:
        model = BenchmarkPlan
        fields = ["id", "name", "description", "status", "spec", "target_pool", "target_agent", "created_at",
                  "dispatch_requested_at", "dispatched_at"]
        read_only_fields = fields


class JobAttemptSerializer(serializers.ModelSerializer):
    class Meta:
        model = JobAttempt
        fields = ["number", "agent", "status", "claimed_at", "started_at", "lease_expires_at", "ended_at",
                  "progress", "progress_message"]
        read_only_fields = fields


class JobSerializer(serializers.ModelSerializer):
    attempts = JobAttemptSerializer(many=True, read_only=True)

    class Meta:
        model = Job
        fields = ["id", "plan", "position", "kind", "status", "spec", "spec_sha256", "acceptance_criteria",
                  "required_operations", "target_pool", "target_agent", "attempt_count", "max_attempts",
                  "cancel_requested", "cancel_reason", "failure_reason", "offline_run_id", "created_at",
                  "finished_at", "attempts"]
        read_only_fields = fields


class JobEventSerializer(serializers.ModelSerializer):
    attempt = serializers.IntegerField(source="attempt.number", read_only=True)

    class Meta:
        model = JobEvent
        fields = ["attempt", "seq", "kind", "ts", "data", "received_at"]
        read_only_fields = fields


class ArtifactSerializer(serializers.ModelSerializer):
    attempt = serializers.IntegerField(source="attempt.number", read_only=True)
    download_url = serializers.SerializerMethodField()

    class Meta:
        model = Artifact
        fields = ["id", "job", "attempt", "sha256", "name", "media_type", "size", "pinned", "created_at",
                  "purged_at", "download_url"]
        read_only_fields = fields

    def get_download_url(self, artifact: Artifact) -> str | None:
        return None if artifact.purged_at else artifact.get_absolute_url()


class VerdictSerializer(serializers.Serializer):
    """apps/benchmarks/verdicts.py: what the result settles, beyond the agent's own status."""

    outcome = serializers.ChoiceField(
        choices=verdicts.OUTCOMES, read_only=True,
        help_text="succeeded: the figures stand. inconclusive: the run ended but settles nothing (a memory probe at "
                  "the target that timed out or never ran, a throughput run marked invalid or not summarised); "
                  "failed; cancelled; pending: not ingested yet.")
    reason = serializers.CharField(read_only=True, help_text="Why, for inconclusive and failed results (else empty).")


class ResultSerializer(serializers.ModelSerializer):
    attempt = serializers.IntegerField(source="attempt.number", read_only=True)
    is_rehearsal = serializers.BooleanField(source="rehearsal", read_only=True)
    artifacts = serializers.SlugRelatedField(slug_field="sha256", many=True, read_only=True)
    verdict = serializers.SerializerMethodField(
        help_text="The result's verdict, the one the job and candidate pages show: an agent's \"succeeded\" with "
                  "nothing settled reads \"inconclusive\" here, with the reason.")

    class Meta:
        model = Result
        fields = ["id", "job", "attempt", "status", "canonical", "result", "error", "started_at", "finished_at",
                  "event_count", "events_received", "agent_version", "spec", "spec_sha256", "acceptance_criteria",
                  "artifacts", "recorded_at", "ingested_at", "summary", "is_rehearsal", "rehearsal_reasons", "verdict"]
        read_only_fields = fields

    @extend_schema_field(VerdictSerializer)
    def get_verdict(self, result: Result) -> dict[str, str]:
        return verdicts.result_verdict(result).as_dict()


class FigureMeasurementSerializer(serializers.ModelSerializer):
    """Which result measured a candidate's figure, and whether it counts: the comparison, exports and records label
    a rehearsal "rehearsal — not a GPU measurement" from `is_rehearsal`."""

    candidate = serializers.IntegerField(source="figure.candidate_id", read_only=True)
    metric = serializers.CharField(source="figure.metric", read_only=True)
    job = serializers.IntegerField(source="result.job_id", read_only=True)
    is_rehearsal = serializers.BooleanField(source="rehearsal", read_only=True)
    rehearsal_reasons = serializers.ListField(source="result.rehearsal_reasons", read_only=True)
    counts_as_measured = serializers.SerializerMethodField()

    class Meta:
        model = FigureMeasurement
        fields = ["id", "figure", "candidate", "metric", "result", "job", "is_rehearsal", "rehearsal_reasons",
                  "counts_as_measured", "created_at"]
        read_only_fields = fields

    def get_counts_as_measured(self, link: FigureMeasurement) -> bool:
        return counts_as_measured(link.figure)


class CancelSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
