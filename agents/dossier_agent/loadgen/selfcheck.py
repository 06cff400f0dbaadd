"""Self-check: before a run, measure this node's own load-generator ceiling against the built-in loopback mock
(`python -m dossier_agent.mockserver` in a child process, no injected delays), and refuse or warn when the run's
target is above half of it.

The open-loop ceiling is the highest constant rate (stepping ×2, then one bisection round) whose send-lag p99 stays
under the limit and whose achieved rate (requests actually sent inside the measured window per second,
`throughput.sent_per_s`) is at least 95 % of the target; the closed-loop ceiling is the request rate
at the run's concurrency. The mock and the client share the node, so the ceiling is a lower bound of what the
client alone could do: the safe side for this check.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dossier_agent.contract import metrics
from dossier_agent.contract.load_spec import LoadSpec
from dossier_agent.loadgen.runner import run_load

AGENT_ROOT = str(Path(__file__).resolve().parents[2])
START_RATE = 250.0
MAX_RATE = 64_000.0


class MockProcess:
    """The mock in a child process (its own interpreter, so it does not share the client's GIL)."""

    def __init__(self, *arguments: str, timeout_s: float = 20.0):
        environment = dict(os.environ)
        environment["PYTHONPATH"] = AGENT_ROOT + os.pathsep + environment.get("PYTHONPATH", "")
        self.process = subprocess.Popen([sys.executable, "-m", "dossier_agent.mockserver", *arguments],  # noqa: S603
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                        env=environment)
        deadline = time.monotonic() + timeout_s
        line = ""
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if line.startswith("MOCK_READY ") or not line:
                break
        if not line.startswith("MOCK_READY "):
            self.close()
            raise RuntimeError("the loopback mock server did not start")
        self.ready = json.loads(line.split(" ", 1)[1])
        self.url = self.ready["url"]

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)

    def __enter__(self) -> MockProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _spec(url: str, profile: dict[str, Any], seconds: float, lag_limit: float) -> LoadSpec:
    return LoadSpec.from_dict({
        "endpoint": {"url": url, "api": "chat", "model": "mock-model"}, "profile": profile,
        "duration_s": seconds, "warmup_s": min(0.2, seconds / 5), "cooldown_s": 0.0, "min_window_s": 0.0,
        "prompts": {"synthetic": {"input_tokens_mean": 32}}, "output_tokens": 16, "calibrate": False,
        "send_lag_p99_limit_s": lag_limit, "timeout_s": 10.0, "idle_timeout_s": 5.0,
    })


async def _kept(url: str, rate: float, seconds: float, lag_limit: float) -> dict[str, Any]:
    result = await run_load(_spec(url, {"kind": "constant", "rate": rate}, seconds, lag_limit))
    summary = result.summary
    achieved = summary["throughput"]["sent_per_s"] or 0.0  # actually sent in the window, not the schedule's rate
    lag = summary["send_lag_s"]
    lag_p99 = lag["p99"] if lag["p99"] is not None else lag["max"]
    kept = bool(lag_p99 is not None and lag_p99 <= lag_limit and achieved >= 0.95 * rate
                and not summary["counts"]["errors"])
    return {"rate": rate, "achieved": achieved, "send_lag_p99_s": lag_p99, "kept": kept,
            "errors": summary["counts"]["errors"]}


async def measure_ceiling(*, seconds_per_level: float = 1.0, lag_limit_s: float = metrics.DEFAULT_SEND_LAG_P99_LIMIT_S,
                          concurrency: int = 32, max_rate: float = MAX_RATE, url: str | None = None) -> dict[str, Any]:
    """Open-loop ceiling and closed-loop rate of this client on this node against the loopback mock."""
    began = time.monotonic()
    mock = None if url else MockProcess()
    try:
        target = url or mock.url
        levels, best, failed, rate = [], None, None, START_RATE
        while rate <= max_rate:
            level = await _kept(target, rate, seconds_per_level, lag_limit_s)
            levels.append(level)
            if not level["kept"]:
                failed = rate
                break
            best = rate
            rate *= 2
        if best is not None and failed is not None:
            middle = (best + failed) / 2
            level = await _kept(target, middle, seconds_per_level, lag_limit_s)
            levels.append(level)
            if level["kept"]:
                best = middle
        closed = await run_load(_spec(target, {"kind": "concurrency", "concurrency": concurrency},
                                      seconds_per_level, lag_limit_s))
        closed_rate = closed.summary["throughput"]["requests_per_s"]
    finally:
        if mock is not None:
            mock.close()
    return {"open_loop_ceiling_per_s": best, "closed_loop_per_s": closed_rate, "closed_loop_concurrency": concurrency,
            "levels": levels, "send_lag_p99_limit_s": lag_limit_s, "seconds": round(time.monotonic() - began, 2)}


def judge(spec: Mapping[str, Any], ceiling: Mapping[str, Any], refuse: bool = False) -> dict[str, Any]:
    """Compare a run's target with half the measured ceiling: "ok", "warn" or "refuse"."""
    profile = spec.get("profile") or {}
    sweep = spec.get("sweep") or {}
    if profile.get("kind") == "concurrency" or sweep.get("key") == "concurrency":
        return {"verdict": "ok", "reason": "closed loop: the client cannot fall behind a schedule"}
    wanted = profile.get("rate") or profile.get("end_rate") or 0.0
    if sweep:
        search = sweep.get("search") or {}
        wanted = max([float(v) for v in sweep.get("levels", [])] + [float(search.get("max", 0.0)), float(wanted)])
    if profile.get("kind") in ("burst", "trace"):
        wanted = max(float(wanted), float(profile.get("burst_size", 0)) / float(profile.get("period_s", 1.0)))
    ceiling_rate = ceiling.get("open_loop_ceiling_per_s")
    if ceiling_rate is None:
        return {"verdict": "refuse" if refuse else "warn", "reason": "no open-loop rate was kept on this node"}
    limit = ceiling_rate / 2
    if wanted and float(wanted) > limit:
        return {"verdict": "refuse" if refuse else "warn", "target_per_s": float(wanted), "half_ceiling_per_s": limit,
                "reason": f"target {float(wanted):g} req/s is above half of this node's client ceiling "
                          f"({ceiling_rate:g} req/s): the client could fall behind"}
    return {"verdict": "ok", "target_per_s": float(wanted or 0.0), "half_ceiling_per_s": limit}


def measure_ceiling_sync(**kwargs: Any) -> dict[str, Any]:
    return asyncio.run(measure_ceiling(**kwargs))
