"""The server imports one part of the agent package: `dossier_agent.contract`, the pure code both sides share (metrics,
load and job specs, verdict math, operation names). Everything else in `dossier_agent` runs jobs on a GPU node
(subprocesses, threads, NVML, torch) and has no place in the web process.

Checked three ways: the modules a fresh server process has loaded once every server module is imported; every import
statement under apps/, function-local ones included; and the imports of the contract itself.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AGENT_PACKAGE = ROOT / "agents" / "dossier_agent"
CONTRACT = "dossier_agent.contract"
#: what the contract must never import: processes, threads, sockets and servers, GPU libraries, HTTP clients
FORBIDDEN_IN_CONTRACT = frozenset({
    "subprocess", "threading", "multiprocessing", "concurrent", "asyncio", "socket", "ssl", "selectors", "signal",
    "ctypes", "http", "urllib.request", "pynvml", "torch", "httpx", "psutil",
})

IMPORT_EVERY_SERVER_MODULE = """
import importlib, json, sys
from pathlib import Path

import django

django.setup()
names = []
for folder in ("apps", "config"):
    for path in sorted(Path(folder).rglob("*.py")):
        parts = path.with_suffix("").parts
        if "migrations" in parts or "tests" in parts or parts[-1] == "conftest":
            continue
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
for name in names:
    importlib.import_module(name)
print(json.dumps({
    "imported": len(names),
    "agent": sorted(name for name in sys.modules if name == "dossier_agent" or name.startswith("dossier_agent.")),
    "heavy": sorted(name for name in ("torch", "pynvml", "httpx") if name in sys.modules),
}))
"""


def _is_contract(module: str) -> bool:
    return module == CONTRACT or module.startswith(CONTRACT + ".")


def _imported_modules(source: str) -> list[tuple[int, str]]:
    """(line, module) for every absolute import in the source, at any depth (inside functions and classes too);
    `from package import name` counts as `package.name`, since the name may be a module."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and getattr(node.func, "attr", getattr(node.func, "id", None)) in ("import_module", "__import__")):
            found.append((node.lineno, node.args[0].value))
    return found


def _agent_imports_outside_contract(source: str) -> list[tuple[int, str]]:
    return [(line, module) for line, module in _imported_modules(source)
            if module.split(".")[0] == "dossier_agent" and not _is_contract(module)]


def test_a_server_process_loads_only_the_contract_of_the_agent_package():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), str(ROOT / "agents"), os.environ.get("PYTHONPATH")]))}
    completed = subprocess.run([sys.executable, "-c", IMPORT_EVERY_SERVER_MODULE], cwd=ROOT, env=env,
                               capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, completed.stderr[-4000:]
    loaded = json.loads(completed.stdout.strip().splitlines()[-1])

    assert loaded["imported"] > 50
    # The ingest of throughput results imports the metrics at module level: the walk did reach the server's code.
    assert "dossier_agent.contract.metrics" in loaded["agent"]
    outside = [name for name in loaded["agent"] if name != "dossier_agent" and not _is_contract(name)]
    assert outside == [], f"the server loaded agent modules outside {CONTRACT}: {outside}"
    assert loaded["heavy"] == []


def test_the_check_sees_imports_inside_functions():
    source = ("from dossier_agent.contract import metrics\n"
              "def ingest():\n"
              "    from dossier_agent.jobs import allreduce\n"
              "    import dossier_agent.loadgen.runner\n"
              "    from dossier_agent import contract, spool\n"
              "    return importlib.import_module('dossier_agent.probe')\n")
    assert _agent_imports_outside_contract(source) == [
        (3, "dossier_agent.jobs.allreduce"), (4, "dossier_agent.loadgen.runner"), (5, "dossier_agent.spool"),
        (6, "dossier_agent.probe")]


def test_no_server_module_imports_the_agent_package_outside_its_contract():
    offenders = []
    for path in sorted((ROOT / "apps").rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if "migrations" in parts or "tests" in parts:
            continue  # the server's tests may run the agent's jobs to produce real results
        for line, module in _agent_imports_outside_contract(path.read_text(encoding="utf-8")):
            offenders.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert offenders == []


def test_the_contract_imports_nothing_that_starts_processes_threads_or_gpu_libraries():
    modules = [AGENT_PACKAGE / "__init__.py", *sorted((AGENT_PACKAGE / "contract").glob("*.py"))]
    assert len(modules) > 2
    problems = []
    for path in modules:
        for line, module in _imported_modules(path.read_text(encoding="utf-8")):
            top = module.split(".")[0]
            if top == "dossier_agent":
                allowed = _is_contract(module)
            elif top == "__future__" or top == "numpy":
                allowed = True
            else:
                allowed = top in sys.stdlib_module_names and not any(
                    module == name or module.startswith(name + ".") for name in FORBIDDEN_IN_CONTRACT)
            if not allowed:
                problems.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert problems == []
