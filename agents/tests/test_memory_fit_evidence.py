"""bench/evidence_memory_fit.py, the offline phase-1 evidence script, with its tiny CPU shape: self-test and phase 1
through the agent's own command run from the source folder, within its time budget, and a spool tar file that
`dossier-agent replay` uploads through the ordinary endpoints."""

import json
import subprocess
import sys
import time

from conftest import AGENTS_ROOT, agent_command, agent_environment

SCRIPT = AGENTS_ROOT.parent / "bench" / "evidence_memory_fit.py"
BUDGET_S = 120


def test_the_tiny_evidence_run_fits_its_budget_and_its_spool_replays(server, tmp_path):
    out = tmp_path / "evidence"
    began = time.monotonic()
    completed = subprocess.run(
        [sys.executable, str(SCRIPT), "--tiny", "--out", str(out), "--budget-s", str(BUDGET_S)],
        capture_output=True, text=True, timeout=BUDGET_S + 30, check=False, cwd=tmp_path,
    )
    elapsed = time.monotonic() - began
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    assert elapsed < BUDGET_S

    summary = json.loads((out / "summary.json").read_text())
    assert summary["self_test"] == "passed" and summary["phase1_status"] == "succeeded"
    assert summary["self_test_seconds"] < 60
    assert summary["device"] == "cpu" and summary["labels"]["memory_accounting"] == "cpu-process-rss"
    assert summary["prediction_source"] == "apps/workloads/memory/inference.py estimate_inference"
    assert summary["measured_peak_bytes"] > 0 and summary["peak_error_pct"] is not None
    assert summary["largest_fitting_concurrency"] >= 2 and 1 <= summary["probe_count"] <= 3
    self_test = json.loads((out / "self-test.json").read_text())["report"]
    assert {result["kind"] for result in self_test["results"]} >= {"inventory", "memory_fit"}
    assert "Phase 1 (memory fit) evidence" in (out / "summary.md").read_text()

    archive = out / "phase1-spool.tar"
    replay = subprocess.run(
        agent_command("replay", str(archive), "--server", server.url),
        env=agent_environment(tmp_path, DOSSIER_AGENT_AGENT_TOKEN=server.register_agent()),
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert replay.returncode == 0, replay.stderr[-3000:]
    (job,) = server.state.jobs.values()
    assert job.kind == "memory_fit" and job.offline_run_id
    finish = job.attempts[0].finish
    assert finish["status"] == "succeeded"
    assert finish["result"]["largest_fitting"]["value"] == summary["largest_fitting_concurrency"]
    assert [artifact["name"] for artifact in finish["artifacts"]] == ["memory_fit_probes.json"]
    kinds = {event["kind"] for event in job.attempts[0].events.values()}
    assert "measurement" in kinds
