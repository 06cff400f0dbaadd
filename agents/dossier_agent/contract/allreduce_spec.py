"""The `allreduce` job's spec, checked exactly as the agent checks it before it starts any rank
(`dossier_agent.jobs.allreduce` imports it from here; its docstring describes the spec). What needs the node (CUDA
present, how many devices) the job checks itself when it runs.
"""

from __future__ import annotations

from typing import Any

from dossier_agent.contract.job_specs import ALLOWED_ENV

DTYPES = {"float32": 4, "bf16": 2, "fp16": 2}
DEFAULT_SIZES = {"cuda": {"min_bytes": 1024, "max_bytes": 2**30, "factor": 4},
                 "cpu": {"min_bytes": 1024, "max_bytes": 4 * 2**20, "factor": 4}}
KNOWN_KEYS = frozenset({"backend", "device", "local_ranks", "sizes_bytes", "sizes", "dtype", "warmup", "target_s",
                        "min_iterations", "max_iterations", "timeout_s", "group", "cpu_threads"})


class AllReduceSpecError(ValueError):
    """The job spec holds a bad value; the message names it."""


def message_sizes(spec: dict[str, Any], label: str, element_bytes: int) -> list[int]:
    if spec.get("sizes_bytes") is not None:
        sizes = spec["sizes_bytes"]
        if not isinstance(sizes, list) or not sizes or not all(
                isinstance(size, int) and not isinstance(size, bool) and size >= element_bytes for size in sizes):
            raise AllReduceSpecError(f"sizes_bytes must be a list of whole byte counts >= {element_bytes}")
        return sorted({size - size % element_bytes for size in sizes})
    settings = {**DEFAULT_SIZES[label], **(spec.get("sizes") or {})}
    low, high, factor = settings["min_bytes"], settings["max_bytes"], settings["factor"]
    if not (isinstance(low, int) and isinstance(high, int) and isinstance(factor, int)) or low < element_bytes \
            or high < low or factor < 2:
        raise AllReduceSpecError("sizes needs whole numbers: min_bytes >= element size, max_bytes >= min_bytes, "
                                 "factor >= 2")
    sizes, size = [], low
    while size <= high:
        sizes.append(size - size % element_bytes)
        size *= factor
    return sizes


def parse_group(spec: dict[str, Any]) -> dict[str, Any] | None:
    group = spec.get("group")
    if group is None:
        return None
    if not isinstance(group, dict):
        raise AllReduceSpecError("group must be an object")
    for key in ("rank", "world_size"):
        if isinstance(group.get(key), bool) or not isinstance(group.get(key), int):
            raise AllReduceSpecError(f"group.{key} must be a whole number")
    if group["world_size"] < 1 or not 0 <= group["rank"] < group["world_size"]:
        raise AllReduceSpecError(f"group.rank must be in [0, world_size), got {group['rank']} of "
                                 f"{group['world_size']}")
    port = group.get("master_port")
    if port is not None and (not isinstance(port, int) or not 1 <= port <= 65535):
        raise AllReduceSpecError(f"group.master_port must be a TCP port, got {port!r}")
    env = group.get("env") or {}
    refused = sorted(set(env) - ALLOWED_ENV)
    if refused:
        raise AllReduceSpecError(f"group.env may set only {', '.join(sorted(ALLOWED_ENV))}; refused: "
                                 f"{', '.join(refused)}")
    return group


def check_spec(spec: dict[str, Any]) -> None:
    """Everything the job refuses before it looks at the node: unknown keys, the device, backend and dtype names, the
    message sizes, the group, and a local run of fewer than 2 ranks."""
    unknown = sorted(set(spec) - KNOWN_KEYS)
    if unknown:
        raise AllReduceSpecError(f"unknown spec key(s) {', '.join(unknown)}; known: {', '.join(sorted(KNOWN_KEYS))}")
    device = spec.get("device", "auto")
    if device not in ("auto", "cuda", "cpu"):
        raise AllReduceSpecError(f"device must be auto, cuda or cpu, got {device!r}")
    backend = spec.get("backend", "auto")
    if backend not in ("auto", "nccl", "gloo"):
        raise AllReduceSpecError(f"backend must be auto, nccl or gloo, got {backend!r}")
    if backend == "nccl" and device == "cpu":
        raise AllReduceSpecError("NCCL needs CUDA devices; use gloo on the CPU")
    dtype = spec.get("dtype", "float32")
    if dtype not in DTYPES:
        raise AllReduceSpecError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    message_sizes(spec, "cpu" if device == "cpu" else "cuda", DTYPES[dtype])
    group = parse_group(spec)
    local_ranks = spec.get("local_ranks")  # 0 or null: the job's default (one per GPU, or 2 on a CPU)
    if local_ranks and (isinstance(local_ranks, bool) or not isinstance(local_ranks, int) or local_ranks < 1):
        raise AllReduceSpecError(f"local_ranks must be a whole number >= 1, got {local_ranks!r}")
    if group is None and local_ranks == 1:
        raise AllReduceSpecError("an all-reduce needs at least 2 ranks in all")
