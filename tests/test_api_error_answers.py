"""The user API's error answers are in its schema, and out-of-range inputs are refused at the edge (hardening, item 9).

Fast and deterministic beside the schemathesis run (tests/test_api_schema_conformance.py, `-m schema`): the schema
documents every error status an operation can give with the body apps.common.api_errors sends
(apps/common/api_schema.py), and each GET operation, sent ids past the database's integer range (2**64: SQLite
raises OverflowError on anything past 2**63 - 1) or below zero, answers one of its documented statuses in JSON, never
a 500 or an HTML page.
"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.access import FAST_PASSWORD_HASHERS, ROLES, member
from tests.url_registry import openapi_schema

SCHEMA = openapi_schema()
OPERATIONS = [
    (path, method.upper(), operation)
    for path, item in sorted(SCHEMA["paths"].items())
    for method, operation in item.items()
    if method in {"get", "post", "put", "patch", "delete"}
]
GET_OPERATIONS = [(path, operation) for path, method, operation in OPERATIONS if method == "GET"]
HUGE = 2**64


def error_ref(operation: dict, status: str) -> str | None:
    response = operation["responses"].get(status)
    if response is None:
        return None
    schema = response["content"]["application/json"]["schema"]
    refs = [schema, *schema.get("anyOf", [])]
    return next((ref["$ref"] for ref in refs if ref.get("$ref", "").endswith(("/ErrorDetail", "/ValidationError"))),
                "other")


def test_the_error_bodies_are_the_ones_the_exception_handler_sends():
    schemas = SCHEMA["components"]["schemas"]
    assert schemas["ErrorDetail"]["required"] == ["detail"]
    assert schemas["ErrorDetail"]["properties"] == {"detail": {"type": "string"}}
    non_field_errors = schemas["ValidationError"]["properties"]["non_field_errors"]
    assert non_field_errors == {"type": "array", "items": {"type": "string"}}


@pytest.mark.parametrize(("path", "method", "operation"), OPERATIONS, ids=[f"{m} {p}" for p, m, _ in OPERATIONS])
def test_every_operation_documents_the_errors_it_can_give(path, method, operation):
    """Session authentication comes first, so DRF answers 403 (not 401) to a missing or unknown token; 404 for a path
    with a parameter or a paginated list; 400 for every write; 409 only on decision-record writes (a Conflict)."""
    assert error_ref(operation, "403") == "#/components/schemas/ErrorDetail"
    assert "401" not in operation["responses"]
    paginated = "page" in {parameter["name"] for parameter in operation.get("parameters", [])}
    if "{" in path or paginated:
        assert error_ref(operation, "404") == "#/components/schemas/ErrorDetail"
    if method != "GET":
        assert error_ref(operation, "400") == "#/components/schemas/ValidationError"
    assert ("409" in operation["responses"]) == (method != "GET" and path.startswith("/api/v1/decisions/records/"))
    for parameter in operation.get("parameters", []):
        if parameter["in"] == "path":
            assert f"{{{parameter['name']}}}" in path, "a path parameter the path does not have"


@pytest.fixture
def client(team, settings):
    settings.PASSWORD_HASHERS = FAST_PASSWORD_HASHERS
    client = APIClient()
    client.force_authenticate(member(team, "edge-prober", roles=ROLES))
    return client


def url_with(path: str, operation: dict, integer) -> tuple[str, dict]:
    """The path with every integer path parameter set to `integer` (enums to their first value, strings to "x"),
    and every numeric query parameter set to `integer` too."""
    query = {}
    for parameter in operation.get("parameters", []):
        schema = parameter.get("schema", {})
        if parameter["in"] == "path":
            value = integer if schema.get("type") == "integer" else (schema.get("enum") or ["x"])[0]
            path = path.replace(f"{{{parameter['name']}}}", str(value))
        elif parameter["in"] == "query" and schema.get("type") in ("integer", "number"):
            query[parameter["name"]] = str(integer)
    return path, query


@pytest.mark.django_db
@pytest.mark.parametrize(("path", "operation"), GET_OPERATIONS, ids=[p for p, _ in GET_OPERATIONS])
@pytest.mark.parametrize("integer", [HUGE, -1], ids=["2**64", "-1"])
def test_out_of_range_ids_are_a_documented_json_refusal(client, path, operation, integer):
    url, query = url_with(path, operation, integer)
    response = client.get(url, query)
    assert response.status_code < 500
    assert str(response.status_code) in operation["responses"], (url, query, response.status_code)
    if response.status_code >= 400:
        assert response["Content-Type"] == "application/json"
        body = response.json()
        if error_ref(operation, str(response.status_code)) == "#/components/schemas/ErrorDetail":
            assert set(body) == {"detail"} and isinstance(body["detail"], str), body
        else:
            assert isinstance(body, dict) and body, body


@pytest.mark.django_db
def test_a_url_no_route_takes_is_json_under_the_api_and_the_404_page_elsewhere(client):
    """settings handler404 (apps.common.views.not_found): before it, /api/v1/comparisons/-1/ was the HTML page."""
    api = client.get("/api/v1/comparisons/-1/")
    assert (api.status_code, api["Content-Type"], api.json()) == (404, "application/json", {"detail": "Not found."})
    page = client.get("/no-such-page/")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")
