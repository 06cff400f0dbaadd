"""Agent API, fleet part: POST /register and POST /heartbeat (docs/agent-protocol.md §3.1–3.2)."""

from __future__ import annotations

from django.utils import timezone
from django.utils.translation import gettext as _
from rest_framework import serializers
from rest_framework.permissions import BasePermission
from rest_framework.response import Response

from apps.agent_api.base import MAX_INT32, AgentAPIView, validated, validation_error
from apps.fleet import protocol
from apps.fleet.conf import protocol_settings
from apps.fleet.errors import ProtocolError
from apps.fleet.services import agent_heartbeat, agent_register, check_agent_version


class KindField(serializers.RegexField):
    def __init__(self, **kwargs):
        super().__init__(protocol.KIND_PATTERN, max_length=32, **kwargs)


class RegisterInput(serializers.Serializer):
    registration_token = serializers.CharField(max_length=200)
    name = serializers.CharField(max_length=100)
    agent_version = serializers.CharField(max_length=40)
    protocol_version = serializers.IntegerField(min_value=1, max_value=MAX_INT32)
    machine_id = serializers.CharField(max_length=64)
    job_kinds = serializers.ListField(child=KindField(), allow_empty=True, max_length=100)
    operations = serializers.ListField(child=KindField(), allow_empty=True, max_length=100)
    inventory = serializers.DictField()
    advertise_address = serializers.IPAddressField(required=False, allow_null=True, default=None)


class CurrentJobInput(serializers.Serializer):
    id = serializers.CharField(max_length=40)
    attempt = serializers.IntegerField(min_value=1, max_value=MAX_INT32)


class HeartbeatInput(serializers.Serializer):
    agent_version = serializers.CharField(max_length=40)
    state = serializers.ChoiceField(choices=["idle", "busy", "paused", "stopping"])
    current_job = CurrentJobInput(allow_null=True, required=False, default=None)
    job_kinds = serializers.ListField(child=KindField(), allow_empty=True, max_length=100)
    uptime_s = serializers.FloatField(min_value=0, allow_null=True, required=False, default=None)
    spool_pending = serializers.IntegerField(min_value=0, max_value=MAX_INT32, required=False, default=0)
    inventory_sha256 = serializers.RegexField(protocol.SHA256_PATTERN, required=False, allow_blank=True,
                                              allow_null=True, default="")


def _intervals() -> dict[str, int]:
    config = protocol_settings()
    return {"heartbeat_interval_s": config.heartbeat_interval_s, "claim_interval_s": config.claim_interval_s}


class RegistrationCall(BasePermission):
    """register is the one call without an agent token: only a POST gets as far as the registration token check."""

    message = "Agents register with POST and a registration token."

    def has_permission(self, request, view) -> bool:
        return request.method == "POST"


class RegisterView(AgentAPIView):
    authentication_classes: list = []
    permission_classes = [RegistrationCall]
    version_header_required = False

    def post(self, request):
        raw = self.json_body()
        token = raw.get("registration_token")
        if not isinstance(token, str) or not token:
            raise ProtocolError(401, "invalid_registration_token",
                                _("The body must carry the pool's registration token (registration_token)."))
        data = validated(RegisterInput, raw)
        if data["protocol_version"] != 1:
            raise validation_error({"protocol_version": [_("This server speaks protocol version 1.")]})
        check_agent_version(data["agent_version"])
        registration = agent_register(
            registration_token=data["registration_token"],
            name=data["name"],
            agent_version=data["agent_version"],
            protocol_version=data["protocol_version"],
            machine_id=data["machine_id"],
            job_kinds=data["job_kinds"],
            operations=data["operations"],
            inventory=data["inventory"],
            advertise_address=data["advertise_address"],
        )
        agent = registration.agent
        config = protocol_settings()
        body = {
            "agent_id": str(agent.pk),
            "agent_token": registration.agent_token,
            "pool": {"id": str(agent.pool_id), "name": agent.pool.name},
            **_intervals(),
            "lease_interval_s": config.lease_renew_s,
            "min_agent_version": config.min_agent_version,
            "server_time": protocol.format_timestamp(timezone.now()),
            "limits": config.limits(),
        }
        return Response(body, status=201 if registration.created else 200)


class HeartbeatView(AgentAPIView):
    def post(self, request):
        data = self.json_body(HeartbeatInput)
        check_agent_version(data["agent_version"])
        commands = agent_heartbeat(
            agent=self.agent,
            agent_version=data["agent_version"],
            state=data["state"],
            current_job=data["current_job"],
            job_kinds=data["job_kinds"],
            uptime_s=data["uptime_s"],
            spool_pending=data["spool_pending"],
            inventory_sha256=data["inventory_sha256"] or "",
        )
        return Response({"server_time": protocol.format_timestamp(timezone.now()), **_intervals(),
                         "commands": commands})


class UnknownPathView(AgentAPIView):
    """Any other path under the agent API: the JSON 404 of §1.2 for an agent (401 without an agent token)."""

    version_header_required = False

    def http_method_not_allowed(self, request, *args, **kwargs):
        raise ProtocolError(404, "not_found", _("There is no agent API call at this path."))

    def get(self, request, *args, **kwargs):
        return self.http_method_not_allowed(request)

    post = put = patch = delete = get
