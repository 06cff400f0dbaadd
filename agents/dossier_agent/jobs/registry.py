"""Which job kinds this agent offers: every module in `dossier_agent/jobs/` (and in configured extra folders)
that imports cleanly and defines `KIND` and `run`. A module that fails to import is not offered; why is kept.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import pkgutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from dossier_agent.structured_log import log

logger = logging.getLogger(__name__)

PACKAGE = "dossier_agent.jobs"
EXTRA_PACKAGE = "dossier_agent_extra_jobs"
_NOT_JOB_MODULES = {"registry"}


@dataclass(frozen=True)
class JobKind:
    kind: str
    module_name: str
    file: str | None
    self_test_spec: dict[str, Any] = field(default_factory=dict)

    def load(self) -> ModuleType:
        """Import the module (in the job process this is a fresh import)."""
        if self.module_name in sys.modules:
            return sys.modules[self.module_name]
        if self.module_name.startswith(PACKAGE + "."):
            return importlib.import_module(self.module_name)
        return _import_file(self.module_name, Path(self.file))

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "module_name": self.module_name, "file": self.file}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobKind:
        return cls(kind=data["kind"], module_name=data["module_name"], file=data.get("file"))


@dataclass
class JobRegistry:
    kinds: dict[str, JobKind] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)

    def offered(self) -> list[str]:
        return sorted(self.kinds)

    def get(self, kind: str) -> JobKind | None:
        return self.kinds.get(kind)


def _import_file(module_name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def _candidate_modules(extra_dirs: Iterable[Path]) -> list[tuple[str, Path | None]]:
    package = importlib.import_module(PACKAGE)
    candidates: list[tuple[str, Path | None]] = [
        (f"{PACKAGE}.{info.name}", None)
        for info in pkgutil.iter_modules(package.__path__)
        if not info.name.startswith("_") and info.name not in _NOT_JOB_MODULES and not info.ispkg
    ]
    for directory in extra_dirs:
        for path in sorted(Path(directory).glob("*.py")):
            if not path.name.startswith("_"):
                candidates.append((f"{EXTRA_PACKAGE}.{path.stem}", path))
    return candidates


def _missing_requirements(module: ModuleType) -> list[str]:
    missing = []
    for requirement in getattr(module, "REQUIRES", ()):
        try:
            found = importlib.util.find_spec(requirement) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(requirement)
    return missing


def discover(extra_dirs: Iterable[Path] = (), only: Iterable[str] | None = None) -> JobRegistry:
    """Import every job module; `only` restricts the offered kinds to an operator's list."""
    registry = JobRegistry()
    wanted = set(only) if only is not None else None
    for module_name, path in _candidate_modules(extra_dirs):
        short_name = module_name.rsplit(".", 1)[1]
        try:
            module = importlib.import_module(module_name) if path is None else _import_file(module_name, path)
        except Exception as error:
            registry.unavailable[short_name] = f"import failed: {type(error).__name__}: {error}"
            log(logger, logging.INFO, "job kind not offered", module=module_name,
                reason=registry.unavailable[short_name])
            continue
        kind, run = getattr(module, "KIND", None), getattr(module, "run", None)
        if not isinstance(kind, str) or not callable(run):
            continue  # a helper module (shared code of several jobs), not a job
        missing = _missing_requirements(module)
        if missing:
            registry.unavailable[kind] = f"missing {', '.join(missing)}"
        elif wanted is not None and kind not in wanted:
            registry.unavailable[kind] = "not in this agent's job_kinds setting"
        elif kind in registry.kinds:
            registry.unavailable[f"{kind}@{short_name}"] = (
                f"kind {kind} is already defined by {registry.kinds[kind].module_name}"
            )
        else:
            registry.kinds[kind] = JobKind(
                kind=kind,
                module_name=module_name,
                file=str(path) if path is not None else getattr(module, "__file__", None),
                self_test_spec=dict(getattr(module, "SELF_TEST_SPEC", {}) or {}),
            )
    return registry
