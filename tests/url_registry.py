"""Every URL of Dossier, and the objects that fill their parameters, for the tests that must cover them all.

`url_entries()` walks config.urls recursively; `schema_operations()` lists every (path, method) of the OpenAPI
schema. Tests that promise something about *every* page (access rules, the pseudo-locale) iterate over these, so a
new app's URLs are covered the day they land.

A URL with parameters needs an object to point at. Each app registers a builder per URL name in a module named
`url_fixtures` — `tests/url_fixtures.py` for project-level URLs, `apps/<app>/tests/url_fixtures.py` for an app —
that defines `URL_FIXTURES`:

    from tests.url_registry import global_object, team_object

    URL_FIXTURES = {
        "workloads:detail": team_object(lambda team: WorkloadFactory(team=team)),  # owned by `team`
        "catalog:detail": global_object(lambda team: GpuFactory()),                 # visible to every role
    }

A builder receives the team and returns a model instance (each URL parameter is read from the attribute of that
name, `pk` included) or a dict of URL keyword arguments. A plain callable counts as `team_object`. A parameterised
URL that is neither registered nor covered by PLACEHOLDER_PARAMETERS below fails tests/test_url_access.py.
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from django.apps import apps
from django.urls import NoReverseMatch, URLPattern, URLResolver, get_resolver, reverse

#: The prefix of the agent protocol (DESIGN.md): agents authenticate with their own tokens, never a user session.
AGENT_API_PREFIX = "/api/agent/v1/"

#: Parameters that are filled the same way for every URL (not an object reference).
GENERIC_PARAMETER_VALUES = {
    # DRF's format suffix patterns (`…/gpus.json`) repeat a named URL with a `format` parameter.
    "format": "json",
}

#: URLs whose parameters may hold placeholder values instead of a registered object, each with the reason why no
#: object is needed. Keep this short: everything else registers a builder in a url_fixtures module.
PLACEHOLDER_PARAMETERS: list[tuple[Callable[[UrlEntry], bool], str]] = [
    # The admin site checks is_staff before it looks anything up; tests/test_url_access.py only checks refusals there.
    (lambda entry: entry.is_admin, "admin site: refused to non-staff before any lookup"),
    # Agent endpoints authenticate an agent token before any lookup; a user session is never enough. The agent-to-agent
    # isolation (one agent cannot touch another's job) is the protocol tests' job.
    (lambda entry: entry.is_agent_api, "agent API: refused without an agent token before any lookup"),
]

# Placeholder candidates, tried in order until reverse() accepts them (int, sha256, uuid, slug-like, app labels).
_PLACEHOLDER_CANDIDATES = ["1", "0" * 64, str(uuid.UUID(int=1)), "x"]


@dataclass(frozen=True)
class ObjectFixture:
    """How to build the object a URL points at, and whether it belongs to one team."""

    build: Callable[[Any], Any]
    team_scoped: bool = True
    module: str = ""


def team_object(build: Callable[[Any], Any]) -> ObjectFixture:
    """The object belongs to the given team: a user of another team must get 404 (or 403)."""
    return ObjectFixture(build=build, team_scoped=True)


def global_object(build: Callable[[Any], Any]) -> ObjectFixture:
    """The object is shared by every team (the GPU catalog): any user with a role may see it."""
    return ObjectFixture(build=build, team_scoped=False)


@dataclass(frozen=True)
class UrlEntry:
    """One URL pattern as the resolver sees it, with the markers the access rules depend on."""

    name: str  # qualified name, "accounts:login"; "" for an unnamed pattern
    route: str  # the full pattern text, "accounts/login/"
    parameters: tuple[str, ...]
    callback: Callable
    namespace: str

    @property
    def id(self) -> str:
        """Stable, readable test id (a name can repeat with another parameter list: DRF's format suffixes)."""
        label = self.name or f"<unnamed {self.route}>"
        return f"{label}({','.join(self.parameters)})" if self.parameters else label

    @property
    def is_admin(self) -> bool:
        return self.namespace.split(":")[0] == "admin"

    @property
    def is_rest_framework(self) -> bool:
        from rest_framework.views import APIView

        view_class = getattr(self.callback, "cls", None)
        return isinstance(view_class, type) and issubclass(view_class, APIView)

    @property
    def is_agent_api(self) -> bool:
        return ("/" + self.route.lstrip("^")).startswith(AGENT_API_PREFIX)

    @property
    def is_public(self) -> bool:
        """Marked @login_not_required (DRF views are not: DRF authenticates them itself, see the middleware)."""
        return not self.is_rest_framework and not getattr(self.callback, "login_required", True)

    @property
    def needs_no_role(self) -> bool:
        """Marked @role_not_required: any signed-in user (logging out)."""
        return bool(getattr(self.callback, "role_not_required", False))

    @property
    def object_parameters(self) -> tuple[str, ...]:
        return tuple(name for name in self.parameters if name not in GENERIC_PARAMETER_VALUES)

    def placeholder_reason(self) -> str | None:
        for applies, reason in PLACEHOLDER_PARAMETERS:
            if applies(self):
                return reason
        return None


def _parameter_names(pattern) -> list[str]:
    converters = getattr(pattern, "converters", None)
    if converters:
        return list(converters)
    return list(pattern.regex.groupindex)


def _walk(patterns, prefix: str, namespace: str, parameters: tuple[str, ...]) -> Iterator[UrlEntry]:
    for pattern in patterns:
        route = prefix + str(pattern.pattern).lstrip("^").rstrip("$")
        names = parameters + tuple(_parameter_names(pattern.pattern))
        if isinstance(pattern, URLResolver):
            inner = namespace
            if pattern.namespace:
                inner = f"{namespace}:{pattern.namespace}" if namespace else pattern.namespace
            yield from _walk(pattern.url_patterns, route, inner, names)
        elif isinstance(pattern, URLPattern):
            qualified = ""
            if pattern.name:
                qualified = f"{namespace}:{pattern.name}" if namespace else pattern.name
            yield UrlEntry(qualified, route, names, pattern.callback, namespace)


def url_entries() -> list[UrlEntry]:
    """Every URL pattern of config.urls, depth first, without duplicates."""
    seen: dict[str, UrlEntry] = {}
    for entry in _walk(get_resolver().url_patterns, "", "", ()):
        seen.setdefault(entry.id + entry.route, entry)
    return list(seen.values())


@cache
def url_fixtures() -> dict[str, ObjectFixture]:
    """URL name → ObjectFixture, gathered from tests/url_fixtures.py and every apps.<app>.tests.url_fixtures."""
    module_names = ["tests.url_fixtures"]
    for app_config in apps.get_app_configs():
        if app_config.name.startswith("apps."):
            module_names.append(f"{app_config.name}.tests.url_fixtures")
    registry: dict[str, ObjectFixture] = {}
    for module_name in module_names:
        try:
            found = importlib.util.find_spec(module_name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            continue
        module = importlib.import_module(module_name)
        for url_name, fixture in getattr(module, "URL_FIXTURES", {}).items():
            if not isinstance(fixture, ObjectFixture):
                fixture = team_object(fixture)
            if url_name in registry:
                raise ValueError(f"{url_name} is registered twice: in {registry[url_name].module} and {module_name}")
            registry[url_name] = ObjectFixture(fixture.build, fixture.team_scoped, module_name)
    return registry


class MissingFixture(LookupError):
    """A parameterised URL with no registered builder and no placeholder exemption."""


@dataclass(frozen=True)
class ConcreteUrl:
    entry: UrlEntry
    path: str
    team_scoped: bool  # the URL points at an object owned by the team it was built for
    built_object: Any = None


def _reverse_with_placeholders(entry: UrlEntry, fixed: Mapping[str, Any]) -> str:
    free = [name for name in entry.parameters if name not in fixed]
    labels = [config.label for config in apps.get_app_configs()]
    candidates = [*_PLACEHOLDER_CANDIDATES, *labels]
    for values in itertools.product(candidates, repeat=len(free)):
        try:
            return reverse(entry.name, kwargs={**fixed, **dict(zip(free, values, strict=True))})
        except NoReverseMatch:
            continue
    raise MissingFixture(f"{entry.id}: no placeholder value fits its parameters {free}")


def concrete_url(entry: UrlEntry, team, *, placeholders_when_unregistered: bool = False) -> ConcreteUrl:
    """A path for this URL pattern: its object built for `team` (registered), or placeholders (exempt).

    `placeholders_when_unregistered` is for checks that must hold before any lookup (anonymous users, users without
    a role are refused whatever the object); every other check needs the registered object.
    """
    if not entry.name:
        raise MissingFixture(f"{entry.route}: unnamed URL pattern (name it so tests and reverse() can reach it)")
    generic = {name: GENERIC_PARAMETER_VALUES[name] for name in entry.parameters if name in GENERIC_PARAMETER_VALUES}
    if not entry.object_parameters:
        return ConcreteUrl(entry, reverse(entry.name, kwargs=generic), team_scoped=False)
    fixture = url_fixtures().get(entry.name)
    if fixture is None:
        if placeholders_when_unregistered or entry.placeholder_reason():
            return ConcreteUrl(entry, _reverse_with_placeholders(entry, generic), team_scoped=False)
        raise MissingFixture(
            f"{entry.id} (/{entry.route}) has parameters {list(entry.object_parameters)} but no builder: register one "
            f"in URL_FIXTURES of tests/url_fixtures.py or apps/<app>/tests/url_fixtures.py (see tests/url_registry.py)"
        )
    built = fixture.build(team)
    kwargs = dict(generic)
    if isinstance(built, Mapping):
        kwargs.update(built)
    else:
        for name in entry.object_parameters:
            if not hasattr(built, name):
                raise MissingFixture(
                    f"{entry.id}: the builder in {fixture.module} returned {type(built).__name__} without an attribute "
                    f"{name!r}; return a dict of URL keyword arguments instead"
                )
            kwargs[name] = getattr(built, name)
    return ConcreteUrl(entry, reverse(entry.name, kwargs=kwargs), fixture.team_scoped, built)


# --- The OpenAPI schema -------------------------------------------------------------------------------------------

HTTP_METHODS = ("get", "put", "patch", "delete", "post")


@dataclass(frozen=True)
class SchemaOperation:
    path: str  # "/api/v1/catalog/gpus/{id}/"
    method: str  # "GET"

    @property
    def id(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def has_parameters(self) -> bool:
        return "{" in self.path

    @property
    def path_regex(self) -> re.Pattern:
        parts = re.split(r"\{[^}/]+\}", self.path)
        return re.compile("^" + "[^/]+".join(re.escape(part) for part in parts) + "$")


@cache
def openapi_schema() -> dict:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def schema_operations() -> list[SchemaOperation]:
    operations = []
    for path, item in sorted(openapi_schema().get("paths", {}).items()):
        for method in HTTP_METHODS:
            if method in item:
                operations.append(SchemaOperation(path, method.upper()))
    return operations


def entry_for_schema_path(operation: SchemaOperation) -> list[UrlEntry]:
    """The resolver patterns that serve a schema path (matched on a placeholder URL, same number of parameters)."""
    wanted = operation.path.count("{")
    matches = []
    for entry in url_entries():
        if not entry.name or len(entry.object_parameters) != wanted or "format" in entry.parameters:
            continue
        try:
            path = _reverse_with_placeholders(entry, {})
        except MissingFixture:
            continue
        if operation.path_regex.match(path):
            matches.append(entry)
    return matches
