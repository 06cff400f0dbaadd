"""The user API's schema class (settings REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"]): drf-spectacular's AutoSchema, plus
the error answers every operation can really give, with the bodies apps.common.api_errors really sends (docs/api.md):

- 400 `ValidationError` (`{"field": ["message"], "non_field_errors": ["message"]}`, nested for a nested input, a few
  extra keys for some refusals, `{"detail": "…"}` for a body that could not be parsed): any write, and any read with
  query parameters that are validated (filters, a comparison's `chosen`);
- 401 / 403 `ErrorDetail` (`{"detail": "message"}`): any operation behind a permission. DRF answers 401 only when the
  first authentication class names a `WWW-Authenticate` challenge (token first); with the session first it is 403;
- 404 `ErrorDetail`: an operation with a path parameter (no such object, or another team's), and a paginated list
  (`?page=` past the end);
- more, where a view says it can answer them: `error_statuses = (409,)` on the view class (a decision record's state
  forbids the step), `(404,)` for a view that looks up the team itself. Safe methods never get a 409.

A view that declares a status itself (`@extend_schema(responses={400: …})`) keeps its body; where it differs from the
shared one, the schema says the answer is either (`anyOf`).

A URL field that may be blank is documented as such: `format: uri` or the empty string (a blank datasheet URL is
sent as "", which is no URI).

It also drops a path parameter that the operation's path does not have (a class-wide `@extend_schema(parameters=…)`
would otherwise give a list a `{id}` it does not take).
"""

from __future__ import annotations

from django.core.exceptions import FieldDoesNotExist
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.plumbing import ResolvedComponent
from rest_framework.permissions import AllowAny

#: Query parameters that never cause a 400: pagination answers 404 for a bad page, ordering ignores unknown fields,
#: search is free text, format is a URL suffix.
UNVALIDATED_QUERY_PARAMETERS = frozenset({"page", "ordering", "search", "format"})

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

ERROR_DETAIL_SCHEMA = {
    "type": "object",
    "description": 'A refusal with one message: `{"detail": "message"}` (docs/api.md).',
    "properties": {"detail": {"type": "string"}},
    "required": ["detail"],
}

VALIDATION_ERROR_SCHEMA = {
    "type": "object",
    "description": (
        'Refused input, DRF\'s field-error shape: `{"field": ["message"], "non_field_errors": ["message"]}`; a nested '
        "input nests the same shape (a list input: one object per item), a few refusals add keys a client can act on "
        '(docs/api.md); a body that could not be parsed is `{"detail": "message"}`.'
    ),
    "properties": {
        "non_field_errors": {"type": "array", "items": {"type": "string"}},
        "detail": {"type": "string"},
    },
    "additionalProperties": {"anyOf": [{"type": "array"}, {"type": "object"}]},
}

ERROR_DESCRIPTIONS = {
    400: "The input, or the change it asks for, was refused.",
    401: "Not signed in, or an unknown token.",
    403: "Not signed in, or your role may not do this.",
    404: "No such object, or it belongs to a team you are not in.",
    409: "The object's state does not allow this step now; reload it and decide again.",
}


def _may_be_blank(field) -> bool:
    """Whether a serializer field may hold "": it allows blank, or (read-only, where DRF drops allow_blank) the model
    field it reads is blank=True."""
    if getattr(field, "allow_blank", False):
        return True
    model = getattr(getattr(getattr(field, "parent", None), "Meta", None), "model", None)
    if model is None or not isinstance(getattr(field, "source", None), str):
        return False
    try:
        return model._meta.get_field(field.source).blank
    except FieldDoesNotExist:
        return False


def _blank_uri(field, schema: dict) -> None:
    if schema.get("format") == "uri" and _may_be_blank(field):
        del schema["format"]
        schema["anyOf"] = [{"format": "uri"}, {"maxLength": 0}]


class AutoSchema(SpectacularAutoSchema):
    def _get_parameters(self):
        return [
            parameter for parameter in super()._get_parameters()
            if parameter.get("in") != "path" or f"{{{parameter['name']}}}" in self.path
        ]

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        _blank_uri(field, schema)
        return schema

    def _insert_field_validators(self, field, schema):
        super()._insert_field_validators(field, schema)  # a URLValidator sets format: uri again
        _blank_uri(field, schema)

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        for status_code in sorted(self.error_statuses()):
            code = str(status_code)
            error = {
                "description": ERROR_DESCRIPTIONS.get(status_code, ""),
                "content": {"application/json": {"schema": self._error_component(status_code).ref}},
            }
            declared = responses.get(code)
            if declared is None:
                responses[code] = error
                continue
            declared_schema = declared.get("content", {}).get("application/json", {}).get("schema")
            if declared_schema is not None and declared_schema != error["content"]["application/json"]["schema"]:
                declared["content"]["application/json"]["schema"] = {
                    "anyOf": [declared_schema, error["content"]["application/json"]["schema"]]
                }
        return responses

    def error_statuses(self) -> set[int]:
        """The error statuses this operation can really answer (see the module docstring)."""
        statuses: set[int] = set()
        if self._needs_permission():
            statuses.add(403)
            if self._challenges():
                statuses.add(401)
        if "{" in self.path or (self._is_list_view() and self._get_paginator()):
            statuses.add(404)
        if self.method not in SAFE_METHODS or self._validated_query_parameters():
            statuses.add(400)
        for status_code in getattr(self.view, "error_statuses", ()):
            if status_code == 409 and self.method in SAFE_METHODS:
                continue
            statuses.add(status_code)
        return statuses

    def _needs_permission(self) -> bool:
        return any(not isinstance(permission, AllowAny) for permission in self.view.get_permissions())

    def _challenges(self) -> bool:
        authenticators = self.view.get_authenticators()
        return bool(authenticators) and bool(authenticators[0].authenticate_header(self.view.request))

    def _validated_query_parameters(self) -> bool:
        return any(
            parameter.get("in") == "query" and parameter.get("name") not in UNVALIDATED_QUERY_PARAMETERS
            for parameter in self._get_parameters()
        )

    def _error_component(self, status_code: int) -> ResolvedComponent:
        name, schema = (
            ("ValidationError", VALIDATION_ERROR_SCHEMA) if status_code == 400 else ("ErrorDetail", ERROR_DETAIL_SCHEMA)
        )
        component = ResolvedComponent(name=name, type=ResolvedComponent.SCHEMA, schema=schema, object=name)
        self.registry.register_on_missing(component)
        return component
