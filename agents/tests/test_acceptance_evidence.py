"""bench/evidence_resilience.py --tiny: the offline evidence path on the CPU (no server, no install) writes one
spool tar that `dossier-agent replay` can open, and a summary whose figures are labelled cpu."""

import json
import subprocess
import sys
import tarfile

import pytest
from dossier_agent.replay import open_spool_folder
from dossier_agent.spool import Spool

from conftest import AGENTS_ROOT

SCRIPT = AGENTS_ROOT.parent / "bench" / "evidence_resilience.py"


@pytest.mark.slow
def test_the_tiny_evidence_run_writes_a_replayable_spool_and_a_summary(tmp_path):
    out = tmp_path / "evidence"
    # a small budget: the acceptance checks run, the optional steps may be skipped for lack of time
    completed = subprocess.run([sys.executable, str(SCRIPT), "--tiny", "--out", str(out), "--budget-s", "45"],
                               capture_output=True, text=True, timeout=120, check=False)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["tiny"] and summary["datasheet"] is None and summary["total_seconds"] <= 60
    assert summary["steps"]["acceptance"]["status"] == "succeeded"
    acceptance = summary["acceptance"]
    assert acceptance["label"] == "cpu" and acceptance["verdict"] == "not_applicable"
    copy = acceptance["devices"][0]["checks"]["memory_bandwidth"]
    assert copy["label"] == "cpu" and copy["measured"] > 0 and copy["ratio"] is None
    assert copy["verdict"] == "not_applicable"
    for kind in ("checkpoint", "allreduce", "self-test"):
        step = summary["steps"][kind]
        assert "skipped" in step or step.get("status", "succeeded") == "succeeded"
    assert "not compared with a GPU datasheet" in (out / "summary.md").read_text()

    archive = out / "phase3-spool.tar"
    assert tarfile.is_tarfile(archive)
    root = open_spool_folder(archive)
    kinds = {attempt.kind: attempt for attempt in Spool(root).attempts()}
    assert "acceptance" in kinds and kinds["acceptance"].read_finish()["payload"]["status"] == "succeeded"
