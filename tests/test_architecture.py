"""The layers of the house (CONTRIBUTING.md): an app imports only from its own layer or the layers below it, and no
two modules or apps import each other in a circle.

    base (common, accounts, audit) → catalog → workloads → quotes → evidence → fleet → benchmarks → agent_api
    → comparison → budgets → decisions → actuals → teams

Every import counts, function-local ones included, and so do the hidden references: a dotted "apps.x…" string (an
`include()`, a handler path), a template that includes, extends or loads a tag library of another app. A higher app
shows itself on a lower app's page through apps/common/page_parts.py, never by being imported from below.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APPS = ROOT / "apps"

LAYERS: list[tuple[str, ...]] = [
    ("common", "accounts", "audit"),
    ("catalog",),
    ("workloads",),
    ("quotes",),
    ("evidence",),
    ("fleet",),
    ("benchmarks",),
    ("agent_api",),
    ("comparison",),
    ("budgets",),
    ("decisions",),
    ("actuals",),
    ("teams",),
]
LAYER_OF = {app: position for position, apps in enumerate(LAYERS) for app in apps}

DOTTED = re.compile(r"^apps\.(\w+)(?:\.\w+)*$")
TEMPLATE_TAG = re.compile(r"{%\s*(include|extends)\s+[\"'](\w+)/[^\"']*[\"']|{%\s*load\s+([\w ]+?)\s*%}")


def app_names() -> list[str]:
    return sorted(path.parent.name for path in APPS.glob("*/apps.py"))


def _is_test(path: Path) -> bool:
    return "tests" in path.relative_to(APPS).parts


def server_modules() -> list[Path]:
    return sorted(path for path in APPS.rglob("*.py") if not _is_test(path))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def references(path: Path, package: str | None = None) -> list[tuple[int, str, bool]]:
    """(line, module, at module level) for every import of an `apps.` module in the file, and every dotted
    "apps.x.y" string (an include() or a handler path read with import_string)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    if package is None:
        package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = []

    def visit(node, top_level: bool):
        for child in ast.iter_child_nodes(node):
            nested = top_level and not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            if isinstance(child, ast.Import):
                found.extend((child.lineno, alias.name, top_level) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parent = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*parent, base] if base else parent)
                found.append((child.lineno, base, top_level))
                found.extend((child.lineno, f"{base}.{alias.name}", top_level) for alias in child.names)
            elif isinstance(child, ast.Constant) and isinstance(child.value, str) and DOTTED.match(child.value):
                found.append((child.lineno, child.value, False))
            visit(child, nested)

    visit(tree, True)
    return [(line, name, top) for line, name, top in found if name.startswith("apps.")]


def _app_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYER_OF else None


def _tag_libraries() -> dict[str, str]:
    return {path.stem: path.parent.parent.name for path in APPS.glob("*/templatetags/*.py") if path.stem != "__init__"}


def template_references(app: str) -> list[tuple[Path, int, str, str]]:
    """(template, line, what, app referred to) for includes, extends and tag libraries of other apps."""
    libraries = _tag_libraries()
    found = []
    for template in sorted((APPS / app / "templates").rglob("*.html")):
        for number, line in enumerate(template.read_text(encoding="utf-8").splitlines(), start=1):
            for match in TEMPLATE_TAG.finditer(line):
                if match.group(2):
                    found.append((template, number, f"{match.group(1)} {match.group(2)}/…", match.group(2)))
                for library in (match.group(3) or "").split():
                    if library in libraries:
                        found.append((template, number, f"load {library}", libraries[library]))
    return found


def test_every_app_has_a_layer():
    assert set(app_names()) == set(LAYER_OF), "add the new app to LAYERS here and to the picture in CONTRIBUTING.md"


def test_no_app_imports_a_higher_layer():
    upward = []
    for path in server_modules():
        app = path.relative_to(APPS).parts[0]
        if app not in LAYER_OF:
            continue
        for line, name, _top in references(path):
            target = _app_of(name)
            if target and LAYER_OF[target] > LAYER_OF[app]:
                upward.append(f"{path.relative_to(ROOT)}:{line}: {app} imports {name} ({target} is above it)")
    assert not upward, "imports against the arrows:\n" + "\n".join(upward)


def test_no_template_reaches_a_higher_app():
    upward = []
    for app in app_names():
        for template, line, what, target in template_references(app):
            if target in LAYER_OF and LAYER_OF[target] > LAYER_OF[app]:
                upward.append(f"{template.relative_to(ROOT)}:{line}: {what} ({target} is above {app})")
    assert not upward, "templates against the arrows (use apps/common/page_parts.py):\n" + "\n".join(upward)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                connect(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return components


def test_no_two_apps_import_each_other():
    graph: dict[str, set[str]] = defaultdict(set)
    for path in server_modules():
        app = path.relative_to(APPS).parts[0]
        for _line, name, _top in references(path):
            target = _app_of(name)
            if target and target != app:
                graph[app].add(target)
    assert not _cycles(graph), f"apps that import each other: {_cycles(graph)}"


def test_no_module_import_cycle():
    modules = {module_name(path) for path in server_modules()}
    graph: dict[str, set[str]] = defaultdict(set)
    for path in server_modules():
        source = module_name(path)
        for _line, name, top_level in references(path):
            if not top_level:
                continue  # a function-local import runs after both modules are loaded
            target = name if name in modules else name.rpartition(".")[0]
            if target in modules and target != source and not source.startswith(target + "."):
                graph[source].add(target)
    assert not _cycles(graph), f"modules that import each other at load time: {_cycles(graph)}"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from apps.decisions import models\n", ["apps.decisions", "apps.decisions.models"]),
        ("def f():\n    from apps.comparison.selectors import comparison_for\n",
         ["apps.comparison.selectors", "apps.comparison.selectors.comparison_for"]),
        ('urls = [include("apps.benchmarks.api.urls")]\n', ["apps.benchmarks.api.urls"]),
        ("import json\nfrom django.db import models\n", []),
    ],
)
def test_references_finds_imports_local_imports_and_dotted_strings(tmp_path, source, expected):
    module = tmp_path / "probe.py"
    module.write_text(source, encoding="utf-8")
    assert [name for _line, name, _top in references(module, package="apps.catalog")] == expected


def test_the_checks_catch_an_upward_import_and_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    assert LAYER_OF["decisions"] > LAYER_OF["benchmarks"] > LAYER_OF["evidence"] > LAYER_OF["quotes"]
