"""The `allreduce` job (benchmark phase 3, item 5): all-reduce bus bandwidth within a node and across nodes.

Definitions as nccl-tests (`doc/PERFORMANCE.md` there): for a message of S bytes all-reduced by n ranks in t seconds,
algbw = S / t and busbw = algbw · 2(n−1)/n, the figure comparable with the links' bandwidth whatever n is. t is the
time per all-reduce of the slowest rank (each rank's mean over the timed iterations, then the maximum over ranks).
GB/s here are 10⁹ bytes per second, as nccl-tests prints them.

`torch.distributed` with NCCL on GPUs (one process per GPU) or gloo on CPUs. Two modes:

- **local** (no `group` in the spec): this job spawns `local_ranks` processes on this node (default: one per GPU, or
  2 on a CPU) that meet on a loopback port;
- **group** (a job group, one job per node, dispatched together; see docs/agent-protocol.md "Job groups"): the spec's
  `group` says which rank this job is and where rank 0 listens. Each job runs `local_ranks` processes (default 1),
  global rank = group.rank × local_ranks + local rank, world size = group.world_size × local_ranks.

Spec (every key optional):

    {
      "backend": "auto" | "nccl" | "gloo",            # auto: nccl when CUDA is there, else gloo
      "device": "auto" | "cuda" | "cpu",
      "local_ranks": null,
      "sizes_bytes": [1024, ...]  or  "sizes": {"min_bytes": 1024, "max_bytes": 1073741824, "factor": 4},
      "dtype": "float32" | "bf16" | "fp16",
      "warmup": 5, "target_s": 0.05, "min_iterations": 1, "max_iterations": 200,
      "timeout_s": 600,
      "group": {"group_id": "g-17", "rank": 0, "world_size": 2,
                "master_addr": "10.0.0.5", "master_port": 29517,       # the rendezvous
                "env": {"NCCL_SOCKET_IFNAME": "eth0"}}                 # only the variables in ALLOWED_ENV
    }

Result: `rows` (size_bytes, count, dtype, time_us, algbw_gbps, busbw_gbps, iterations), `peak_busbw_gbps`,
`busbw_at_largest_gbps`, `world_size`, `backend`, `label` (cuda | cpu), `mode`, the node's links from the inventory.
Events: one `measurement` per message size. Artifact: `allreduce.json`.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from dossier_agent.contract.allreduce_spec import (  # noqa: F401 (names of this job since it began)
    DEFAULT_SIZES,
    DTYPES,
    AllReduceSpecError,
    check_spec,
    message_sizes,
    parse_group,
)
from dossier_agent.contract.verdicts import bus_bandwidth
from dossier_agent.errors import JobCancelled

KIND = "allreduce"
REQUIRES = ("torch",)
SCHEMA = 1
SELF_TEST_SPEC: dict[str, Any] = {"device": "cpu", "local_ranks": 2, "sizes_bytes": [4096, 65536], "warmup": 1,
                                  "target_s": 0.01, "timeout_s": 60}
SELF_TEST_TIMEOUT_S = 90


# ----------------------------------------------------------------------------------------------------------------------
# Rows (pure arithmetic; the message sizes: contract.allreduce_spec, the bus bandwidth: contract.verdicts)
# ----------------------------------------------------------------------------------------------------------------------


def summarise_rows(rows: list[dict[str, Any]]) -> dict[str, Any]:
    if not rows:
        return {"peak_busbw_gbps": None, "peak_at_bytes": None, "busbw_at_largest_gbps": None}
    peak = max(rows, key=lambda row: row["busbw_gbps"])
    return {"peak_busbw_gbps": peak["busbw_gbps"], "peak_at_bytes": peak["size_bytes"],
            "busbw_at_largest_gbps": rows[-1]["busbw_gbps"]}


# ----------------------------------------------------------------------------------------------------------------------
# The rank process (`python -m dossier_agent.jobs.allreduce worker CONFIG.json`)
# ----------------------------------------------------------------------------------------------------------------------


def worker_main(config: dict[str, Any]) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(config.get("cpu_threads") or 1)
    rank, world = config["rank"], config["world_size"]
    if config["label"] == "cuda":
        device = torch.device("cuda", config["local_rank"])
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    dist.init_process_group(
        backend=config["backend"], init_method=f"tcp://{config['master_addr']}:{config['master_port']}",
        rank=rank, world_size=world, timeout=datetime.timedelta(seconds=config["timeout_s"]),
    )
    dtype = {"float32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[config["dtype"]]

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def slowest(value: float) -> float:
        box = torch.tensor([value], dtype=torch.float64, device=device)
        dist.all_reduce(box, op=dist.ReduceOp.MAX)
        return float(box.item())

    rows = []
    for size in config["sizes"]:
        count = size // DTYPES[config["dtype"]]
        check = torch.full((count,), float(rank + 1), dtype=dtype, device=device)
        dist.all_reduce(check)
        expected = world * (world + 1) / 2
        sync()
        tolerance = 0.0 if dtype == torch.float32 else expected * 2**-7  # 16-bit partial sums may round
        correct = all(abs(check[position].item() - expected) <= tolerance for position in (0, -1))
        data = torch.zeros(count, dtype=dtype, device=device)
        for _ in range(config["warmup"]):
            dist.all_reduce(data)
        sync()
        dist.barrier()
        began = time.perf_counter()
        dist.all_reduce(data)
        sync()
        first = slowest(time.perf_counter() - began)
        iterations = max(config["min_iterations"],
                         min(config["max_iterations"], math.ceil(config["target_s"] / max(first, 1e-9))))
        dist.barrier()
        began = time.perf_counter()
        for _ in range(iterations):
            dist.all_reduce(data)
        sync()
        seconds = slowest((time.perf_counter() - began) / iterations)
        algbw, busbw = bus_bandwidth(size, seconds, world)
        rows.append({"size_bytes": size, "count": count, "dtype": config["dtype"], "iterations": iterations,
                     "time_us": seconds * 1e6, "algbw_gbps": algbw / 1e9, "busbw_gbps": busbw / 1e9,
                     "correct": correct})
        del check, data
    dist.barrier()
    dist.destroy_process_group()
    report = {"rank": rank, "world_size": world, "rows": rows, "pid": os.getpid()}
    path = Path(config["report"])
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(report))
    os.replace(temporary, path)


# ----------------------------------------------------------------------------------------------------------------------
# The job
# ----------------------------------------------------------------------------------------------------------------------


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def _child_environment(extra: dict[str, str]) -> dict[str, str]:
    import dossier_agent

    environment = dict(os.environ)
    package_parent = str(Path(dossier_agent.__file__).resolve().parent.parent)
    existing = environment.get("PYTHONPATH")
    environment["PYTHONPATH"] = package_parent + (os.pathsep + existing if existing else "")
    environment.update(extra)
    return environment


def _resolve(spec: dict[str, Any]) -> tuple[str, str]:
    import torch

    device = spec.get("device", "auto")
    if device not in ("auto", "cuda", "cpu"):
        raise AllReduceSpecError(f"device must be auto, cuda or cpu, got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise AllReduceSpecError("device cuda was asked for but torch sees no CUDA device")
    label = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
    backend = spec.get("backend", "auto")
    if backend == "auto":
        backend = "nccl" if label == "cuda" else "gloo"
    if backend not in ("nccl", "gloo"):
        raise AllReduceSpecError(f"backend must be auto, nccl or gloo, got {backend!r}")
    if backend == "nccl" and label != "cuda":
        raise AllReduceSpecError("NCCL needs CUDA devices; use gloo on the CPU")
    return label, backend


def _rendezvous(group: dict[str, Any], ctx, timeout_s: float) -> dict[str, Any]:
    """The group's rank-0 address and port: in the spec (offline runs, tests), else from the agent when all ranks
    of the group are claimed (`ctx.wait_rendezvous`, fed by the claim/lease replies)."""
    if group.get("master_addr") and group.get("master_port"):
        return group
    waiter = getattr(ctx, "wait_rendezvous", None)
    if waiter is None:
        raise AllReduceSpecError("this job is part of a group but neither its spec nor the agent gives the "
                                 "rendezvous (master_addr, master_port)")
    found = waiter(timeout_s)
    if not found or not found.get("master_addr") or not found.get("master_port"):
        raise TimeoutError(f"the group's rendezvous did not arrive within {timeout_s} s")
    return {**group, **found}


def run(spec: dict[str, Any], ctx) -> dict[str, Any]:
    import torch

    spec = spec or {}
    check_spec(spec)
    label, backend = _resolve(spec)
    dtype = spec.get("dtype", "float32")
    sizes = message_sizes(spec, label, DTYPES[dtype])
    group = parse_group(spec)
    gpu_count = torch.cuda.device_count() if label == "cuda" else 0
    local_ranks = spec.get("local_ranks") or ((gpu_count if label == "cuda" else 2) if group is None else 1)
    if not isinstance(local_ranks, int) or local_ranks < 1:
        raise AllReduceSpecError(f"local_ranks must be a whole number >= 1, got {local_ranks!r}")
    if label == "cuda" and local_ranks > gpu_count:
        raise AllReduceSpecError(f"local_ranks {local_ranks} exceeds the {gpu_count} CUDA device(s) here")
    timeout_s = float(spec.get("timeout_s", 600))
    deadline = time.monotonic() + timeout_s
    environment: dict[str, str] = {}
    if group is None:
        mode, node_rank, nodes = "local", 0, 1
        master_addr, master_port = "127.0.0.1", free_port()
        if backend == "gloo" and "GLOO_SOCKET_IFNAME" not in os.environ and sys.platform.startswith("linux"):
            environment["GLOO_SOCKET_IFNAME"] = "lo"  # all ranks are here: keep gloo on the loopback interface
    else:
        mode, node_rank, nodes = "group", group["rank"], group["world_size"]
        ctx.progress(0.0, "waiting for the group's rendezvous")
        rendezvous = _rendezvous(group, ctx, timeout_s)
        master_addr, master_port = rendezvous["master_addr"], int(rendezvous["master_port"])
        environment.update({key: str(value) for key, value in (group.get("env") or {}).items()})
    world = nodes * local_ranks
    if world < 2:
        raise AllReduceSpecError("an all-reduce needs at least 2 ranks in all")
    base = {
        "label": label, "backend": backend, "dtype": dtype, "sizes": sizes, "world_size": world,
        "master_addr": master_addr, "master_port": master_port, "timeout_s": timeout_s,
        "warmup": int(spec.get("warmup", 5)), "target_s": float(spec.get("target_s", 0.05)),
        "min_iterations": int(spec.get("min_iterations", 1)), "max_iterations": int(spec.get("max_iterations", 200)),
        "cpu_threads": spec.get("cpu_threads"),
    }
    folder = ctx.workdir / "allreduce"
    folder.mkdir(parents=True, exist_ok=True)
    ctx.log("all-reduce ranks starting", mode=mode, backend=backend, world_size=world, local_ranks=local_ranks,
            master=f"{master_addr}:{master_port}", sizes=len(sizes))
    processes = []
    for local_rank in range(local_ranks):
        rank = node_rank * local_ranks + local_rank
        config = {**base, "rank": rank, "local_rank": local_rank, "report": str(folder / f"rank-{rank}.json")}
        config_path = folder / f"rank-{rank}-config.json"
        config_path.write_text(json.dumps(config))
        log_path = folder / f"rank-{rank}.log"
        with open(log_path, "wb") as log:
            processes.append((rank, log_path, Path(config["report"]), subprocess.Popen(  # noqa: S603
                [sys.executable, "-m", "dossier_agent.jobs.allreduce", "worker", str(config_path)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=_child_environment(environment), start_new_session=True)))
    try:
        while any(process.poll() is None for *_, process in processes):
            if ctx.cancelled():
                raise JobCancelled("the job was cancelled")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the all-reduce ranks did not finish within {timeout_s} s")
            failed = [(rank, process.returncode) for rank, _, _, process in processes
                      if process.poll() not in (None, 0)]
            if failed:
                break
            time.sleep(0.05)
    finally:
        for *_, process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    failures = [(rank, process.returncode, log_path) for rank, log_path, _, process in processes
                if process.returncode != 0]
    if failures:
        rank, code, log_path = failures[0]
        raise RuntimeError(f"rank {rank} exited with {code}: {log_path.read_text(errors='replace')[-3000:]}")
    reports = [json.loads(report.read_text()) for _, _, report, _ in processes]
    rows = reports[0]["rows"]
    for row in rows:
        ctx.event("measurement", {key: row[key] for key in ("size_bytes", "time_us", "algbw_gbps", "busbw_gbps",
                                                            "correct")})
    incorrect = [row["size_bytes"] for report in reports for row in report["rows"] if not row["correct"]]
    links = [{key: gpu.get(key) for key in ("index", "name", "nvlink_active_links", "pcie_generation_current",
                                            "pcie_width_current")}
             for gpu in (ctx.inventory or {}).get("gpus") or []]
    result = {
        "schema": SCHEMA,
        "label": label,
        "backend": backend,
        "mode": mode,
        "world_size": world,
        "local_ranks": local_ranks,
        "nodes": nodes,
        "node_rank": node_rank,
        "group_id": (group or {}).get("group_id"),
        "rendezvous": {"master_addr": master_addr, "master_port": master_port} if group is not None else None,
        "dtype": dtype,
        "rows": rows,
        **summarise_rows(rows),
        "correct": not incorrect,
        "incorrect_sizes": sorted(set(incorrect)),
        "definition": "algbw = bytes / time of the slowest rank; busbw = algbw * 2(n-1)/n (nccl-tests); GB = 1e9 B",
        "links": links,
        "torch_version": torch.__version__,
    }
    if incorrect:
        raise RuntimeError(f"the all-reduce returned wrong sums at sizes {sorted(set(incorrect))}")
    ctx.add_artifact(json.dumps(result, indent=2, sort_keys=True).encode(), "allreduce.json", "application/json")
    ctx.progress(1.0, "done")
    return result


if __name__ == "__main__":
    worker_main(json.loads(Path(sys.argv[2]).read_text()))
