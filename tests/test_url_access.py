"""Every URL of the resolver and every operation of the OpenAPI schema follows docs/permissions.md.

- anonymous: sent to the login page (pages) or 401/403 (API), except the public URLs;
- signed in without a role: 403 (pages) or 401/403 (API), except the public and "no role needed" URLs;
- a member holding every role reaches the URL (so the refusals above are not an accident of a broken URL);
- a URL pointing at a team-owned object answers 404 (or 403) to a user of another team holding every role;
- the admin site refuses non-staff users.

The tests are generated from the resolver: a new app's URLs are covered the day they are added, and a URL with
parameters needs a builder in a url_fixtures module (see tests/url_registry.py) or the test fails.
"""

import pytest
from django.urls import reverse

from tests.access import (
    FAST_PASSWORD_HASHERS,
    ROLES,
    Outcome,
    allowed_methods,
    backticked,
    describe,
    docs_table,
    is_login_redirect,
    member,
    outcome,
    send,
)
from tests.url_registry import (
    concrete_url,
    entry_for_schema_path,
    schema_operations,
    url_entries,
    url_fixtures,
)

ENTRIES = url_entries()
SITE_ENTRIES = [entry for entry in ENTRIES if not entry.is_admin]
RESTRICTED_ENTRIES = [entry for entry in SITE_ENTRIES if not entry.is_public]
ROLE_ENTRIES = [entry for entry in RESTRICTED_ENTRIES if not entry.needs_no_role]
REACHABLE_ENTRIES = [entry for entry in SITE_ENTRIES if not entry.is_agent_api]
OBJECT_ENTRIES = [entry for entry in REACHABLE_ENTRIES if entry.object_parameters]
# The admin site's login form is public (listed in docs/permissions.md); every other named admin URL needs staff.
ADMIN_ENTRIES = [entry for entry in ENTRIES if entry.is_admin and entry.name and entry.name != "admin:login"]
OPERATIONS = schema_operations()
API_REFUSALS = (401, 403)


def _ids(entries):
    return [entry.id for entry in entries]


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = FAST_PASSWORD_HASHERS


@pytest.fixture
def every_role_member(team):
    return member(team, "every-role", ROLES, is_staff=False)


@pytest.fixture
def every_role_outsider(other_team):
    return member(other_team, "every-role-outsider", ROLES, is_staff=False)


def _send_reaching(client, path: str, *, api: bool):
    """GET, or the first method the view offers when it refuses GET with 405: (method, response)."""
    response = send(client, "GET", path, api=api)
    if response.status_code == 405:
        methods = [method for method in allowed_methods(response) if method not in ("GET", "HEAD", "OPTIONS")]
        assert methods, f"{path}: 405 to GET without an Allow header naming another method"
        return methods[0], send(client, methods[0], path, api=api)
    return "GET", response


# --- What docs/permissions.md promises ---------------------------------------------------------------------------


def _documented_names(heading: str) -> set[str]:
    return {backticked(row["URL name"]) for row in docs_table(heading)}


def test_public_urls_are_exactly_the_documented_ones():
    public = {entry.name or entry.route for entry in ENTRIES if entry.is_public}
    assert public == _documented_names("Public URLs")


def test_urls_needing_no_role_are_exactly_the_documented_ones():
    no_role = {entry.name or entry.route for entry in ENTRIES if entry.needs_no_role}
    assert no_role == _documented_names("Signed in, no role needed")


def test_documented_global_urls_exist_and_point_at_no_team_object():
    by_name = {entry.name: entry for entry in ENTRIES}
    for name in _documented_names("Global URLs"):
        assert name in by_name, f"docs/permissions.md lists {name}, which no URL pattern is named"
        if by_name[name].object_parameters:
            assert name in url_fixtures(), f"{name} has parameters but no builder in a url_fixtures module"
            assert not url_fixtures()[name].team_scoped, f"{name} is documented as global but its object is a team's"


