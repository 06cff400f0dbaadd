"""The pure modules import no Django: a fresh interpreter imports them and has loaded no `django` module.

They hold the money, the exact decimals, the kinds and sources the models build their choices on, the cost model,
the mistakes and the memory estimator (CONTRIBUTING.md, "Pure math in pure modules"); keeping Django out lets them
run and be tested alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PURE_MODULES = (
    "apps.common.chart_text",
    "apps.common.decimals",
    "apps.common.money",
    "apps.common.provenance",
    "apps.common.work_units",
    "apps.common.spreadsheet",
    "apps.quotes.kinds",
    "apps.comparison.cost_model",
    "apps.comparison.hybrid",
    "apps.comparison.mistakes",
    "apps.budgets.check",
    "apps.budgets.tags",
    "apps.benchmarks.rehearsal",
    "apps.catalog.catalog_csv",
    "apps.workloads.memory",
    "apps.workloads.memory.roofline",
    "apps.actuals.parsing",
    "apps.actuals.drift",
)

IMPORT_AND_REPORT = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted(name for name in sys.modules if name == "django" or name.startswith("django."))))
"""


def test_the_pure_modules_load_no_django():
    environment = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    environment["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "agents")])
    completed = subprocess.run(
        [sys.executable, "-c", IMPORT_AND_REPORT, *PURE_MODULES],
        cwd=ROOT, env=environment, capture_output=True, text=True, check=True, timeout=60,
    )
    assert json.loads(completed.stdout) == []
