#!/usr/bin/env python3
"""Phase-3 evidence from a GPU node with no Dossier server and no package registry.

Runs the agent from this checkout's source folder (PYTHONPATH=agents, no install step), like
bench/evidence_memory_fit.py (whose process helpers it reuses):

1. the GPU acceptance checks (`acceptance` job) against the datasheet of the GPU (default NVIDIA H200: 4.8 TB/s HBM3e,
   989 dense BF16 TFLOPS), at bf16: device memory bandwidth, matrix product, host<->device, NVML health, and
   `dcgmi diag -r 1` where DCGM is installed;
2. the checkpoint round trip (`checkpoint` job: save, SIGKILL, restore, hash) in the work folder, when time is left;
3. the all-reduce bus bandwidth across the node's GPUs (`allreduce` job, NCCL) when the node has two GPUs or more;
4. `dossier-agent self-test` of those three kinds, when time is left;

each through `dossier-agent run-job` into one offline spool, packed as one tar file that
`dossier-agent replay FILE.tar --server URL` uploads later through the normal ingest. It writes `summary.json` and
`summary.md` (ratios to the datasheet, health, flags, machine, commit, date).

Everything stays within `--budget-s` (default 240 s): each step's timeout is cut to what is left, and the optional
steps are skipped when too little is. `--tiny` runs the same steps on the CPU with tiny sizes (two gloo ranks for the
all-reduce), so the script is tested on machines without a GPU; CPU figures are labelled cpu, never compared with a
GPU datasheet.

    python bench/evidence_resilience.py --out docs/evidence/phase3-h200
    python bench/evidence_resilience.py --tiny --out /tmp/evidence3-tiny
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from evidence_memory_fit import agent_environment, git_commit, log, machine, run_step

# NVIDIA H200 (SXM) datasheet: 4.8 TB/s; BF16/FP16 1,979 TFLOPS and FP8 3,958 TFLOPS *with sparsity*, so half of
# that dense; TF32 989 with sparsity; FP64/FP32 67 TFLOPS. The host link is derived from NVML (PCIe gen x width).
H200_DATASHEET = {
    "gpu": "NVIDIA H200",
    "memory_bandwidth_bytes_per_s": 4.8e12,
    "matmul_flops_per_s": {"bf16": 989e12, "fp16": 989e12, "fp8": 1979e12, "tf32": 494e12, "fp32": 67e12},
    "host_link_bytes_per_s": None,
    "source": "NVIDIA H200 Tensor Core GPU datasheet (SXM): 4.8 TB/s, 989 dense BF16 TFLOPS",
}
KINDS = ("acceptance", "checkpoint", "allreduce")


def acceptance_spec(tiny: bool, dcgm_timeout_s: float) -> dict[str, Any]:
    spec: dict[str, Any] = {"device": "cpu" if tiny else "cuda", "precision": "bf16", "datasheet": H200_DATASHEET,
                            "dcgm": {"enabled": not tiny, "level": 1, "timeout_s": round(dcgm_timeout_s)}}
    if tiny:
        spec.update(sizes={"copy_bytes": 8 * 2**20, "matmul_n": 192, "host_bytes": 0},
                    timing={"target_s": 0.05, "repeats": 3, "warmup": 1}, cpu_threads=1)
    return spec


def checkpoint_spec(tiny: bool, out: Path, timeout_s: float) -> dict[str, Any]:
    target = out / "checkpoint-target"
    target.mkdir(parents=True, exist_ok=True)
    return {"device": "cpu" if tiny else "auto", "state_bytes": 4 * 2**20 if tiny else 2 * 2**30,
            "batch_size": 8 if tiny else 256, "timeout_s": round(timeout_s),
            "targets": [{"name": "local", "path": str(target)}], **({"cpu_threads": 1} if tiny else {})}


def allreduce_spec(tiny: bool, timeout_s: float) -> dict[str, Any]:
    if tiny:
        return {"device": "cpu", "local_ranks": 2, "cpu_threads": 1, "sizes_bytes": [4096, 262144, 1048576],
                "warmup": 1, "target_s": 0.02, "timeout_s": round(timeout_s)}
    return {"device": "cuda", "dtype": "bf16", "sizes": {"min_bytes": 1024, "max_bytes": 2**30, "factor": 4},
            "timeout_s": round(timeout_s)}


def finished_runs(spool: Path) -> dict[str, dict[str, Any]]:
    """kind -> finish payload of each attempt in the spool."""
    runs = {}
    for attempt in sorted((spool / "attempts").glob("*/attempt.json")):
        finish = attempt.parent / "finish.json"
        if finish.exists():
            runs[json.loads(attempt.read_text())["kind"]] = json.loads(finish.read_text())["payload"]
    return runs


def inventory_of(spool: Path) -> dict[str, Any]:
    for path in sorted((spool / "attempts").glob("*/inventory.json")):
        return json.loads(path.read_text())
    return {}


def gpu_count(inventory: dict[str, Any]) -> int:
    return len(inventory.get("gpus") or [])


def summarise_acceptance(result: dict[str, Any] | None) -> dict[str, Any]:
    if not result:
        return {}
    devices = []
    for device in result["devices"]:
        checks = {}
        for check in device["checks"]:
            checks[check["check"]] = {key: check.get(key) for key in (
                "measured", "measured_best", "unit", "datasheet", "ratio", "threshold", "verdict", "label",
                "precision", "datasheet_source", "error")}
        devices.append({"index": device["index"], "name": device["name"], "uuid": device["uuid"], "checks": checks})
    return {"label": result["label"], "verdict": result["verdict"], "precision": result["precision"],
            "devices": devices, "health": {key: result["health"].get(key) for key in ("verdict", "findings")},
            "dcgm": {key: result["dcgm"].get(key) for key in ("verdict", "reason", "failed_tests", "seconds")},
            "flags": result["flags"], "thresholds_source": result["thresholds_source"]}


def summarise_checkpoint(result: dict[str, Any] | None) -> dict[str, Any]:
    if not result:
        return {}
    return {"label": result["label"], "verified": result["verified"], "proxy": result["proxy"],
            "targets": [{key: target[key] for key in ("name", "mount", "bytes", "hash_equal", "step_ok",
                                                      "write_bytes_per_s", "read_bytes_per_s", "page_cache",
                                                      "resume_matches_uninterrupted")}
                        for target in result["targets"]]}


def summarise_allreduce(result: dict[str, Any] | None) -> dict[str, Any]:
    if not result:
        return {}
    return {key: result[key] for key in ("label", "backend", "world_size", "peak_busbw_gbps", "peak_at_bytes",
                                         "busbw_at_largest_gbps", "rows", "correct")}


def _figure(value: Any, unit: str) -> str:
    if value is None:
        return "—"
    if unit == "flop/s":
        return f"{value / 1e12:,.1f} TFLOPS" if value >= 1e12 else f"{value / 1e9:,.2f} GFLOPS"
    return f"{value / 1e12:,.3f} TB/s" if value >= 1e12 else f"{value / 1e9:,.2f} GB/s"


def markdown(summary: dict[str, Any]) -> str:
    acceptance = summary.get("acceptance") or {}
    lines = [
        f"# Phase 3 evidence (acceptance, checkpoint, interconnect) — {summary['date']}",
        "",
        f"- machine: {json.dumps(summary['machine'], sort_keys=True)}",
        f"- commit: {summary['commit']}",
        f"- datasheet: {H200_DATASHEET['source']}" if not summary["tiny"] else
        "- CPU run (--tiny): figures labelled cpu, not compared with a GPU datasheet",
        f"- steps: {json.dumps(summary['steps'], sort_keys=True)}",
        f"- acceptance verdict: {acceptance.get('verdict')}; NVML health: "
        f"{(acceptance.get('health') or {}).get('verdict')}; DCGM: {(acceptance.get('dcgm') or {}).get('verdict')}",
        "",
        "| device | check | measured (median) | best | datasheet | ratio | threshold | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for device in acceptance.get("devices") or []:
        for name, check in device["checks"].items():
            ratio = f"{check['ratio']:.3f}" if check["ratio"] is not None else "—"
            threshold = f"{check['threshold']:.2f}" if check["threshold"] is not None else "—"
            label = f"{name} ({check['precision']})" if check.get("precision") else name
            where = "cpu" if device["index"] is None else f"GPU {device['index']}"
            figures = " | ".join(_figure(check[key], check["unit"]) for key in ("measured", "measured_best",
                                                                                  "datasheet"))
            lines.append(f"| {where} {device['name']} | {label} | {figures} | {ratio} | {threshold} | "
                         f"{check['verdict']} |")
    for flag in acceptance.get("flags") or []:
        lines.append(f"\n- flag ({flag['severity']}, {flag['source']}): {flag['message']}")
    checkpoint = summary.get("checkpoint") or {}
    for target in checkpoint.get("targets") or []:
        lines.append(f"\n- checkpoint on {target['name']} ({(target['mount'] or {}).get('fstype')}): "
                     f"{target['bytes'] / 2**30:.2f} GiB, write {target['write_bytes_per_s'] / 1e9:.2f} GB/s, "
                     f"read {target['read_bytes_per_s'] / 1e9:.2f} GB/s ({target['page_cache']}), "
                     f"hash equal: {target['hash_equal']}, resumed step ok: {target['step_ok']}")
    allreduce = summary.get("allreduce") or {}
    if allreduce:
        lines.append(f"\n- all-reduce ({allreduce['backend']}, {allreduce['world_size']} ranks): peak busbw "
                     f"{allreduce['peak_busbw_gbps']:.2f} GB/s at {allreduce['peak_at_bytes']} B, "
                     f"{allreduce['busbw_at_largest_gbps']:.2f} GB/s at the largest size")
    lines += ["", f"Spool: `{summary['spool_tar']}` — upload with `dossier-agent replay {summary['spool_tar']} "
                  "--server URL`.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("evidence-phase3"), help="output folder (created)")
    parser.add_argument("--tiny", action="store_true", help="tiny sizes on the CPU (for testing the script)")
    parser.add_argument("--budget-s", type=float, default=240.0, help="wall-clock budget for everything")
    parser.add_argument("--commit", help="commit of this checkout, when the copy has no .git")
    parser.add_argument("--python", default=sys.executable, help="interpreter that has torch")
    arguments = parser.parse_args(argv)

    began = time.monotonic()
    deadline = began + arguments.budget_s
    out = arguments.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    environment = agent_environment(out)
    agent = [arguments.python, "-m", "dossier_agent"]
    spool = out / "spool"
    steps: dict[str, Any] = {}

    def left() -> float:
        return deadline - time.monotonic()

    def job(kind: str, spec: dict[str, Any], timeout_s: float) -> None:
        spec_path = out / f"{kind}-spec.json"
        spec_path.write_text(json.dumps({"kind": kind, "spec": spec}, indent=2))
        step = run_step(kind, [*agent, "run-job", str(spec_path), "--spool", str(spool), "--work-dir",
                               str(out / "work")], environment=environment, out=out, timeout_s=timeout_s)
        steps[kind] = {"seconds": step["seconds"], "timed_out": step["timed_out"], "returncode": step["returncode"]}

    reserve = 15.0  # packing the spool and writing the summary
    job("acceptance", acceptance_spec(arguments.tiny, dcgm_timeout_s=min(90.0, max(10.0, left() / 3))),
        timeout_s=min(150.0, left() - reserve))
    if left() - reserve >= 45:
        job("checkpoint", checkpoint_spec(arguments.tiny, out, timeout_s=min(120.0, left() - reserve - 10)),
            timeout_s=min(130.0, left() - reserve))
    else:
        steps["checkpoint"] = {"skipped": f"only {left():.0f} s of the budget left"}
    gpus = gpu_count(inventory_of(spool)) if spool.exists() else 0
    if (arguments.tiny or gpus >= 2) and left() - reserve >= 40:
        job("allreduce", allreduce_spec(arguments.tiny, timeout_s=min(120.0, left() - reserve - 10)),
            timeout_s=min(130.0, left() - reserve))
    else:
        steps["allreduce"] = {"skipped": "fewer than 2 GPUs" if gpus < 2 and not arguments.tiny else
                              f"only {left():.0f} s of the budget left"}
    self_test_passed = None
    if left() - reserve >= 50:
        step = run_step("self-test", [*agent, "self-test", *[part for kind in KINDS for part in ("--kind", kind)]],
                        environment=environment, out=out, timeout_s=min(90.0, left() - reserve))
        try:
            report = json.loads(step["stdout"])
        except ValueError:
            report = None
        (out / "self-test.json").write_text(json.dumps({**step, "report": report}, indent=2))
        self_test_passed = bool(report and report.get("passed")) and not step["timed_out"]
        steps["self-test"] = {"seconds": step["seconds"], "passed": self_test_passed}
    else:
        steps["self-test"] = {"skipped": f"only {left():.0f} s of the budget left"}

    archive = out / "phase3-spool.tar"
    if spool.exists():
        with tarfile.open(archive, "w") as tar:
            tar.add(spool, arcname="spool")
    runs = finished_runs(spool) if (spool / "attempts").exists() else {}
    for kind, payload in runs.items():
        steps.setdefault(kind, {})["status"] = payload["status"]
        if payload.get("error"):
            steps[kind]["error"] = payload["error"].get("message")
    summary = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "tiny": arguments.tiny,
        "machine": machine(inventory_of(spool) if spool.exists() else {}),
        "commit": git_commit(arguments.commit),
        "datasheet": None if arguments.tiny else H200_DATASHEET,
        "steps": steps,
        "acceptance": summarise_acceptance((runs.get("acceptance") or {}).get("result")),
        "checkpoint": summarise_checkpoint((runs.get("checkpoint") or {}).get("result")),
        "allreduce": summarise_allreduce((runs.get("allreduce") or {}).get("result")),
        "spool_tar": str(archive) if archive.exists() else None,
        "total_seconds": round(time.monotonic() - began, 2),
        "budget_s": arguments.budget_s,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True))
    (out / "summary.md").write_text(markdown(summary))
    print(json.dumps(summary, indent=2, sort_keys=True))
    log("done", seconds=summary["total_seconds"])
    succeeded = (runs.get("acceptance") or {}).get("status") == "succeeded" and archive.exists() and all(
        runs[kind]["status"] == "succeeded" for kind in runs) and self_test_passed is not False
    return 0 if succeeded else 1


if __name__ == "__main__":
    sys.exit(main())