def test_every_url_with_parameters_has_an_object_builder(team):
    missing = [
        f"{entry.name} (/{entry.route})"
        for entry in ENTRIES
        if entry.name
        and entry.object_parameters
        and not entry.placeholder_reason()
        and entry.name not in url_fixtures()
    ]
    unnamed = [f"/{entry.route}" for entry in ENTRIES if not entry.name and not entry.is_admin]
    assert not unnamed, f"name these URL patterns: {unnamed}"
    assert not missing, (
        "register an object builder for these URLs in apps/<app>/tests/url_fixtures.py (see tests/url_registry.py):\n"
        + "\n".join(missing)
    )


def test_every_registered_url_name_exists():
    names = {entry.name for entry in ENTRIES}
    stale = sorted(set(url_fixtures()) - names)
    assert not stale, f"url_fixtures register URL names that no pattern has: {stale}"


# --- Every URL of the resolver ----------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", SITE_ENTRIES, ids=_ids(SITE_ENTRIES))
def test_anonymous_user_is_sent_to_login_or_refused(entry, client, team):
    path = concrete_url(entry, team, placeholders_when_unregistered=True).path
    response = client.get(path)
    if entry.is_public:
        assert outcome(response) is Outcome.ALLOWED, f"public {path} answered {describe(response)}"
    elif entry.is_rest_framework:
        assert response.status_code in API_REFUSALS, f"{path} answered {describe(response)}"
    else:
        assert is_login_redirect(response), f"{path} answered {describe(response)} instead of the login page"
        assert response["Location"].startswith(reverse("accounts:login"))


@pytest.mark.parametrize("entry", ROLE_ENTRIES, ids=_ids(ROLE_ENTRIES))
def test_user_without_a_role_is_refused(entry, client, roleless_user, team):
    path = concrete_url(entry, team, placeholders_when_unregistered=True).path
    client.force_login(roleless_user)
    response = client.get(path)
    expected = API_REFUSALS if entry.is_rest_framework else (403,)
    assert response.status_code in expected, f"{path} answered {describe(response)} to a user without a role"


NO_ROLE_ENTRIES = [entry for entry in SITE_ENTRIES if entry.needs_no_role]


@pytest.mark.parametrize("entry", NO_ROLE_ENTRIES, ids=_ids(NO_ROLE_ENTRIES))
def test_user_without_a_role_may_use_the_no_role_urls(entry, client, roleless_user, team):
    path = concrete_url(entry, team).path
    client.force_login(roleless_user)
    _method, response = _send_reaching(client, path, api=entry.is_rest_framework)
    assert outcome(response) is Outcome.ALLOWED, f"{path} answered {describe(response)}"


@pytest.mark.parametrize("entry", REACHABLE_ENTRIES, ids=_ids(REACHABLE_ENTRIES))
def test_member_with_every_role_reaches_the_url(entry, client, every_role_member, team):
    path = concrete_url(entry, team).path
    client.force_login(every_role_member)
    method, response = _send_reaching(client, path, api=entry.is_rest_framework)
    assert outcome(response) is Outcome.ALLOWED, f"{method} {path} answered {describe(response)} to a member"


@pytest.mark.parametrize("entry", OBJECT_ENTRIES, ids=_ids(OBJECT_ENTRIES))
def test_user_of_another_team_cannot_reach_a_teams_object(entry, client, every_role_member, every_role_outsider, team):
    url = concrete_url(entry, team)
    api = entry.is_rest_framework
    client.force_login(every_role_member)
    method, as_member = _send_reaching(client, url.path, api=api)
    assert outcome(as_member) is Outcome.ALLOWED, f"{method} {url.path}: {describe(as_member)} to a member"

    client.force_login(every_role_outsider)
    response = send(client, method, url.path, api=api)
    if url.team_scoped:
        assert response.status_code in (403, 404), f"{method} {url.path}: {describe(response)} to another team"
    else:
        assert outcome(response) is Outcome.ALLOWED, f"global {method} {url.path}: {describe(response)}"


# --- The admin site ---------------------------------------------------------------------------------------------


def _get_within_admin(client, path: str):
    """GET, following redirects that stay inside the admin site (its logout view sends non-staff to its index)."""
    response = client.get(path)
    for _hop in range(3):
        if is_login_redirect(response) or response.status_code not in (301, 302):
            break
        target = response["Location"]
        assert target.startswith(reverse("admin:index")), f"{path} redirected out of the admin site to {target}"
        response = client.get(target)
    return response


