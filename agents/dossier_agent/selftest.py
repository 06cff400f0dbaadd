"""`dossier-agent self-test`: every offered job kind on its tiny configuration, locally, without a server.

A job module may define `SELF_TEST_SPEC` (default `{}`) and `SELF_TEST_TIMEOUT_S` (default 120 s).
"""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from dossier_agent.executor import Supervision
from dossier_agent.inventory import collect_inventory
from dossier_agent.jobs.registry import JobRegistry
from dossier_agent.offline import run_job_offline

DEFAULT_TIMEOUT_S = 120.0


def self_test(registry: JobRegistry, *, kinds: list[str] | None = None, settings: dict[str, Any] | None = None,
              grace_s: float = 10.0) -> dict[str, Any]:
    inventory = collect_inventory()
    results = []
    with tempfile.TemporaryDirectory(prefix="dossier-agent-self-test-") as folder:
        for kind in kinds or registry.offered():
            job_kind = registry.get(kind)
            if job_kind is None:
                results.append({"kind": kind, "passed": False,
                                "detail": registry.unavailable.get(kind, "no such job kind")})
                continue
            timeout_s = float(getattr(job_kind.load(), "SELF_TEST_TIMEOUT_S", DEFAULT_TIMEOUT_S))
            supervision = Supervision(shutdown=threading.Event(), force=threading.Event(), grace_s=grace_s)
            timer = threading.Timer(timeout_s, supervision.shutdown.set)
            timer.start()
            began = time.monotonic()
            try:
                outcome, _attempt = run_job_offline(
                    kind, job_kind.self_test_spec, spool_dir=Path(folder) / "spool", work_dir=Path(folder) / "work",
                    registry=registry, supervision=supervision, settings=settings, inventory=inventory,
                )
            finally:
                timer.cancel()
            payload = outcome.finish["payload"]
            timed_out = supervision.shutdown.is_set()
            results.append({
                "kind": kind,
                "passed": outcome.status == "succeeded" and not timed_out,
                "status": "timed_out" if timed_out else outcome.status,
                "seconds": round(time.monotonic() - began, 2),
                "events": payload["event_count"],
                "artifacts": len(payload["artifacts"]),
                "error": (payload["error"] or {}).get("message"),
            })
    return {
        "passed": bool(results) and all(result["passed"] for result in results),
        "gpu_present": inventory["gpu_present"],
        "gpu_error": inventory["gpu_error"],
        "results": results,
        "not_offered": registry.unavailable,
    }
