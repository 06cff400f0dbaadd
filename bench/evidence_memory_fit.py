#!/usr/bin/env python3
"""Phase-1 evidence from a GPU node with no Dossier server and no package registry.

Runs the agent from this checkout's source folder (PYTHONPATH=agents, no install step):

1. `dossier-agent self-test` (at most 60 s): every job kind on its tiny configuration;
2. phase 1, the memory-fit job, for an 8B-class shape (Llama-3-8B, bf16) at a p95 context of 8,192 tokens and 64
   concurrent sessions, with at most 6 probes, each with its own timeout, through `dossier-agent run-job`, so the
   run lands in an offline spool exactly as on a node that cannot reach the server;
3. packs that spool as one tar file that `dossier-agent replay FILE.tar --server URL` uploads later through the
   normal ingest, and writes `summary.json` / `summary.md` (predicted vs measured peak, error %, largest
   concurrency, date, machine, commit).

Everything stays within `--budget-s` (default 240 s): each step's timeout is cut to what is left. The prediction
comes from the server's estimator (`apps/workloads/memory/`, plain modules) when the checkout has it.
`--tiny` runs the same steps with a tiny shape on the CPU, so the script is tested on machines without a GPU.

    python bench/evidence_memory_fit.py --out evidence-h200
    python bench/evidence_memory_fit.py --tiny --out /tmp/evidence-tiny
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ROOT / "agents"

# Llama-3-8B (config.json of meta-llama/Meta-Llama-3-8B): 8,030,261,248 parameters.
LLAMA_3_8B = {
    "architecture": "dense", "precision": "bf16", "num_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
    "num_kv_heads": 8, "ffn_size": 14336, "vocab_size": 128256, "tied_embeddings": False, "max_context_tokens": 8192,
}
TINY = {
    "architecture": "dense", "precision": "bf16", "num_layers": 2, "hidden_size": 128, "num_attention_heads": 4,
    "num_kv_heads": 2, "ffn_size": 256, "vocab_size": 512, "tied_embeddings": False,
}
FULL_WORKLOAD = {"p95_context_tokens": 8192, "concurrent_sessions": 64, "max_batched_tokens": 8192,
                 "decode_steps": 4, "block_size_tokens": 16}
TINY_WORKLOAD = {"p95_context_tokens": 256, "concurrent_sessions": 2, "max_batched_tokens": 512,
                 "decode_steps": 2, "block_size_tokens": 16}
MAX_PROBES = 6


def log(message: str, **fields: Any) -> None:
    extra = " ".join(f"{key}={value}" for key, value in fields.items())
    print(f"[evidence {time.strftime('%H:%M:%S')}] {message} {extra}".rstrip(), flush=True)


def agent_environment(out: Path) -> dict[str, str]:
    """The agent from the source folder, with a state folder and an empty config file of its own."""
    config = out / "agent.toml"
    config.write_text("# evidence run: defaults only\n")
    environment = {key: value for key, value in os.environ.items() if not key.startswith("DOSSIER_AGENT_")}
    existing = environment.get("PYTHONPATH")
    environment.update({
        "PYTHONPATH": str(AGENTS) + (os.pathsep + existing if existing else ""),
        "DOSSIER_AGENT_CONFIG": str(config),
        "DOSSIER_AGENT_STATE_DIR": str(out / "state"),
        "DOSSIER_AGENT_TELEMETRY_INTERVAL_S": "1",
        "DOSSIER_AGENT_SHUTDOWN_GRACE_S": "5",
    })
    return environment


def run_step(name: str, command: list[str], *, timeout_s: float, environment: dict[str, str],
             out: Path) -> dict[str, Any]:
    """Run one agent command; on timeout SIGTERM (the agent hands the job back), then SIGKILL."""
    log(f"{name}: start", timeout_s=round(timeout_s, 1))
    began = time.monotonic()
    with open(out / f"{name}.stdout", "w") as stdout, open(out / f"{name}.stderr", "w") as stderr:
        process = subprocess.Popen(command, stdout=stdout, stderr=stderr, env=environment, cwd=ROOT,
                                   start_new_session=True)
        timed_out = False
        try:
            process.wait(timeout=max(timeout_s, 1.0))
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    seconds = round(time.monotonic() - began, 2)
    log(f"{name}: end", returncode=process.returncode, seconds=seconds, timed_out=timed_out)
    return {"returncode": process.returncode, "seconds": seconds, "timed_out": timed_out,
            "stdout": (out / f"{name}.stdout").read_text(), "stderr_tail": (out / f"{name}.stderr").read_text()[-3000:]}


def estimator_prediction(model: dict[str, Any], workload: dict[str, Any]) -> tuple[dict | None, str]:
    """The server's estimate for the target, from the checkout's estimator (a plain module: no Django needed)."""
    sys.path.insert(0, str(ROOT))
    try:
        from apps.workloads.memory.inference import InferenceRequest, estimate_inference
        from apps.workloads.memory.shapes import ModelShape
    except ImportError as error:
        return None, f"estimator not importable ({error}): no prediction"
    finally:
        sys.path.remove(str(ROOT))
    shape = ModelShape(**model)
    request = InferenceRequest(
        p95_context_tokens=workload["p95_context_tokens"], concurrent_sessions=workload["concurrent_sessions"],
        block_size_tokens=workload["block_size_tokens"], max_batched_tokens=workload["max_batched_tokens"],
    )
    return estimate_inference(shape, request).as_dict(), "apps/workloads/memory/inference.py estimate_inference"


def predicted_largest_concurrency(model: dict[str, Any], workload: dict[str, Any], total_mib: int | None) -> int | None:
    if not total_mib:
        return None
    sys.path.insert(0, str(ROOT))
    try:
        from apps.workloads.memory.capacity import choose_capacity
        from apps.workloads.memory.inference import InferenceRequest
        from apps.workloads.memory.search import largest_concurrency
        from apps.workloads.memory.shapes import ModelShape
    except ImportError:
        return None
    finally:
        sys.path.remove(str(ROOT))
    request = InferenceRequest(
        p95_context_tokens=workload["p95_context_tokens"], concurrent_sessions=1,
        block_size_tokens=workload["block_size_tokens"], max_batched_tokens=workload["max_batched_tokens"],
    )
    capacity = choose_capacity(measured_total_mib=int(total_mib))
    return largest_concurrency(ModelShape(**model), request, capacity, upper_bound=4096)


def job_spec(tiny: bool, probe_timeout_s: float, predicted: dict | None) -> dict[str, Any]:
    workload = TINY_WORKLOAD if tiny else FULL_WORKLOAD
    search = {"max_probes": 3 if tiny else MAX_PROBES, "probe_timeout_s": round(probe_timeout_s, 1),
              "maximum": 8 if tiny else 512}
    return {
        "kind": "memory_fit",
        "spec": {
            "model": TINY if tiny else LLAMA_3_8B,
            "workload": "inference",
            "inference": workload,
            "predicted": predicted,
            # The evidence is the GPU's: no silent fall back to the CPU when NVML is missing on the node.
            "device": "cpu" if tiny else "cuda",
            "search": search,
        },
    }


def read_finish(spool: Path) -> dict[str, Any] | None:
    for path in sorted((spool / "attempts").glob("*/finish.json")):
        return json.loads(path.read_text())["payload"]
    return None


def read_inventory(spool: Path) -> dict[str, Any]:
    for path in sorted((spool / "attempts").glob("*/inventory.json")):
        return json.loads(path.read_text())
    return {}


def git_commit(explicit: str | None) -> str:
    if explicit:
        return explicit
    try:
        completed = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                   timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return completed.stdout.strip() if completed.returncode == 0 else "unknown (no git metadata in this copy)"


def machine(inventory: dict[str, Any]) -> dict[str, Any]:
    host = inventory.get("host") or {}
    software = inventory.get("software") or {}
    return {
        "gpus": [{key: gpu.get(key) for key in ("name", "memory_total_mib", "uuid", "architecture")}
                 for gpu in inventory.get("gpus") or []],
        "driver_version": inventory.get("driver_version"),
        "cuda_driver_version": inventory.get("cuda_driver_version"),
        "cpu": host.get("cpu_model"),
        "hostname": host.get("hostname") or platform.node(),
        "python": platform.python_version(),
        "torch": software.get("torch_version"),
        "torch_cuda": software.get("torch_cuda_version"),
    }


def summarise(result: dict[str, Any] | None, status: str | None, extra: dict[str, Any]) -> dict[str, Any]:
    summary: dict[str, Any] = {"phase1_status": status, **extra}
    if not result:
        return summary
    comparison = {row["component"]: row for row in result.get("comparison") or []}
    total = comparison.get("total_without_margin") or {}
    summary.update({
        "device": result["labels"].get("device_kind"),
        "usable_memory": result.get("usable_memory"),
        "target": result.get("target"),
        "fits_at_target": result.get("fits_at_target"),
        "predicted_peak_bytes_without_margin": total.get("predicted_bytes"),
        "measured_peak_bytes": result.get("peak_bytes"),
        "peak_error_pct": total.get("error_pct"),
        "components": [{key: row.get(key) for key in ("component", "predicted_bytes", "measured_bytes", "error_pct")}
                       for row in result.get("comparison") or []],
        "headroom_bytes": result.get("headroom_bytes"),
        "headroom_pct": result.get("headroom_pct"),
        "largest_fitting_concurrency": result["largest_fitting"]["value"],
        "largest_fitting_exact": result["largest_fitting"]["exact"],
        "oom_count": result.get("oom_count"),
        "probe_count": result.get("probe_count"),
        "labels": result.get("labels"),
    })
    return summary


def markdown(summary: dict[str, Any]) -> str:
    def size(value: Any) -> str:
        if not isinstance(value, int):
            return "—"
        return f"{value / 2**30:.2f} GiB" if abs(value) >= 2**30 else f"{value / 2**20:.1f} MiB"

    lines = [
        f"# Phase 1 (memory fit) evidence — {summary['date']}",
        "",
        f"- machine: {json.dumps(summary['machine'], sort_keys=True)}",
        f"- commit: {summary['commit']}",
        f"- shape: {summary['shape']}, target: {json.dumps(summary.get('target'))}",
        f"- self-test: {summary['self_test']}; phase 1: {summary['phase1_status']}",
        f"- usable memory: {json.dumps(summary.get('usable_memory'), sort_keys=True)}",
        f"- peak: predicted {size(summary.get('predicted_peak_bytes_without_margin'))} (without the safety margin), "
        f"measured {size(summary.get('measured_peak_bytes'))}, error {summary.get('peak_error_pct')} %",
        f"- largest fitting concurrency: measured {summary.get('largest_fitting_concurrency')} "
        f"(exact bracket: {summary.get('largest_fitting_exact')}), estimator "
        f"{summary.get('predicted_largest_concurrency')}; OOMs {summary.get('oom_count')} "
        f"in {summary.get('probe_count')} probes",
        "",
        "| component | predicted | measured | error % |",
        "|---|---|---|---|",
    ]
    for row in summary.get("components") or []:
        lines.append(f"| {row['component']} | {size(row['predicted_bytes'])} | {size(row['measured_bytes'])} | "
                     f"{row['error_pct'] if row['error_pct'] is not None else '—'} |")
    lines += ["", f"Spool: `{summary['spool_tar']}` — upload with `dossier-agent replay {summary['spool_tar']} "
                  "--server URL`.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("evidence-phase1"), help="output folder (created)")
    parser.add_argument("--tiny", action="store_true", help="tiny shape on the CPU (for testing the script)")
    parser.add_argument("--budget-s", type=float, default=240.0, help="wall-clock budget for everything")
    parser.add_argument("--self-test-timeout-s", type=float, default=60.0)
    parser.add_argument("--probe-timeout-s", type=float, default=40.0, help="upper bound of each probe's timeout")
    parser.add_argument("--commit", help="commit of this checkout, when the copy has no .git")
    parser.add_argument("--python", default=sys.executable, help="interpreter that has torch")
    arguments = parser.parse_args(argv)

    began = time.monotonic()
    deadline = began + arguments.budget_s
    out = arguments.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    environment = agent_environment(out)
    agent = [arguments.python, "-m", "dossier_agent"]

    self_test = run_step("self-test", [*agent, "self-test"], environment=environment, out=out,
                         timeout_s=min(arguments.self_test_timeout_s, deadline - time.monotonic() - 30))
    try:
        self_test_report = json.loads(self_test["stdout"])
    except ValueError:
        self_test_report = None
    (out / "self-test.json").write_text(json.dumps({**self_test, "report": self_test_report}, indent=2))
    self_test_passed = bool(self_test_report and self_test_report.get("passed")) and not self_test["timed_out"]

    model = TINY if arguments.tiny else LLAMA_3_8B
    workload = TINY_WORKLOAD if arguments.tiny else FULL_WORKLOAD
    predicted, prediction_source = estimator_prediction(model, workload)
    remaining = deadline - time.monotonic() - 15  # keep time to pack the spool
    max_probes = 3 if arguments.tiny else MAX_PROBES
    probe_timeout = max(5.0, min(arguments.probe_timeout_s, (remaining - 10) / max_probes))
    spec = job_spec(arguments.tiny, probe_timeout, predicted)
    spec_path = out / "phase1-spec.json"
    spec_path.write_text(json.dumps(spec, indent=2))
    spool = out / "spool"
    phase1 = run_step("phase1", [*agent, "run-job", str(spec_path), "--spool", str(spool),
                                 "--work-dir", str(out / "work")],
                      environment=environment, out=out, timeout_s=remaining)

    payload = read_finish(spool) if (spool / "attempts").exists() else None
    archive = out / "phase1-spool.tar"
    if spool.exists():
        with tarfile.open(archive, "w") as tar:
            tar.add(spool, arcname="spool")
    inventory = read_inventory(spool) if spool.exists() else {}
    result = (payload or {}).get("result")
    total_mib = ((result or {}).get("usable_memory") or {}).get("total_mib") if result else None
    summary = summarise(result, (payload or {}).get("status"), {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine(inventory),
        "commit": git_commit(arguments.commit),
        "shape": "tiny (CPU test)" if arguments.tiny else "Llama-3-8B, bf16",
        "prediction_source": prediction_source,
        "predicted_largest_concurrency": predicted_largest_concurrency(model, workload, total_mib)
        if (result or {}).get("labels", {}).get("device_kind") == "cuda" else None,
        "self_test": "passed" if self_test_passed else "failed",
        "self_test_seconds": self_test["seconds"],
        "phase1_seconds": phase1["seconds"],
        "phase1_timed_out": phase1["timed_out"],
        "phase1_error": (payload or {}).get("error"),
        "spool_tar": str(archive) if archive.exists() else None,
        "total_seconds": round(time.monotonic() - began, 2),
        "budget_s": arguments.budget_s,
    })
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True))
    (out / "summary.md").write_text(markdown(summary))
    print(json.dumps(summary, indent=2, sort_keys=True))
    succeeded = self_test_passed and summary["phase1_status"] == "succeeded" and archive.exists()
    return 0 if succeeded else 1


if __name__ == "__main__":
    sys.exit(main())
