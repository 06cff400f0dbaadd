"""`make run` installs only the base dependencies and the agent package without extras (the runtime stamp of the
Makefile); the dev extra (pytest, Playwright, torch, ruff…) comes with `make test`. So the server must start without
any package that only the dev extra brings: every server module (and gunicorn's and Celery's entry points) is
imported and `check` runs, in a process where importing such a package fails.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
AGENT_PYPROJECT = tomllib.loads((ROOT / "agents" / "pyproject.toml").read_text(encoding="utf-8"))


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _closure(requirements: list[str]) -> set[str]:
    """The distributions these requirements install, with what they require in turn (extras' requirements left out)."""
    seen: set[str] = set()
    todo = [_name(requirement) for requirement in requirements]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        todo += [_name(requirement) for requirement in requires if "extra ==" not in requirement]
    return seen


def dev_only_modules() -> set[str]:
    runtime = _closure(PYPROJECT["project"]["dependencies"] + AGENT_PYPROJECT["project"]["dependencies"])
    dev_only = _closure(PYPROJECT["project"]["optional-dependencies"]["dev"]) - runtime
    modules = set()
    for module, distributions in metadata.packages_distributions().items():
        if any(_name(distribution) in dev_only for distribution in distributions) and not module.startswith("_"):
            modules.add(module)
    return modules


SERVER_WITHOUT_DEV_PACKAGES = """
import importlib, importlib.abc, json, sys
from pathlib import Path

BLOCKED = set(json.loads(sys.argv[1]))


class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is installed by the dev extra only")
        return None


sys.meta_path.insert(0, Blocker())
import django

django.setup()
for folder in ("apps", "config"):
    for path in sorted(Path(folder).rglob("*.py")):
        parts = path.with_suffix("").parts
        if "migrations" in parts or "tests" in parts or parts[-1] == "conftest":
            continue
        importlib.import_module(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
import celery.bin.celery, gunicorn.app.wsgiapp  # the two servers of the Procfile
from django.core.management import call_command

call_command("check")
print("ok")
"""


def test_the_dev_extra_is_what_make_test_adds():
    """Sanity of the list below: torch and pytest are dev-only; PyYAML is not (drf-spectacular requires it)."""
    modules = dev_only_modules()
    assert {"torch", "pytest", "playwright", "hypothesis"} <= modules
    assert "yaml" not in modules and "django" not in modules and "numpy" not in modules


def test_the_server_starts_without_the_dev_extra(tmp_path):
    import json

    environment = {name: value for name, value in os.environ.items()
                   if not name.startswith(("DOSSIER_", "DATABASE_", "CELERY_"))}
    environment.update({
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DOSSIER_VAR_DIR": str(tmp_path / "var"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), str(ROOT / "agents"), os.environ.get("PYTHONPATH")])),
    })
    completed = subprocess.run(
        [sys.executable, "-c", SERVER_WITHOUT_DEV_PACKAGES, json.dumps(sorted(dev_only_modules()))],
        cwd=ROOT, env=environment, capture_output=True, text=True, timeout=600, check=False,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    assert completed.stdout.strip().endswith("ok")
