"""What every agent API view shares: agent-token authentication, the version gate, bounded JSON bodies, and the
error body of docs/agent-protocol.md §1.1. The agent views are DRF views, so the default-deny middleware leaves them
to these classes (no session, no CSRF, no user roles)."""

from __future__ import annotations

import logging
from typing import Any

from django.db import OperationalError
from django.utils.translation import gettext as _
from rest_framework import exceptions, serializers
from rest_framework.authentication import BaseAuthentication
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.permissions import BasePermission
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.common import json_input
from apps.fleet.conf import protocol_settings
from apps.fleet.errors import ProtocolError
from apps.fleet.models import Agent
from apps.fleet.services import authenticate_agent, check_agent_version, pool_disabled_error

logger = logging.getLogger(__name__)

AGENT_VERSION_HEADER = "X-Agent-Version"
#: The largest value of the integer columns an agent's numbers land in (PositiveIntegerField on PostgreSQL).
MAX_INT32 = 2**31 - 1


class AgentTokenAuthentication(BaseAuthentication):
    """`Authorization: Bearer dsa_…` → the Agent (request.user), or 401 invalid_agent_token."""

    keyword = "Bearer"

    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        scheme, _space, token = header.partition(" ")
        if scheme != self.keyword or not token.strip():
            raise exceptions.AuthenticationFailed(_("The Authorization header must be 'Bearer dsa_…'."))
        agent = authenticate_agent(token.strip())
        if agent is None:
            raise exceptions.AuthenticationFailed(
                _("This agent token is unknown or was revoked; register the agent again.")
            )
        return agent, token.strip()

    def authenticate_header(self, request) -> str:
        return f'{self.keyword} realm="dossier-agent"'


class IsAgent(BasePermission):
    def has_permission(self, request, view) -> bool:
        return isinstance(request.user, Agent)


class JsonOnlyNegotiation(BaseContentNegotiation):
    """The agent API always answers JSON, whatever Accept says."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


def flatten_errors(errors: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested serializer errors as {"field.path": [messages]}."""
    flat: dict[str, list[str]] = {}
    if isinstance(errors, dict):
        for key, value in errors.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            if key == "non_field_errors" and prefix:
                path = prefix
            flat.update(flatten_errors(value, path))
    elif isinstance(errors, list):
        if all(isinstance(item, str) for item in errors):
            flat.setdefault(prefix or "body", []).extend(str(item) for item in errors)
        else:
            for index, item in enumerate(errors):
                flat.update(flatten_errors(item, f"{prefix}[{index}]"))
    else:
        flat.setdefault(prefix or "body", []).append(str(errors))
    return flat


def validation_error(fields: dict[str, list[str]], detail: str | None = None) -> ProtocolError:
    return ProtocolError(400, "validation_error", detail or _("The request body is not valid."), fields=fields)


def read_body(request, max_bytes: int, *, too_large_code: str = "body_too_large") -> bytes:
    """The raw body, refusing (413) anything over max_bytes before reading it when Content-Length says so."""
    declared = request.META.get("CONTENT_LENGTH") or "0"
    try:
        length = int(declared)
    except ValueError:
        raise ProtocolError(400, "validation_error", _("Content-Length is not a number.")) from None
    if length > max_bytes:
        raise ProtocolError(
            413, too_large_code, _("The body is %(size)d bytes; the limit is %(limit)d.") % {"size": length,
                                                                                            "limit": max_bytes},
            extra={"limit": max_bytes},
        )
    body = request._request.read(max_bytes + 1)
    if len(body) > max_bytes:
        raise ProtocolError(413, too_large_code, _("The body is over the limit of %(limit)d bytes.") %
                            {"limit": max_bytes}, extra={"limit": max_bytes})
    return body


def parse_json_object(body: bytes) -> dict[str, Any]:
    """The one reading of an agent's JSON body (apps/common/json_input.py): a 400 naming the value's path for
    anything a database cannot store (NUL, lone surrogates, NaN/Infinity, nesting past 64, integers past 64 bits),
    so a result, an event or a spec never fails later at the INSERT with a 500."""
    try:
        data = json_input.loads(body)
    except json_input.JsonInputError as error:
        if not error.path:
            raise ProtocolError(400, "validation_error", error.message) from None
        raise validation_error({error.path: [error.message]}) from None
    if not isinstance(data, dict):
        raise ProtocolError(400, "validation_error", _("The body must be a JSON object."))
    return data


def validated(serializer_class: type[serializers.Serializer], data: dict[str, Any]) -> dict[str, Any]:
    serializer = serializer_class(data=data)
    if not serializer.is_valid():
        raise validation_error(flatten_errors(serializer.errors))
    return serializer.validated_data


def error_response(error: ProtocolError) -> Response:
    response = Response(error.body(), status=error.status)
    for name, value in error.headers.items():
        response[name] = value
    return response


class AgentAPIView(APIView):
    """Base of every agent endpoint: agent token required, version checked, JSON in and out."""

    authentication_classes = [AgentTokenAuthentication]
    permission_classes = [IsAgent]
    renderer_classes = [JSONRenderer]
    parser_classes: list = []
    content_negotiation_class = JsonOnlyNegotiation
    throttle_classes: list = []
    #: the agent protocol is specified in docs/agent-protocol.md, not in the user API's OpenAPI schema
    schema = None
    #: register sends its version in the body; every other call must send the header
    version_header_required = True

    @property
    def agent(self) -> Agent:
        return self.request.user

    def initial(self, request, *args, **kwargs):
        # Authenticate first: nothing, not even the minimum version, is answered to a caller without a token.
        super().initial(request, *args, **kwargs)
        version = request.META.get("HTTP_X_AGENT_VERSION", "").strip()
        if version:
            check_agent_version(version)
        elif self.version_header_required:
            raise validation_error(
                {AGENT_VERSION_HEADER: [_("This header is required.")]},
                _("The X-Agent-Version header is missing."),
            )
        if isinstance(request.user, Agent) and not request.user.pool.is_active:
            raise pool_disabled_error(request.user.pool)

    def json_body(self, serializer_class: type[serializers.Serializer] | None = None) -> dict[str, Any]:
        data = parse_json_object(read_body(self.request, protocol_settings().max_body_bytes))
        return validated(serializer_class, data) if serializer_class is not None else data

    def handle_exception(self, exc):
        if isinstance(exc, ProtocolError):
            return error_response(exc)
        if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
            detail = str(exc.detail) if isinstance(exc, exceptions.AuthenticationFailed) else _(
                "This call needs the agent token: Authorization: Bearer dsa_…."
            )
            return error_response(ProtocolError(
                401, "invalid_agent_token", detail,
                headers={"WWW-Authenticate": AgentTokenAuthentication().authenticate_header(self.request)},
            ))
        if isinstance(exc, exceptions.PermissionDenied):
            return error_response(ProtocolError(403, "forbidden", str(exc.detail)))
        if isinstance(exc, exceptions.MethodNotAllowed):
            return error_response(ProtocolError(405, "method_not_allowed", str(exc.detail)))
        if isinstance(exc, exceptions.APIException):
            return error_response(ProtocolError(exc.status_code, "error", str(exc.detail)))
        if isinstance(exc, OperationalError):
            logger.warning("agent API: database unavailable: %s", exc)
            return error_response(ProtocolError(
                503, "unavailable", _("The server is busy; try again shortly."), headers={"Retry-After": "2"},
            ))
        logger.exception("agent API: unexpected error", exc_info=exc)
        return error_response(ProtocolError(500, "server_error", _("The server failed to handle this call.")))
