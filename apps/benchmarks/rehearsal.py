"""Is a result a rehearsal? A run on a CPU or against the built-in mock serving stack rehearses the procedure; it never
measures a GPU (CONTRIBUTING.md). The server knows it from three things it stores, whatever the job kind:

- the job's spec: a throughput endpoint `"url": "builtin-mock"` (dossier_agent.jobs.throughput), a resilience target
  `"target": "builtin_mock"` (dossier_agent.jobs.operations), a memory-fit `"device": "cpu"`;
- the agent's result: `"mock"` (the throughput job says it started its loopback mock), a memory-fit
  `labels.device_kind == "cpu"`;
- the node's inventory (docs/agent-protocol.md §6) at the start of the attempt, else the agent's latest: no GPU
  (`gpu_present` false or an empty `gpus`, NVML absent), or no inventory at all (nothing says there is a GPU).

Pure: plain JSON in, reason codes out (an empty tuple: a GPU measurement). The data migration that marks the
results already stored calls it too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Reason codes, stored on the result (Result.rehearsal_reasons); the pages label them (apps/benchmarks/measurements).
MOCK_STACK = "mock_stack"
CPU_DEVICE = "cpu_device"
NO_GPU = "no_gpu"
NO_INVENTORY = "no_inventory"
REASONS = (MOCK_STACK, CPU_DEVICE, NO_GPU, NO_INVENTORY)

MOCK_URLS = frozenset({"builtin-mock", "builtin_mock"})
MOCK_TARGETS = frozenset({"builtin_mock", "builtin-mock", "mock"})


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _uses_mock(spec: Mapping[str, Any], result: Mapping[str, Any]) -> bool:
    endpoint = _mapping(spec.get("endpoint"))
    if str(endpoint.get("url") or "").strip().lower() in MOCK_URLS:
        return True
    if str(spec.get("target") or "").strip().lower() in MOCK_TARGETS:
        return True
    serving = _mapping(spec.get("serving"))
    if str(serving.get("stack") or serving.get("kind") or "").strip().lower() in MOCK_TARGETS:
        return True
    return "mock" in result and result.get("mock") is not None


def _on_cpu(spec: Mapping[str, Any], result: Mapping[str, Any]) -> bool:
    if str(spec.get("device") or "").strip().lower() == "cpu":
        return True
    labels = _mapping(result.get("labels"))
    return str(labels.get("device_kind") or result.get("device") or "").strip().lower() == "cpu"


def _has_gpu(inventory: Mapping[str, Any]) -> bool:
    gpus = [gpu for gpu in (inventory.get("gpus") or []) if isinstance(gpu, Mapping)]
    return bool(inventory.get("gpu_present")) and bool(gpus)


def rehearsal_reasons(spec: Any, result: Any, inventory: Any) -> tuple[str, ...]:
    """Why this run is a rehearsal (reason codes, in REASONS order); empty when it may measure a GPU."""
    spec, result = _mapping(spec), _mapping(result)
    found = set()
    if _uses_mock(spec, result):
        found.add(MOCK_STACK)
    if _on_cpu(spec, result):
        found.add(CPU_DEVICE)
    if inventory is None:
        found.add(NO_INVENTORY)
    elif not _has_gpu(_mapping(inventory)):
        found.add(NO_GPU)
    return tuple(reason for reason in REASONS if reason in found)
