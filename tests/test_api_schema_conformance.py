"""Every operation of the published OpenAPI schema answers as documented (issue: hardening, item 9).

A bounded, stateless schemathesis run over /api/schema/ against the app in this process (its WSGI handler, the
test database): for each operation a few generated requests, valid by the schema, sent as a member of a team that
holds every role. Generated ids rarely name a record, so each GET operation is also sent once at a real record of the
team (built by the URL fixtures of tests/url_registry.py; a list gets its detail route's record). Each response must not
be a server error and must match the schema (documented status code, content type, body). CI runs it (`-m schema` is
part of `make test`); locally: `make test PYTEST_ARGS="-m schema"`.
"""

from __future__ import annotations

import re

import pytest
import schemathesis
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import checks as st_checks
from schemathesis.config import SchemathesisConfig
from schemathesis.core.failures import FailureGroup

from tests.access import FAST_PASSWORD_HASHERS, ROLES, member
from tests.url_registry import SchemaOperation, concrete_url, entry_for_schema_path, openapi_schema

pytestmark = [pytest.mark.schema, pytest.mark.django_db]

EXAMPLES_PER_OPERATION = 4
CHECKS = [
    st_checks.not_a_server_error,
    st_checks.status_code_conformance,
    st_checks.content_type_conformance,
    st_checks.response_schema_conformance,
]


def _operations():
    schema = schemathesis.openapi.from_dict(openapi_schema(), config=SchemathesisConfig())
    return schema, [result.ok() for result in schema.get_all_operations()]


SCHEMA, OPERATIONS = _operations()


@pytest.fixture
def prober(team, settings):
    """A member of `team` holding every role."""
    settings.PASSWORD_HASHERS = FAST_PASSWORD_HASHERS
    return member(team, "schema-prober", roles=ROLES)


@pytest.fixture
def auth_headers(prober):
    """The one place that knows how an API client authenticates: a hashed API key, sent as `Token <key>`."""
    from apps.accounts.api_keys import api_key_create

    _api_key, key = api_key_create(user=prober, name="schema conformance")
    return {"Authorization": f"Token {key}"}


@pytest.fixture
def app():
    """Django's WSGI handler, kept on the test's database connection (as django.test.Client does: a request must not
    close the connection the test transaction lives on)."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield WSGIHandler()
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


@pytest.mark.parametrize("operation", OPERATIONS, ids=[operation.label for operation in OPERATIONS])
def test_operation_answers_as_documented(operation, auth_headers, app):
    failures: list[str] = []

    @given(case=operation.as_strategy())
    # derandomize: the same examples on every run, so CI fails only when the code changes.
    @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None, phases=[Phase.generate],
              derandomize=True, suppress_health_check=list(HealthCheck))
    def probe(case):
        try:
            case.call_and_validate(headers=auth_headers, checks=CHECKS, app=app)
        # Collect, so one run names every mismatch of the operation; schemathesis raises a FailureGroup, a
        # BaseExceptionGroup that `except Exception` would not catch.
        except (Exception, FailureGroup) as error:
            failures.append(f"{type(error).__name__}: {str(error)[:600]}")

    probe()
    assert not failures, "\n\n".join(failures[:3])


GET_OPERATIONS = [operation for operation in OPERATIONS if operation.method.upper() == "GET"]
SCHEMA_PATHS = set(openapi_schema()["paths"])


def _path_parameters(schema_path: str, team) -> dict[str, str]:
    """Build the record `schema_path` points at for `team` and read its path parameters off the concrete URL."""
    (entry, *_rest) = entry_for_schema_path(SchemaOperation(schema_path, "GET"))
    names = re.findall(r"\{([^}/]+)\}", schema_path)
    pattern = re.escape(schema_path)
    for name in names:
        pattern = pattern.replace(re.escape(f"{{{name}}}"), f"(?P<{name}>[^/]+)")
    return re.fullmatch(pattern, concrete_url(entry, team).path).groupdict()


@pytest.mark.parametrize("operation", GET_OPERATIONS, ids=[operation.label for operation in GET_OPERATIONS])
def test_a_real_record_answers_as_documented(operation, team, auth_headers, app):
    if "{" in operation.path:
        path_parameters = _path_parameters(operation.path, team)
    else:
        detail = f"{operation.path}{{id}}/"
        if detail in SCHEMA_PATHS:
            _path_parameters(detail, team)  # a record in the list
        path_parameters = {}
    case = operation.Case(path_parameters=path_parameters)
    response = case.call_and_validate(headers=auth_headers, checks=CHECKS, app=app)
    assert response.status_code == 200, response.text[:600]