@pytest.mark.parametrize("entry", ADMIN_ENTRIES, ids=_ids(ADMIN_ENTRIES))
def test_admin_site_refuses_anonymous_and_non_staff_users(entry, client, platform_user, team):
    path = concrete_url(entry, team).path
    anonymous = _get_within_admin(client, path)
    assert is_login_redirect(anonymous), f"{path} answered {describe(anonymous)} to an anonymous user"

    client.force_login(platform_user)
    assert not platform_user.is_staff
    response = _get_within_admin(client, path)
    assert outcome(response) is Outcome.REFUSED, f"{path} answered {describe(response)} to a non-staff user"


def test_admin_site_lets_a_staff_admin_in(client, admin_user):
    client.force_login(admin_user)
    assert client.get(reverse("admin:index")).status_code == 200


def test_admin_login_form_is_public(client):
    assert client.get(reverse("admin:login")).status_code == 200


# --- Every operation of the OpenAPI schema ------------------------------------------------------------------------


def test_schema_lists_operations():
    assert any(operation.path.startswith("/api/v1/") for operation in OPERATIONS)


def _schema_url(operation, team, *, placeholders_when_unregistered: bool = False):
    entries = entry_for_schema_path(operation)
    assert entries, f"{operation.id}: no URL pattern of the resolver serves this schema path"
    url = concrete_url(entries[0], team, placeholders_when_unregistered=placeholders_when_unregistered)
    assert operation.path_regex.match(url.path), f"{operation.id}: built {url.path}, which is not this path"
    return url


@pytest.mark.parametrize("operation", OPERATIONS, ids=[operation.id for operation in OPERATIONS])
def test_schema_operation_refuses_anonymous_and_roleless_users(operation, client, roleless_user, team):
    url = _schema_url(operation, team, placeholders_when_unregistered=True)
    anonymous = send(client, operation.method, url.path, api=True)
    assert anonymous.status_code in API_REFUSALS, f"{operation.id}: {describe(anonymous)} to an anonymous user"
    client.force_login(roleless_user)
    roleless = send(client, operation.method, url.path, api=True)
    assert roleless.status_code in API_REFUSALS, f"{operation.id}: {describe(roleless)} to a user without a role"


SCHEMA_OBJECT_OPERATIONS = [
    operation for operation in OPERATIONS if operation.has_parameters and not operation.path.startswith("/api/agent/")
]


@pytest.mark.parametrize(
    "operation", SCHEMA_OBJECT_OPERATIONS, ids=[operation.id for operation in SCHEMA_OBJECT_OPERATIONS]
)
def test_schema_operation_on_another_teams_object(operation, client, every_role_member, every_role_outsider, team):
    url = _schema_url(operation, team)
    client.force_login(every_role_member)
    as_member = send(client, operation.method, url.path, api=True)
    assert outcome(as_member) is Outcome.ALLOWED, f"{operation.id}: {describe(as_member)} to a member"

    url = _schema_url(operation, team)  # a fresh object: the member's request may have changed or deleted it
    client.force_login(every_role_outsider)
    response = send(client, operation.method, url.path, api=True)
    if url.team_scoped:
        assert response.status_code in (403, 404), f"{operation.id}: {describe(response)} to another team"
    else:
        assert outcome(response) is Outcome.ALLOWED, f"global {operation.id}: {describe(response)}"


# --- The registry itself ------------------------------------------------------------------------------------------


def test_registry_fills_parameters_from_the_built_object(team):
    entry = next(entry for entry in ENTRIES if entry.name == "catalog:detail")
    url = concrete_url(entry, team)
    assert url.path == reverse("catalog:detail", args=[url.built_object.pk])
    assert not url.team_scoped  # the catalog is global


def test_only_admin_and_agent_urls_may_use_placeholder_parameters():
    exempt = {entry.name for entry in ENTRIES if entry.object_parameters and entry.placeholder_reason()}
    assert exempt == {
        entry.name for entry in ENTRIES if entry.object_parameters and (entry.is_admin or entry.is_agent_api)
    }
    assert "audit:object-history" not in exempt
