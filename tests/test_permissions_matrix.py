"""The matrix of docs/permissions.md, replayed row by row as real requests by each role.

Each row names a request (`GET url:name` / `POST url:name`). It is sent, with an empty body, by a member of the team
holding exactly one role (the admin is staff, as the admin site requires), by a member without a role and by an
anonymous visitor. "yes"/"own teams" must get through authorisation (any answer but 401/403/404 or a login
redirect — a 400 for the empty form counts as allowed); "no" must be refused.
"""

import pytest
from django.apps import apps

from tests.access import (
    FAST_PASSWORD_HASHERS,
    ROLES,
    Outcome,
    backticked,
    describe,
    docs_table,
    member,
    outcome,
    send,
)
from tests.url_registry import concrete_url, url_entries

MATRIX = docs_table("Matrix")
COLUMNS = [*ROLES, "no role", "anonymous"]
CELL_MEANING = {"yes": True, "own teams": True, "no": False}


def _row_id(row) -> str:
    return f"{row['area']}: {row['action']}"


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = FAST_PASSWORD_HASHERS


@pytest.fixture
def users_by_column(team):
    users = {role: member(team, f"only-{role}", [role]) for role in ROLES}
    users["no role"] = member(team, "no-role")
    users["anonymous"] = None
    return users


def test_matrix_has_one_column_per_role_and_a_known_value_in_every_cell():
    assert MATRIX, "docs/permissions.md has an empty matrix"
    for row in MATRIX:
        assert set(COLUMNS) <= set(row), f"{_row_id(row)}: the matrix needs the columns {COLUMNS}"
        for column in COLUMNS:
            assert row[column] in CELL_MEANING, f"{_row_id(row)}: '{row[column]}' under {column} is not {CELL_MEANING}"


def test_matrix_covers_every_area_of_the_design():
    areas = {row["area"] for row in MATRIX}
    expected = {"catalog", "workloads", "quotes", "agents/fleet", "benchmarks", "decisions", "audit log", "admin site"}
    assert expected <= areas, f"missing areas: {sorted(expected - areas)}"


def _planned_app(row) -> str | None:
    checked_by = row["checked by"]
    if checked_by.startswith("planned (") and checked_by.endswith(")"):
        return checked_by.removeprefix("planned (").removesuffix(")")
    return None


@pytest.mark.parametrize("row", MATRIX, ids=[_row_id(row) for row in MATRIX])
def test_role_gets_what_the_matrix_says(row, client, users_by_column, team):
    planned_app = _planned_app(row)
    if planned_app is not None:
        # A row may wait for its app; once the app is installed it must name the request that checks it.
        installed = {config.name for config in apps.get_app_configs()}
        assert planned_app not in installed, (
            f"{planned_app} is installed: replace 'planned ({planned_app})' in docs/permissions.md, row "
            f"'{_row_id(row)}', with the request that checks it (e.g. `GET {planned_app.split('.')[-1]}:list`)"
        )
        return

    method, _space, url_name = backticked(row["checked by"]).partition(" ")
    assert method in ("GET", "POST") and url_name, f"{_row_id(row)}: 'checked by' must read `GET name` or `POST name`"
    by_name = {entry.name: entry for entry in url_entries()}
    assert url_name in by_name, f"{_row_id(row)}: no URL is named {url_name}"
    entry = by_name[url_name]
    path = concrete_url(entry, team).path

    mismatches = []
    for column in COLUMNS:
        user = users_by_column[column]
        client.logout()
        if user is not None:
            client.force_login(user)
        response = send(client, method, path, api=entry.is_rest_framework)
        got = outcome(response)
        assert got is not Outcome.BROKEN, f"{_row_id(row)}: {method} {path} answered {describe(response)} ({column})"
        expected = Outcome.ALLOWED if CELL_MEANING[row[column]] else Outcome.REFUSED
        if got is not expected:
            mismatches.append(f"{column}: expected {expected.value}, got {describe(response)}")
    assert not mismatches, f"{_row_id(row)} ({method} {path}):\n" + "\n".join(mismatches)
