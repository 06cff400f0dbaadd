"""Agent API, job part: claim, start, lease, events, artifacts, finish, offline (docs/agent-protocol.md §3.3–3.9)."""

from __future__ import annotations

from urllib.parse import unquote

from django.utils import timezone
from django.utils.translation import gettext as _
from rest_framework import serializers
from rest_framework.response import Response

from apps.agent_api.base import (
    MAX_INT32,
    AgentAPIView,
    parse_json_object,
    read_body,
    validated,
    validation_error,
)
from apps.agent_api.node_views import KindField
from apps.benchmarks import services
from apps.benchmarks.models import ResultStatus
from apps.fleet import protocol
from apps.fleet.conf import protocol_settings
from apps.fleet.errors import ProtocolError

JOB_TOKEN_HEADER = "HTTP_X_JOB_TOKEN"  # noqa: S105 (a header name)


def _has_control_characters(text: str) -> bool:
    """NUL (which PostgreSQL cannot store) and the other C0/C1 controls and lone surrogates: never in a file name."""
    return any(ord(character) < 32 or 127 <= ord(character) < 160 or 0xD800 <= ord(character) <= 0xDFFF
               for character in text)


class TimestampField(serializers.Field):
    default_error_messages = {"invalid": "Use an RFC 3339 timestamp with a time zone, e.g. 2025-01-31T12:00:00.000Z."}

    def to_internal_value(self, data):
        try:
            return protocol.parse_timestamp(data)
        except (TypeError, ValueError):
            self.fail("invalid")

    def to_representation(self, value):
        return protocol.format_timestamp(value)


class ObjectOrNullField(serializers.Field):
    """A JSON object, or null when allowed (DictField turns other types into a generic message)."""

    default_error_messages = {"invalid": "Must be a JSON object."}

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            self.fail("invalid")
        return data


class ClaimInput(serializers.Serializer):
    job_kinds = serializers.ListField(child=KindField(), allow_empty=True, max_length=100)
    operations = serializers.ListField(child=KindField(), allow_empty=True, max_length=100, required=False,
                                       default=list)
    wait_s = serializers.FloatField(min_value=0, max_value=30, required=False, default=0)


class StartInput(serializers.Serializer):
    attempt = serializers.IntegerField(min_value=1, max_value=MAX_INT32)
    started_at = TimestampField(required=False)
    inventory = ObjectOrNullField(required=False, allow_null=True, default=None)


class LeaseInput(serializers.Serializer):
    attempt = serializers.IntegerField(min_value=1, max_value=MAX_INT32)
    progress = serializers.FloatField(min_value=0, max_value=1, required=False, allow_null=True, default=None)


class EventInput(serializers.Serializer):
    kind = KindField()
    ts = TimestampField()
    data = ObjectOrNullField()


class EventsInput(serializers.Serializer):
    attempt = serializers.IntegerField(min_value=1, max_value=MAX_INT32)
    events = serializers.ListField(child=serializers.JSONField(), allow_empty=False)


class ArtifactReference(serializers.Serializer):
    sha256 = serializers.RegexField(protocol.SHA256_PATTERN)
    name = serializers.CharField(max_length=200)
    media_type = serializers.CharField(max_length=100, required=False, default="application/octet-stream")
    size = serializers.IntegerField(min_value=0, max_value=2**63 - 1, required=False)


class FinishInput(serializers.Serializer):
    attempt = serializers.IntegerField(min_value=1, max_value=MAX_INT32)
    status = serializers.ChoiceField(choices=ResultStatus.values)
    started_at = TimestampField(required=False, allow_null=True, default=None)
    finished_at = TimestampField()
    result = ObjectOrNullField(allow_null=True, required=False, default=None)
    artifacts = ArtifactReference(many=True, required=False, default=list)
    error = ObjectOrNullField(allow_null=True, required=False, default=None)
    event_count = serializers.IntegerField(min_value=0, max_value=MAX_INT32, required=False, default=0)
    agent_version = serializers.CharField(max_length=40, required=False, allow_blank=True, default="")


class OfflineInput(serializers.Serializer):
    offline_run_id = serializers.RegexField(r"^[A-Za-z0-9_-]{1,64}$")
    kind = KindField()
    spec = ObjectOrNullField()
    started_at = TimestampField(required=False, allow_null=True, default=None)
    agent_version = serializers.CharField(max_length=40, required=False, allow_blank=True, default="")


def claim_body(claim: services.Claim, cancel_requested: bool = False) -> dict:
    job = claim.job
    return {
        "job": {"id": str(job.pk), "kind": job.kind, "spec": job.spec, "spec_sha256": job.spec_sha256,
                "created_at": protocol.format_timestamp(job.created_at)},
        "attempt": claim.attempt.number,
        "job_token": claim.job_token,
        "lease": claim.lease.as_dict(),
        "cancel_requested": cancel_requested or job.cancel_requested,
        **_group_body(claim.group),
    }


def _group_body(group: dict | None) -> dict:
    return {"group": group} if group is not None else {}


class ClaimView(AgentAPIView):
    def post(self, request):
        data = self.json_body(ClaimInput)
        claim = services.job_claim(agent=self.agent, job_kinds=data["job_kinds"], operations=data["operations"],
                                   client_address=request.META.get("REMOTE_ADDR") or None)
        if claim is None:
            return Response(status=204)
        return Response(claim_body(claim))


