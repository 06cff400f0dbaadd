"""The `operations` job (benchmark phase 3, items 2, 3 and 7): failures under load, cold start, observability.

It acts on the serving stack only through the operations the node declared in its configuration
(`dossier_agent/serving_stack.py`): the spec names operations, never commands, and an operation the node did not
declare is refused before anything runs (`OperationRefused`). With `"target": "builtin_mock"` the job uses the
agent's own mock server (`dossier_agent.mockserver`) as a process it starts itself, with every operation but drain
declared (a self-test and a way to check the method on any machine).

**Failure scenarios** (one per entry of `scenarios`): a steady open-loop load (constant rate, chat completions
streamed, with client retries) runs while the agent triggers the operation; a health watcher polls the health URL.
Then, when the scenario names a recovery operation, the agent runs it once the failure was detected. Measured: time
to the first failed request, errors by kind, retries and whether they succeeded, time until healthy again (first 2xx
from the health URL) and until the first successful request, the time the stack itself logs as ready (a
`ready_pattern` line; the mock prints `MOCK_READY {"ready_unix": ...}`), latency after recovery against before, and
requests lost for good. Every request is accounted for: succeeded at the first try, retried then succeeded, or lost
(every attempt failed, or still running when the drain limit came: `cut_at_end`). One timeline per scenario, per
second of the load: requests sent, retries, successes, failed attempts by kind, E2E p50/p90/p99 of the successes
(a percentile only from enough samples: `dossier_agent.contract.metrics`), the share of good health checks, and the
event markers.

**Cold start**: stop → start, `repeats` times, without load: time to healthy, to the first successful token, and the
stack's own ready time. **Proxy model load** (optional `proxy_model`): in a fresh process each time, the time to
import torch, to initialise the device, to build the proxy (`dossier_agent.proxies`) on it, and to its first token.

**Observability**: the declared metrics URL is fetched and parsed (Prometheus text) before and after the scenarios;
the stack's log lines around each event (and every operation's output) go to the artifact `serving_logs.jsonl.gz`.

Spec (every key optional):

    {
      "target": "declared" | "builtin_mock",
      "mock": {"port": null, "startup_delay_s": 1.0, "ttft_ms": 0, "token_ms": 0},     # builtin_mock only
      "endpoint": {"api": "chat", "model": "default"},     # the URL is the stack's base_url (agent configuration)
      "load": {"rate_per_s": 20, "before_s": 5, "after_s": 5, "timeout_s": 10, "output_tokens": 8,
               "input_words": 16, "drain_s": 15, "max_connections": 512,
               "retry": {"max_attempts": 4, "backoff_s": 0.1, "factor": 2.0}},
      "scenarios": [{"name": "kill_worker", "recovery": "restart"}, {"name": "bad_deploy", "recovery": "restart"}],
      "cold_start": {"repeats": 3},
      "proxy_model": {"model": {... a decoder shape as in memory_fit ...}, "device": "auto", "repeats": 2,
                      "prompt_tokens": 16, "timeout_s": 300},
      "health": {"interval_s": 0.05, "timeout_s": 120, "detect_timeout_s": 30},
      "ready_tolerance": {"abs_s": 0.2, "rel": 0.1},
      "log_window_s": 5
    }

Scenario names: kill_worker, restart, bad_deploy, drain, stop. Default recovery: restart after kill_worker, bad_deploy
and drain (else start, when declared), start after stop, none after restart. The recovery runs once the failure was
detected (or `detect_timeout_s` passed without one); a bad deploy counts as detected when the stack answers badly
(an HTTP error status or a broken reply), not while its connections are refused during the swap.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from dossier_agent.contract.job_specs import (
    DEFAULT_LOAD,
    OperationsSpecError,
    parse_operations_spec,
    required_operations,
    resolve_recovery,
)
from dossier_agent.errors import JobCancelled
from dossier_agent.serving_stack import OperationRefused, ServingSpec, ServingStack, parse_operations

KIND = "operations"
REQUIRES = ("numpy",)
SCHEMA = 1
ANSWERED_BADLY = {"malformed_sse", "stream_error", "incomplete_stream", "bad_json", "bad_reply"}
RETRYABLE = {"connect_refused", "connect_error", "connect_timeout", "connection_closed", "timeout", "stalled",
             "incomplete_stream", "malformed_sse", "stream_error", "http_408", "http_429"}
SELF_TEST_SPEC: dict[str, Any] = {
    "target": "builtin_mock", "mock": {"startup_delay_s": 0.2},
    "load": {"rate_per_s": 10, "before_s": 0.5, "after_s": 0.5},
    "scenarios": [{"name": "kill_worker"}], "cold_start": {"repeats": 1},
}
SELF_TEST_TIMEOUT_S = 90


# ----------------------------------------------------------------------------------------------------------------------
# The built-in mock stack (the spec is parsed by dossier_agent.contract.job_specs)
# ----------------------------------------------------------------------------------------------------------------------


def builtin_mock_stack(mock: dict[str, Any], port: int) -> ServingSpec:
    """The agent's own mock server as a process it starts itself (fixed arguments; numbers from the spec only)."""
    base = [sys.executable, "-m", "dossier_agent.mockserver", "--port", str(port),
            "--startup-delay-s", str(float(mock["startup_delay_s"])), "--ttft-ms", str(float(mock["ttft_ms"])),
            "--token-ms", str(float(mock["token_ms"]))]
    url = f"http://127.0.0.1:{port}"
    return parse_operations({
        "serving": {"type": "process", "argv": base, "health_url": f"{url}/health", "base_url": url,
                    "metrics_url": f"{url}/metrics", "ready_pattern": "MOCK_READY", "stop_timeout_s": 10},
        "start": {}, "stop": {}, "restart": {}, "kill_worker": {},
        "bad_deploy": {"argv": [*base, "--fault", "status:500", "--fault-every", "1"]},
    })


