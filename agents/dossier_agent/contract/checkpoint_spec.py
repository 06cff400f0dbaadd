"""The `checkpoint` job's spec, checked exactly as the agent checks it (`dossier_agent.jobs.checkpoint` imports it from
here; its docstring describes the spec). Whether a target folder exists only the node can say: the job checks that
itself when it runs.
"""

from __future__ import annotations

from typing import Any

KNOWN_KEYS = frozenset({"targets", "device", "state_bytes", "depth", "batch_size", "steps_before_save", "workload",
                        "timeout_s", "cpu_threads", "seed", "keep_files", "drop_cache"})
#: Numbers of the spec and their defaults (the seed may be 0, the others must be at least 1).
NUMBERS = (("state_bytes", 256 * 2**20), ("depth", 4), ("batch_size", 64), ("steps_before_save", 3),
           ("timeout_s", 600), ("seed", 0))


class CheckpointSpecError(ValueError):
    """The job spec holds a bad value; the message names it."""


def check_spec(spec: dict[str, Any]) -> None:
    """Unknown keys, the targets' shape, the numbers and the workload object, as the job refuses them."""
    unknown = sorted(set(spec) - KNOWN_KEYS)
    if unknown:
        raise CheckpointSpecError(f"unknown spec key(s) {', '.join(unknown)}; known: {', '.join(sorted(KNOWN_KEYS))}")
    targets = spec.get("targets")
    if targets and (not isinstance(targets, list) or not all(isinstance(t, dict) and t.get("path") for t in targets)):
        raise CheckpointSpecError("targets must be a list of {\"name\": ..., \"path\": ...}")
    for key, default in NUMBERS:
        value = spec.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < (0 if key == "seed" else 1):
            raise CheckpointSpecError(f"{key} must be a positive number, got {value!r}")
    if not isinstance(spec.get("workload") or {}, dict):
        raise CheckpointSpecError("workload must be an object")