class OfflineJobView(AgentAPIView):
    def post(self, request):
        data = self.json_body(OfflineInput)
        claim, created = services.offline_job_create(agent=self.agent, offline_run_id=data["offline_run_id"],
                                                     kind=data["kind"], spec=data["spec"])
        return Response({**claim_body(claim), "offline": True}, status=201 if created else 200)


class JobCallView(AgentAPIView):
    """A /jobs/{id}/… call: the agent token, then the job (404), then the job token (403)."""

    def attempt_for(self, job_id: str):
        return services.authorise_job_call(agent=self.agent, job_id=job_id,
                                           job_token=self.request.META.get(JOB_TOKEN_HEADER, "").strip())


def _state_body(state: services.AttemptState) -> dict:
    return {"lease": state.lease.as_dict(), "cancel_requested": state.cancel_requested, **_group_body(state.group)}


class StartView(JobCallView):
    def post(self, request, job_id: str):
        attempt = self.attempt_for(job_id)
        data = self.json_body(StartInput)
        state = services.attempt_start(attempt=attempt, number=data["attempt"], inventory=data["inventory"])
        return Response({"job_id": str(attempt.job_id), "attempt": attempt.number, "status": "running",
                         **_state_body(state)})


class LeaseView(JobCallView):
    def post(self, request, job_id: str):
        attempt = self.attempt_for(job_id)
        data = self.json_body(LeaseInput)
        state = services.attempt_renew_lease(attempt=attempt, number=data["attempt"], progress=data["progress"])
        return Response({**_state_body(state), "cancel_reason": state.cancel_reason})


class EventsView(JobCallView):
    def post(self, request, job_id: str):
        attempt = self.attempt_for(job_id)
        raw_seq = request.query_params.get("seq", "")
        if not (raw_seq.isascii() and raw_seq.isdigit()) or int(raw_seq) > MAX_INT32:
            raise validation_error({"seq": [_("The query parameter seq must be an integer from 0 to %(max)d.")
                                            % {"max": MAX_INT32}]})
        data = self.json_body(EventsInput)
        limit = protocol_settings().max_events_per_batch
        if len(data["events"]) > limit:
            raise ProtocolError(413, "too_many_events",
                                _("%(count)d events in one batch; the limit is %(limit)d.")
                                % {"count": len(data["events"]), "limit": limit}, extra={"limit": limit})
        events, errors = [], {}
        for index, raw in enumerate(data["events"]):
            event = EventInput(data=raw) if isinstance(raw, dict) else None
            if event is None:
                errors[f"events[{index}]"] = [_("Each event must be a JSON object.")]
            elif not event.is_valid():
                for field, messages in event.errors.items():
                    errors[f"events[{index}].{field}"] = [str(message) for message in messages]
            else:
                events.append(event.validated_data)
        if not errors and int(raw_seq) + len(events) - 1 > MAX_INT32:
            errors["seq"] = [_("The batch would number events past %(max)d.") % {"max": MAX_INT32}]
        if errors:
            raise validation_error(errors)
        outcome = services.events_store(attempt=attempt, number=data["attempt"], first_seq=int(raw_seq),
                                        events=events)
        return Response({"stored": outcome.stored, "duplicates": outcome.duplicates, "next_seq": outcome.next_seq})


class ArtifactView(JobCallView):
    def put(self, request, job_id: str, sha256: str):
        attempt = self.attempt_for(job_id)
        if not protocol.SHA256_PATTERN.match(sha256):
            raise validation_error({"sha256": [_("Use 64 lowercase hexadecimal characters.")]})
        try:
            name = unquote(request.META.get("HTTP_X_ARTIFACT_NAME", ""), errors="strict")
        except UnicodeDecodeError:
            name = ""
        # Checked before a byte is stored: a name the database refuses would leave the file without its row.
        if (not name or len(name) > 200 or "/" in name or "\\" in name or name in {".", ".."}
                or _has_control_characters(name)):
            raise validation_error({"X-Artifact-Name": [
                _("Give the file name, percent-encoded, at most 200 characters, without '/' or control characters.")
            ]})
        media_type = (request.META.get("CONTENT_TYPE") or "application/octet-stream").split(";")[0].strip()[:100]
        if _has_control_characters(media_type):
            raise validation_error({"Content-Type": [_("The media type holds control characters.")]})
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or "")
        except ValueError:
            raise ProtocolError(411, "length_required", _("Send the artifact with a Content-Length.")) from None
        stored = services.artifact_store(attempt=attempt, sha256=sha256, name=name, media_type=media_type,
                                         stream=request._request, declared_size=declared)
        artifact = stored.artifact
        return Response({"sha256": artifact.sha256, "size": artifact.size, "created": stored.created},
                        status=201 if stored.created else 200)


class FinishView(JobCallView):
    def post(self, request, job_id: str):
        attempt = self.attempt_for(job_id)
        key = request.META.get("HTTP_IDEMPOTENCY_KEY", "")
        if not protocol.IDEMPOTENCY_KEY_PATTERN.match(key):
            raise validation_error({"Idempotency-Key": [_("Send 1 to 64 characters from A–Z, a–z, 0–9, _ and -.")]})
        raw = read_body(request, protocol_settings().max_body_bytes)
        payload = validated(FinishInput, parse_json_object(raw))
        reply = services.attempt_finish(attempt=attempt, idempotency_key=key, raw_body=raw, payload=payload,
                                        now=timezone.now())
        response = Response(reply.body, status=reply.status_code)
        if reply.replayed:
            response["Idempotent-Replayed"] = "true"
        return response