# ----------------------------------------------------------------------------------------------------------------------
# Analysis (pure)
# ----------------------------------------------------------------------------------------------------------------------


def accounting(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Every request once: succeeded at the first try, retried then succeeded, or lost; every attempt is paid."""
    first = sum(1 for record in records if record["outcome"] == "succeeded")
    retried = sum(1 for record in records if record["outcome"] == "retried_then_succeeded")
    lost = sum(1 for record in records if record["outcome"] == "lost")
    unknown = len(records) - first - retried - lost
    attempts = sum(len(record["attempts"]) for record in records)
    retried_requests = sum(1 for record in records if len(record["attempts"]) > 1)
    return {
        "requests": len(records),
        "succeeded_first_try": first,
        "retried_then_succeeded": retried,
        "lost": lost,
        "lost_cut_at_end": sum(1 for record in records if record["outcome"] == "lost" and record["attempts"]
                               and record["attempts"][-1]["error"] == "cut_at_end"),
        "unaccounted": unknown,
        "all_accounted": unknown == 0,
        "attempts": attempts,
        "retries": attempts - len(records),
        "requests_retried": retried_requests,
        "retry_success_rate": retried / retried_requests if retried_requests else None,
        "retry_rate": (attempts - len(records)) / attempts if attempts else None,
        "failed_request_fraction": lost / len(records) if records else None,
        "accepted": first + retried,
    }


def error_kinds(records: list[dict[str, Any]], since: float | None = None) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in records:
        for attempt in record["attempts"]:
            if attempt["error"] and (since is None or attempt["end"] >= since):
                counts[attempt["error"]] = counts.get(attempt["error"], 0) + 1
    return dict(sorted(counts.items()))


def _successes(records: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(record, record["attempts"][-1]) for record in records
            if record["outcome"] in ("succeeded", "retried_then_succeeded")]


def latency_window(records: list[dict[str, Any]], start: float, end: float) -> dict[str, Any]:
    """E2E (first send of the request → end of its successful attempt, retries included) and TTFT percentiles of
    requests first sent in [start, end)."""
    from dossier_agent.contract import metrics

    e2e, ttft = [], []
    for record, attempt in _successes(records):
        sent = record["attempts"][0]["send"]
        if start <= sent < end:
            e2e.append(attempt["end"] - sent)
            if attempt["first_token"] is not None:
                ttft.append(attempt["first_token"] - sent)
    return {"window_s": [start, end], "e2e_s": metrics.percentiles(e2e), "ttft_s": metrics.percentiles(ttft)}


def latency_ratio(before: dict[str, Any], after: dict[str, Any]) -> dict[str, float | None]:
    ratios = {}
    for key in ("p50", "p90", "p99"):
        b, a = before["e2e_s"].get(key), after["e2e_s"].get(key)
        ratios[f"e2e_{key}"] = a / b if a is not None and b else None
    return ratios


def timeline(records: list[dict[str, Any]], health: list[tuple[float, bool]], t0: float, end: float,
             markers: dict[str, float | None]) -> dict[str, Any]:
    """Per second from t0: requests sent, retries, successes, failed attempts by kind, E2E percentiles of the
    successes ending in that second, the share of good health checks; event markers in seconds from t0."""
    from dossier_agent.contract import metrics

    seconds = max(1, math.ceil(end - t0))
    rows = [{"t": second, "sent": 0, "retries": 0, "succeeded": 0, "errors": {}, "e2e": [], "health": []}
            for second in range(seconds)]

    def row(moment: float) -> dict[str, Any] | None:
        index = math.floor(moment - t0)
        return rows[index] if 0 <= index < seconds else None

    for record in records:
        for position, attempt in enumerate(record["attempts"]):
            sent = row(attempt["send"])
            if sent is not None:
                sent["retries" if position else "sent"] += 1
            ended = row(attempt["end"])
            if ended is None:
                continue
            if attempt["error"]:
                ended["errors"][attempt["error"]] = ended["errors"].get(attempt["error"], 0) + 1
            else:
                ended["succeeded"] += 1
                ended["e2e"].append(attempt["end"] - attempt["send"])
    for moment, ok in health:
        slot = row(moment)
        if slot is not None:
            slot["health"].append(ok)
    for slot in rows:
        latencies = metrics.percentiles(slot.pop("e2e"))
        slot.update({"e2e_p50_s": latencies["p50"], "e2e_p90_s": latencies["p90"], "e2e_p99_s": latencies["p99"],
                     "e2e_n": latencies["n"]})
        checks = slot.pop("health")
        slot["health_ok_share"] = sum(checks) / len(checks) if checks else None
    return {"seconds_from": "start of the load", "rows": rows,
            "markers": {name: (moment - t0 if moment is not None else None) for name, moment in markers.items()},
            "percentile_method": metrics.PERCENTILE_METHOD}


def ready_check(measured_s: float | None, logged_s: float | None, tolerance: dict[str, float]) -> dict[str, Any]:
    """Is the measured time to healthy within max(abs_s, rel × logged) of the time the stack logged as ready?"""
    if measured_s is None or logged_s is None:
        return {"within": None, "difference_s": None, "tolerance_s": None}
    allowed = max(float(tolerance["abs_s"]), float(tolerance["rel"]) * logged_s)
    difference = measured_s - logged_s
    return {"within": abs(difference) <= allowed, "difference_s": difference, "tolerance_s": allowed}


def distribution(values: list[float]) -> dict[str, Any]:
    values = [value for value in values if value is not None]
    if not values:
        return {"n": 0, "min": None, "median": None, "max": None}
    return {"n": len(values), "min": min(values), "median": statistics.median(values), "max": max(values),
            "values": values}


# ----------------------------------------------------------------------------------------------------------------------
# Load with retries, health watching
# ----------------------------------------------------------------------------------------------------------------------


def retryable(error: str | None) -> bool:
    return bool(error) and (error in RETRYABLE or (error.startswith("http_5")))


def answered_badly(error: str | None) -> bool:
    """The server answered, wrongly (an HTTP error status or a broken reply), as opposed to not answering."""
    return bool(error) and (error.startswith("http_") or error in ANSWERED_BADLY)


class SteadyLoad:
    """Constant-rate open-loop load (the load generator's HTTP client) with client retries, in its own thread."""

    def __init__(self, base_url: str, endpoint: dict[str, Any], load: dict[str, Any]):
        from dossier_agent.contract.load_spec import Target
        from dossier_agent.loadgen.clients import RequestBuilder, api_path
        from dossier_agent.loadgen.prompts import PromptItem

        self.target = Target.parse(base_url)
        self.load = load
        words = " ".join(["hello"] * int(load["input_words"]))
        chat = endpoint["api"] == "chat"
        items = [PromptItem(messages=[{"role": "user", "content": f"{i} {words}"}] if chat else None,
                            prompt=None if chat else f"{i} {words}", max_tokens=int(load["output_tokens"]))
                 for i in range(64)]
        self.builder = RequestBuilder(endpoint, items, default_max_tokens=int(load["output_tokens"]))
        self.path = api_path(self.target.base_path, endpoint["api"])
        self.headers = {"Content-Type": "application/json", "Accept": "text/event-stream, application/json",
                        "Accept-Encoding": "identity", "User-Agent": "dossier-agent-operations"}
        self.run_id = uuid.uuid4().hex[:8]
        self.records: list[dict[str, Any]] = []
        self.t0: float | None = None
        self.meta: dict[str, Any] = {}
        self._stop = threading.Event()
        self._started = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def start(self) -> float:
        self._thread = threading.Thread(target=self._thread_main, name="operations-load", daemon=True)
        self._thread.start()
        self._started.wait(10)
        if self._error is not None:
            raise self._error
        return self.t0

    def _thread_main(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as error:  # reported to the job's thread
            self._error = error
            self._started.set()

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(float(self.load["drain_s"]) + float(self.load["timeout_s"]) + 10)
        if self._error is not None:
            raise self._error
        return self.meta

    def first_failure_after(self, moment: float, answered_only: bool = False) -> float | None:
        ends = [attempt["end"] for record in list(self.records) for attempt in list(record["attempts"])
                if attempt["error"] and attempt["end"] >= moment
                and (not answered_only or answered_badly(attempt["error"]))]
        return min(ends) if ends else None

    def first_success_sent_after(self, moment: float) -> float | None:
        ends = [attempt["end"] for record in list(self.records) for attempt in list(record["attempts"])
                if not attempt["error"] and attempt["send"] >= moment]
        return min(ends) if ends else None

    async def _main(self) -> None:
        from dossier_agent.loadgen.http import ConnectionPool

        loop = asyncio.get_running_loop()
        pool = ConnectionPool(self.target, limit=int(self.load["max_connections"]),
                              connect_timeout_s=min(2.0, float(self.load["timeout_s"])))
        tasks: set[asyncio.Task] = set()
        interval = 1.0 / float(self.load["rate_per_s"])
        self.t0 = loop.time() + 0.01
        self._started.set()
        index = 0
        try:
            while not self._stop.is_set():
                due = self.t0 + index * interval
                now = loop.time()
                if due > now:
                    await asyncio.sleep(min(due - now, 0.02))
                    continue
                task = loop.create_task(self._request(pool, index, due))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
                index += 1
            self.meta["stopped_at"] = loop.time()
            if tasks:
                await asyncio.wait(set(tasks), timeout=float(self.load["drain_s"]))
            cut = [task for task in tasks if not task.done()]
            for task in cut:
                task.cancel()
            if cut:
                await asyncio.gather(*cut, return_exceptions=True)
            self.meta.update(scheduled=index, cut_at_end=len(cut), connections_opened=pool.opened_total)
        finally:
            pool.close()

    async def _request(self, pool, index: int, scheduled: float) -> None:
        from dossier_agent.loadgen.http import Exchange, build_request, perform

        retry = self.load["retry"]
        record: dict[str, Any] = {"i": index, "sched": scheduled, "attempts": [], "outcome": None}
        self.records.append(record)
        body, _item = self.builder.body(index)
        for attempt in range(int(retry["max_attempts"])):
            if attempt:
                await asyncio.sleep(float(retry["backoff_s"]) * float(retry["factor"]) ** (attempt - 1))
            headers = {**self.headers, "x-request-id": f"{self.run_id}-{index}-{attempt}"}
            request = build_request("POST", self.target, self.path, headers, body)
            state = self.builder.new_state()
            exchange = Exchange(on_data=state.on_data, keep_body=state.on_data is None)
            try:
                await perform(pool, exchange, request, timeout_s=float(self.load["timeout_s"]),
                              idle_timeout_s=float(self.load["timeout_s"]))
            except asyncio.CancelledError:
                now = time.monotonic()
                record["attempts"].append({"send": exchange.sent or now, "end": now, "first_token": None,
                                           "status": None, "error": "cut_at_end", "detail": "drain limit reached",
                                           "out_tok": None})
                record["outcome"] = "lost"
                raise
            outcome = state.finish(exchange)
            record["attempts"].append({
                "send": exchange.sent, "end": exchange.end,
                "first_token": outcome.chunk_times[0] if outcome.chunk_times else None,
                "status": outcome.status or None, "error": outcome.error,
                "detail": (outcome.detail or "")[:200] or None, "out_tok": outcome.output_tokens,
            })
            if outcome.error is None:
                record["outcome"] = "succeeded" if attempt == 0 else "retried_then_succeeded"
                return
            if not retryable(outcome.error):
                break
        record["outcome"] = "lost"


class HealthWatch:
    """Polls the health URL in a thread: (monotonic time of the answer, ok, HTTP status or None) triples."""

    def __init__(self, stack: ServingStack, interval_s: float):
        self.stack, self.interval_s = stack, interval_s
        self.checks: list[tuple[float, bool, int | None]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="operations-health", daemon=True)

    def start(self) -> HealthWatch:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            result = self.stack.check_health(timeout_s=max(0.2, self.interval_s * 10))
            self.checks.append((time.monotonic(), bool(result["ok"]), result["status"]))
            self._stop.wait(self.interval_s)

    def stop(self) -> list[tuple[float, bool]]:
        self._stop.set()
        self._thread.join(5)
        return [(when, ok) for when, ok, _status in self.checks]

    def first_failure_after(self, moment: float, answered_only: bool = False) -> tuple[float, int | None] | None:
        """(time, HTTP status or None when nothing answered) of the first failed check at or after `moment`."""
        return next(((when, status) for when, ok, status in list(self.checks)
                     if when >= moment and not ok and (status is not None or not answered_only)), None)

    def first_ok_after(self, moment: float) -> float | None:
        return next((when for when, ok, _status in list(self.checks) if when >= moment and ok), None)


# ----------------------------------------------------------------------------------------------------------------------
# Scenarios
# ----------------------------------------------------------------------------------------------------------------------


class Clock:
    """Monotonic ↔ unix, from one reading (the stack logs unix times; the load measures monotonic ones)."""

    def __init__(self):
        self.offset = time.time() - time.monotonic()

    def to_monotonic(self, unix: float | None) -> float | None:
        return None if unix is None else unix - self.offset


def _wait(seconds: float, ctx) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ctx.cancelled():
            raise JobCancelled("the job was cancelled")
        time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))


def ensure_healthy(stack: ServingStack, health: dict[str, Any], ctx) -> dict[str, Any] | None:
    """Healthy already, or started (or restarted) through a declared operation; None when nothing was needed."""
    if stack.check_health(timeout_s=2.0)["ok"]:
        return None
    action = "start" if "start" in stack.declared and not stack.running() else (
        "restart" if "restart" in stack.declared else "start" if "start" in stack.declared else None)
    if action is None:
        raise RuntimeError("the serving stack is not healthy and the node declares neither start nor restart")
    record = stack.run(action)
    waited = stack.wait_healthy(float(health["timeout_s"]), cancelled=ctx.cancelled)
    if not waited["healthy"]:
        raise RuntimeError(f"the serving stack did not become healthy within {health['timeout_s']} s after {action}")
    return {"operation": action, "seconds": waited["healthy_unix"] - record["started_unix"]}


def run_scenario(stack: ServingStack, scenario: dict[str, Any], plan: dict[str, Any], base_url: str, clock: Clock,
                 ctx) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    load_settings, health_settings = plan["load"], plan["health"]
    name, recovery = scenario["name"], resolve_recovery(scenario, stack.declared)
    setup = ensure_healthy(stack, health_settings, ctx)
    watch = HealthWatch(stack, float(health_settings["interval_s"])).start()
    load = SteadyLoad(base_url, plan["endpoint"], load_settings)
    t0 = load.start()
    try:
        _wait(float(load_settings["before_s"]), ctx)
        event = stack.run(name)
        t_event = event["started_monotonic"]
        deadline = time.monotonic() + float(health_settings["detect_timeout_s"])
        detected, detected_by = None, None
        # A deploy restarts the stack: refused connections are its downtime; the deploy is bad when it answers badly.
        answered_only = name == "bad_deploy"
        while time.monotonic() < deadline:
            health_failure = watch.first_failure_after(t_event, answered_only)
            request_failure = load.first_failure_after(t_event, answered_only)
            candidates = []
            if health_failure is not None:
                candidates.append((health_failure[0], {"source": "health", "status": health_failure[1]}))
            if request_failure is not None:
                candidates.append((request_failure, {"source": "request"}))
            if candidates:
                detected, detected_by = min(candidates, key=lambda item: item[0])
                break
            if ctx.cancelled():
                raise JobCancelled("the job was cancelled")
            time.sleep(0.005)
        recovery_record = stack.run(recovery) if recovery != "none" else None
        waited = stack.wait_healthy(float(health_settings["timeout_s"]), interval_s=0.02, cancelled=ctx.cancelled)
        healthy = clock.to_monotonic(waited["healthy_unix"])
        anchor = detected if detected is not None else t_event
        first_success = None
        success_deadline = time.monotonic() + float(health_settings["timeout_s"])
        while first_success is None and time.monotonic() < success_deadline:
            first_success = load.first_success_sent_after(anchor)
            if first_success is None:
                if ctx.cancelled():
                    raise JobCancelled("the job was cancelled")
                time.sleep(0.02)
        _wait(float(load_settings["after_s"]), ctx)
    finally:
        load.stop()
        checks = watch.stop()
    end = time.monotonic()
    records = load.records
    logged_unix = stack.ready_after((recovery_record or event)["started_unix"], time.time())
    logged = clock.to_monotonic(logged_unix)
    before = latency_window(records, t0 + min(1.0, float(load_settings["before_s"]) / 3), t_event)
    after = latency_window(records, first_success if first_success is not None else end, end)
    markers = {
        "event_start": t_event, "event_end": event["ended_monotonic"], "failure_detected": detected,
        "recovery_start": recovery_record["started_monotonic"] if recovery_record else None,
        "recovery_end": recovery_record["ended_monotonic"] if recovery_record else None,
        "ready_logged": logged, "healthy": healthy, "first_success": first_success,
        "load_stop": load.meta.get("stopped_at"),
    }
    first_failure = load.first_failure_after(t_event)

    def since_event(moment: float | None) -> float | None:
        return moment - t_event if moment is not None else None

    time_to_healthy = since_event(healthy)
    logged_ready = since_event(logged)
    result = {
        "name": name,
        "recovery": recovery,
        "setup": setup,
        "event": {key: event.get(key) for key in ("operation", "ok", "duration_s", "returncode", "pid", "signal",
                                                   "argv", "timed_out", "output_tail")},
        "recovery_operation": {key: recovery_record.get(key) for key in ("operation", "ok", "duration_s",
                                                                        "spawned", "pid", "returncode")}
        if recovery_record else None,
        "time_to_detection_s": since_event(detected),
        "detected_by": detected_by,
        "detection": "the first health check or request that the stack answered badly (HTTP error status or broken "
                     "reply)" if name == "bad_deploy" else "the first failed health check or request",
        "time_to_first_failed_request_s": since_event(first_failure),
        "time_to_healthy_s": time_to_healthy,
        "logged_ready_s": logged_ready,
        "ready_check": ready_check(time_to_healthy, logged_ready, plan["ready_tolerance"]),
        "time_to_first_success_s": since_event(first_success),
        "recovered": healthy is not None and first_success is not None,
        "errors": error_kinds(records),
        "errors_after_event": error_kinds(records, since=t_event),
        "accounting": accounting(records),
        "latency_before": before,
        "latency_after_recovery": after,
        "latency_ratio_after_vs_before": latency_ratio(before, after),
        "timeline": timeline(records, checks, t0, end, markers),
        "load": {"rate_per_s": load_settings["rate_per_s"], "retry": load_settings["retry"],
                 **{key: value for key, value in load.meta.items() if key != "stopped_at"}},
        "window_unix": [clock.offset + t0, clock.offset + end],
        "event_unix": event["started_unix"],
        "healthy_unix": waited["healthy_unix"],
    }
    request_lines = [{
        "i": record["i"], "outcome": record["outcome"], "sched": record["sched"] - t0,
        "attempts": [{**attempt, "send": attempt["send"] - t0, "end": attempt["end"] - t0,
                      "first_token": attempt["first_token"] - t0 if attempt["first_token"] else None}
                     for attempt in record["attempts"]],
    } for record in sorted(records, key=lambda item: item["i"])]
    return result, request_lines


def _first_token_probe(base_url: str, endpoint: dict[str, Any], deadline: float) -> float | None:
    """Monotonic time of the first generated token of the first request that succeeds (one try every 20 ms)."""
    load = SteadyLoad(base_url, endpoint, {**DEFAULT_LOAD, "output_tokens": 1, "input_words": 4,
                                           "retry": {"max_attempts": 1, "backoff_s": 0.0, "factor": 1.0}})

    async def probe() -> float | None:
        from dossier_agent.loadgen.http import ConnectionPool

        pool = ConnectionPool(load.target, limit=4, connect_timeout_s=1.0)
        try:
            index = 0
            while time.monotonic() < deadline:
                await load._request(pool, index, time.monotonic())
                attempt = load.records[-1]["attempts"][-1]
                if attempt["error"] is None:
                    return attempt["first_token"] or attempt["end"]
                index += 1
                await asyncio.sleep(0.02)
            return None
        finally:
            pool.close()

    return asyncio.run(probe())


def cold_start(stack: ServingStack, plan: dict[str, Any], base_url: str, clock: Clock, ctx) -> dict[str, Any]:
    runs = []
    for repeat in range(int(plan["cold_start"]["repeats"])):
        if ctx.cancelled():
            raise JobCancelled("the job was cancelled")
        stopped = stack.run("stop")
        watch = HealthWatch(stack, min(0.02, float(plan["health"]["interval_s"]))).start()
        started = stack.run("start")
        try:
            first_token = _first_token_probe(base_url, plan["endpoint"],
                                             time.monotonic() + float(plan["health"]["timeout_s"]))
            healthy = watch.first_ok_after(started["started_monotonic"])
            while healthy is None and time.monotonic() - started["started_monotonic"] < float(
                    plan["health"]["timeout_s"]):
                time.sleep(0.01)
                healthy = watch.first_ok_after(started["started_monotonic"])
        finally:
            watch.stop()
        begin = started["started_monotonic"]
        logged = clock.to_monotonic(stack.ready_after(started["started_unix"], time.time()))
        time_to_healthy = healthy - begin if healthy is not None else None
        logged_ready = logged - begin if logged is not None else None
        runs.append({
            "repeat": repeat,
            "stop": {key: stopped.get(key) for key in ("ok", "duration_s", "returncode", "forced")},
            "time_to_healthy_s": time_to_healthy,
            "time_to_first_token_s": first_token - begin if first_token is not None else None,
            "logged_ready_s": logged_ready,
            "ready_check": ready_check(time_to_healthy, logged_ready, plan["ready_tolerance"]),
        })
        ctx.log("cold start", repeat=repeat, time_to_healthy_s=time_to_healthy,
                time_to_first_token_s=runs[-1]["time_to_first_token_s"], logged_ready_s=logged_ready)
    return {
        "runs": runs,
        "time_to_healthy_s": distribution([run["time_to_healthy_s"] for run in runs]),
        "time_to_first_token_s": distribution([run["time_to_first_token_s"] for run in runs]),
        "logged_ready_s": distribution([run["logged_ready_s"] for run in runs]),
    }


# ----------------------------------------------------------------------------------------------------------------------
# Proxy model load time (a fresh process per repeat: `python -m dossier_agent.jobs.operations proxy-load CONFIG`)
# ----------------------------------------------------------------------------------------------------------------------


def proxy_load_main(config: dict[str, Any]) -> None:
    began = time.perf_counter()
    import torch

    from dossier_agent.proxies.build import ProxyPlan, build_proxy
    from dossier_agent.proxies.shape import ProxyShape
    from dossier_agent.proxies.weights import DTYPES

    phases = {"process_to_import_s": time.time() - config["spawned_unix"],
              "import_torch_s": time.perf_counter() - began}
    torch.set_num_threads(int(config.get("cpu_threads") or 1))
    device_name = config["device"]
    if device_name == "auto":
        device_name = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(device_name)

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    moment = time.perf_counter()
    torch.zeros(1, device=device)
    sync()
    phases["device_init_s"] = time.perf_counter() - moment
    shape = ProxyShape.from_spec(config["model"])
    if shape.architecture not in ("dense", "moe"):
        raise ValueError("the proxy load time is measured for decoder shapes (dense, moe)")
    moment = time.perf_counter()
    model = build_proxy(ProxyPlan(shape=shape, device=str(device)), device)
    sync()
    phases["build_s"] = time.perf_counter() - moment
    moment = time.perf_counter()
    prompt = int(config["prompt_tokens"])
    with torch.inference_mode():
        cache = model.allocate_cache(1, prompt + 1, 16, DTYPES[ProxyPlan(shape=shape, device=str(device))
                                                              .compute_dtype_name])
        tokens = torch.randint(shape.vocab_size, (1, prompt), device=device)
        logits = model.prefill(tokens, cache, slice(0, 1), 0)
        int(logits.argmax(dim=-1)[0])
    sync()
    phases["first_token_s"] = time.perf_counter() - moment
    phases["total_s"] = time.time() - config["spawned_unix"]
    parameters = sum(parameter.numel() for parameter in model.parameters())
    Path(config["report"]).write_text(json.dumps({"device": str(device), "phases": phases,
                                                  "parameters": parameters}))


def proxy_cold_start(settings: dict[str, Any], workdir: Path, ctx) -> dict[str, Any]:
    import dossier_agent

    folder = workdir / "proxy-load"
    folder.mkdir(parents=True, exist_ok=True)
    environment = {"PYTHONPATH": str(Path(dossier_agent.__file__).resolve().parent.parent)}
    runs = []
    for repeat in range(int(settings["repeats"])):
        report = folder / f"run-{repeat}.json"
        config = {"model": settings["model"], "device": settings["device"], "prompt_tokens":
                  settings["prompt_tokens"], "report": str(report), "spawned_unix": time.time()}
        config_path = folder / f"run-{repeat}-config.json"
        config_path.write_text(json.dumps(config))
        completed = subprocess.run(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "dossier_agent.jobs.operations", "proxy-load", str(config_path)],
            capture_output=True, timeout=float(settings["timeout_s"]), check=False,
            env={**os.environ, **environment, "PYTHONPATH": environment["PYTHONPATH"] + (
                os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")})
        if completed.returncode != 0:
            raise RuntimeError(f"the proxy load process failed: {completed.stderr.decode(errors='replace')[-2000:]}")
        runs.append(json.loads(report.read_text()))
        ctx.log("proxy model loaded", repeat=repeat, **runs[-1]["phases"])
    return {"runs": runs, "device": runs[0]["device"] if runs else None,
            "parameters": runs[0]["parameters"] if runs else None,
            **{phase: distribution([run["phases"][phase] for run in runs])
               for phase in ("import_torch_s", "device_init_s", "build_s", "first_token_s", "total_s")}}


# ----------------------------------------------------------------------------------------------------------------------
# The job
# ----------------------------------------------------------------------------------------------------------------------


def _gzip_lines(lines: list[dict[str, Any]]) -> bytes:
    return gzip.compress("\n".join(json.dumps(line, separators=(",", ":")) for line in lines).encode())


def run(spec: dict[str, Any], ctx) -> dict[str, Any]:
    plan = parse_operations_spec(spec or {})
    if plan["target"] == "builtin_mock":
        from dossier_agent.jobs.allreduce import free_port

        serving = builtin_mock_stack(plan["mock"], plan["mock"]["port"] or free_port())
    else:
        serving = parse_operations(getattr(ctx, "operations", None) or {})
        if serving is None and (plan["scenarios"] or plan["cold_start"]["repeats"]):
            raise OperationRefused("this node declares no operations ([operations.serving] and named operations in "
                                   "the agent configuration): phase-3 scenarios cannot run here")
    stack = ServingStack(serving) if serving is not None else None
    declared = stack.declared if stack is not None else []
    needed = required_operations(plan, declared)
    if stack is not None:
        stack.require(needed)  # refuses the whole job before anything runs
    base_url = (serving.base_url if serving is not None else None)
    if stack is not None and (plan["scenarios"] or plan["cold_start"]["repeats"]) and not base_url:
        raise OperationsSpecError("the node's [operations.serving] has no base_url: the load has no endpoint")
    clock = Clock()
    result: dict[str, Any] = {
        "schema": SCHEMA, "target": plan["target"], "stack": serving.describe() if serving else None,
        "required_operations": needed, "load": plan["load"], "ready_tolerance": plan["ready_tolerance"],
        "scenarios": [], "cold_start": None, "proxy_model": None, "observability": {},
    }
    logs: list[dict[str, Any]] = []
    window = float(plan["log_window_s"])
    steps = len(plan["scenarios"]) + (1 if plan["cold_start"]["repeats"] else 0) + (1 if plan["proxy_model"] else 0)
    done = 0
    try:
        if stack is not None:
            result["setup"] = ensure_healthy(stack, plan["health"], ctx)
            result["observability"]["metrics_before"] = stack.check_metrics()
        for scenario in plan["scenarios"]:
            ctx.progress(done / steps, f"scenario {scenario['name']} under load")
            outcome, request_lines = run_scenario(stack, scenario, plan, base_url, clock, ctx)
            result["scenarios"].append(outcome)
            ctx.add_artifact(_gzip_lines(request_lines), f"requests-{len(result['scenarios'])}-{scenario['name']}"
                             ".jsonl.gz", "application/gzip")
            logs += [{"scenario": scenario["name"], **line} for line in stack.logs_between(
                outcome["event_unix"] - window, (outcome["healthy_unix"] or time.time()) + window)]
            ctx.event("measurement", {"scenario": scenario["name"], **{key: outcome[key] for key in (
                "time_to_detection_s", "time_to_healthy_s", "logged_ready_s", "time_to_first_success_s",
                "recovered")}, "ready_within": outcome["ready_check"]["within"],
                "accounting": outcome["accounting"]})
            ctx.log("scenario done", scenario=scenario["name"], time_to_healthy_s=outcome["time_to_healthy_s"],
                    logged_ready_s=outcome["logged_ready_s"], lost=outcome["accounting"]["lost"])
            done += 1
        if plan["cold_start"]["repeats"]:
            ctx.progress(done / steps, "cold start")
            began = time.time()
            result["cold_start"] = cold_start(stack, plan, base_url, clock, ctx)
            logs += [{"scenario": "cold_start", **line} for line in stack.logs_between(began, time.time())]
            done += 1
        if stack is not None:
            result["observability"]["metrics_after"] = stack.check_metrics()
        if plan["proxy_model"]:
            ctx.progress(done / steps, "proxy model load time")
            result["proxy_model"] = proxy_cold_start(plan["proxy_model"], ctx.workdir, ctx)
    finally:
        if stack is not None:
            stack.close()
            result["operations_run"] = [{key: record.get(key) for key in (
                "operation", "started_unix", "duration_s", "ok", "returncode", "timed_out")}
                for record in stack.history]
    result["observability"]["log_lines_captured"] = len(logs)
    if logs:
        ctx.add_artifact(_gzip_lines(logs), "serving_logs.jsonl.gz", "application/gzip")
    result["figures"] = figures(result)
    ctx.add_artifact(json.dumps(result, indent=2, sort_keys=True, default=str).encode(), "operations.json",
                     "application/json")
    ctx.progress(1.0, "done")
    return result


def figures(result: dict[str, Any]) -> dict[str, Any]:
    """The measured inputs for the finance normalisation, with where each came from."""
    scenarios = result["scenarios"]
    attempts = sum(s["accounting"]["attempts"] for s in scenarios)
    requests = sum(s["accounting"]["requests"] for s in scenarios)
    lost = sum(s["accounting"]["lost"] for s in scenarios)
    cold = (result.get("cold_start") or {}).get("time_to_healthy_s") or {}
    accepted = sum(s["accounting"]["accepted"] for s in scenarios)
    # Per request that succeeded, as phase 4 charges them: accepted × (1 + retry_rate + failed_request_fraction)
    # = requests + retries = every attempt paid (a retried request is paid per attempt, accepted at most once).
    return {
        "retry_rate": (attempts - requests) / accepted if accepted else None,
        "failed_request_fraction": lost / accepted if accepted else None,
        "attempts": attempts,
        "requests": requests,
        "accepted_requests": accepted,
        "recovery_time_s_per_incident": {s["name"]: s["time_to_healthy_s"] for s in scenarios},
        "cold_start_s_median": cold.get("median"),
        "source": "operations job: failure scenarios under steady load (these rates are under induced failures, "
                  "not steady state)",
    }


if __name__ == "__main__":
    if sys.argv[1:2] != ["proxy-load"]:
        sys.exit("usage: python -m dossier_agent.jobs.operations proxy-load CONFIG.json")
    proxy_load_main(json.loads(Path(sys.argv[2]).read_text()))
