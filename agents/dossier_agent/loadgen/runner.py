"""One load run: spec → prompts → schedule (computed before the run) → requests → per-request records → summary.

Every loop is bounded in count (`max_requests`, the schedule's length) and in time (`duration_s`, then at most
`drain_s` for the requests still in flight, which are cut and recorded as `cut_at_end`). The measured window is
[`warmup_s`, `duration_s` − `cooldown_s`] of scheduled time; the summary
(`dossier_agent.contract.metrics.summarize`) marks the run invalid when the send-lag p99 exceeds
`send_lag_p99_limit_s`, when fewer requests were sent inside the window than scheduled beyond what that limit allows
(`metrics.rate_check`; the summary's `throughput.sent_per_s` is the rate actually sent, `scheduled_per_s` the
schedule's) or when the window is shorter than `min_window_s`.
"""

from __future__ import annotations

import asyncio
import gc
import gzip
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dossier_agent.contract import load_schedule, metrics
from dossier_agent.contract.load_spec import LoadSpec, SpecError, Target
from dossier_agent.loadgen import output_checks, prompts
from dossier_agent.loadgen.clients import (
    EndpointError,
    GenericTemplate,
    RequestBuilder,
    api_path,
    read_api_key,
    salted,
)
from dossier_agent.loadgen.http import ConnectionPool, Exchange, RequestFailed, build_request, perform

PROMPT_POOL = 4096
CALIBRATION_WORDS = (8, 32, 128, 512)


@dataclass
class LoadResult:
    spec: LoadSpec
    records: list[dict[str, Any]]
    summary: dict[str, Any]
    meta: dict[str, Any]

    def records_npz(self) -> bytes:
        """The records as numpy columns (`metrics.columns_to_npz`): what the server ingests fastest."""
        return metrics.columns_to_npz(metrics.columns_from_records(self.records))

    def records_jsonl_gz(self) -> bytes:
        lines = "\n".join(json.dumps(record, separators=(",", ":")) for record in self.records)
        return gzip.compress(lines.encode(), compresslevel=6)


class _Hooks:
    def __init__(self, cancelled: Callable[[], bool] | None, progress: Callable[[float, str], None] | None,
                 log: Callable[..., None] | None):
        self.cancelled = cancelled or (lambda: False)
        self.progress = progress or (lambda fraction, message: None)
        self.log = log or (lambda message, **fields: None)


def _prepare_items(spec: LoadSpec, counter: prompts.TokenCounter, count: int) -> list[prompts.PromptItem]:
    api = spec.endpoint.get("api", "chat")
    config = spec.prompts
    if config.get("dataset_lines") is not None or config.get("dataset"):
        items = (prompts.load_dataset(config["dataset_lines"]) if config.get("dataset_lines") is not None
                 else prompts.load_dataset_file(config["dataset"]))
        output_checks.check_items(items)
        return items
    synthetic = dict(config.get("synthetic") or {})
    if not synthetic:
        raise SpecError("prompts needs dataset, dataset_lines or synthetic")
    if spec.output_tokens and "output_tokens_mean" not in synthetic and "output_tokens" not in synthetic:
        synthetic["output_tokens"] = spec.output_tokens
    items = prompts.synthetic_prompts(synthetic, min(count, PROMPT_POOL), counter, seed=spec.seed,
                                      chat=(api == "chat"))
    return [salted(item) for item in items]


async def _calibrate(pool: ConnectionPool, target: Target, spec: LoadSpec, headers: dict[str, str],
                     counter: prompts.TokenCounter) -> dict[str, Any]:
    """Send `calibration_texts` (non-streamed, max_tokens 1) and hand the server's `usage.prompt_tokens` to the
    counter: a words → tokens fit without a tokenizer, a comparison (offset, ratio, flag) with one."""
    api = spec.endpoint.get("api", "chat")
    texts, counted = calibration_texts(spec.seed), []
    for text in texts:
        body: dict[str, Any] = {"model": spec.endpoint.get("model") or "default", "max_tokens": 1}
        if api == "chat":
            body["messages"] = [{"role": "user", "content": text}]
        else:
            body["prompt"] = text
        exchange = Exchange(keep_body=True)
        request = build_request("POST", target, api_path(target.base_path, api), headers, json.dumps(body).encode())
        await perform(pool, exchange, request, timeout_s=min(spec.timeout_s, 60.0), idle_timeout_s=spec.idle_timeout_s)
        if exchange.error is not None or exchange.status != 200:
            return {"calibrated": False, "reason": f"calibration request failed: "
                    f"{exchange.error.kind if exchange.error else exchange.status}"}
        try:
            usage = json.loads(exchange.body).get("usage") or {}
        except (ValueError, AttributeError):
            usage = {}
        if not isinstance(usage.get("prompt_tokens"), int):
            return {"calibrated": False, "reason": "the server reports no usage.prompt_tokens"}
        counted.append(usage["prompt_tokens"])
    try:
        return {"calibrated": True, **counter.calibrate_server(texts, counted)}
    except ValueError as error:
        return {"calibrated": False, "reason": str(error)}


def calibration_texts(seed: int) -> list[str]:
    """The calibration prompts of a run with this seed: synthetic text of `CALIBRATION_WORDS` words."""
    rng = np.random.default_rng(seed + 7)
    return [prompts.synthetic_text(rng, n, 10_000_000 + n) for n in CALIBRATION_WORDS]


def _headers(spec: LoadSpec, api: str) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept-Encoding": "identity",
               "User-Agent": "dossier-agent-loadgen"}
    if api in ("chat", "completions"):
        headers["Accept"] = "text/event-stream, application/json"
    for name, value in (spec.endpoint.get("headers") or {}).items():
        headers[str(name)] = str(value)
    key = read_api_key(spec.endpoint)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return headers


def _round(value: float | None, t0: float) -> float | None:
    return None if not value else round(value - t0, 6)


async def run_load(spec: LoadSpec, *, cancelled: Callable[[], bool] | None = None,
                   progress: Callable[[float, str], None] | None = None, log: Callable[..., None] | None = None,
                   run_id: str | None = None) -> LoadResult:
    hooks = _Hooks(cancelled, progress, log)
    loop = asyncio.get_running_loop()
    api = spec.endpoint.get("api", "chat")
    target = Target.parse(spec.endpoint["url"])
    try:
        headers = _headers(spec, api)
    except EndpointError as error:
        raise SpecError(str(error)) from None
    run_id = run_id or uuid.uuid4().hex[:12]
    times = load_schedule.build_schedule(spec.profile, spec.duration_s, max_requests=spec.max_requests,
                                         seed=spec.seed)
    closed = times is None
    concurrency = int(spec.profile.get("concurrency", 0)) if closed else 0
    planned = spec.max_requests if closed else int(times.size)
    try:  # a bad tokenizer.json stops the run here, before any request
        counter = prompts.TokenCounter(spec.prompts.get("tokenizer"))
    except prompts.TokenizerError as error:
        raise SpecError(str(error)) from None
    pool = ConnectionPool(target, limit=max(concurrency, 1) if closed else spec.max_connections,
                          connect_timeout_s=spec.connect_timeout_s)
    meta: dict[str, Any] = {"run_id": run_id, "api": api, "client": "dossier-loadgen asyncio HTTP/1.1",
                            "closed_loop": closed, "concurrency": concurrency or None, "scheduled": planned}
    # The cyclic garbage collector is off while the load runs: a full collection walks every record kept so far
    # and stopped the loop for up to 0.5 s at 1,500 req/s (measured, docs/PERFORMANCE.md), which is send lag the
    # server never caused. The run is bounded, so the garbage it leaves is collected right after.
    collector_was_on = gc.isenabled()
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        synthetic = not (spec.prompts.get("dataset_lines") is not None or spec.prompts.get("dataset"))
        if synthetic and spec.calibrate and api in ("chat", "completions"):
            meta["prompt_calibration"] = await _calibrate(pool, target, spec, headers, counter)
            if meta["prompt_calibration"].get("flagged"):
                hooks.log("prompt token calibration: " + meta["prompt_calibration"]["reason"], level="warning")
        meta["token_counting"] = counter.source
        items = _prepare_items(spec, counter, planned)
        if api == "generic":
            builder: RequestBuilder | GenericTemplate = GenericTemplate(spec.endpoint.get("generic") or {}, items)
            path, method = builder.path, builder.method
            headers = headers | builder.headers
        else:
            builder = RequestBuilder(spec.endpoint, items, hold_output_length=spec.endpoint.get(
                "hold_output_length", True), default_max_tokens=spec.output_tokens or 128)
            path, method = api_path(target.base_path, api), "POST"
        header_lines = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        head_prefix = f"{method} {target.base_path}{path} HTTP/1.1\r\nHost: {target.netloc}\r\n{header_lines}"
        prewarm = spec.prewarm_connections
        if prewarm is None:
            prewarm = concurrency if closed else int(min(256, max(8, (times.size / spec.duration_s) * 0.05)))
        meta["prewarmed_connections"] = await pool.prewarm(min(prewarm, pool.limit)) if prewarm else 0
        raw: list[tuple] = []
        in_flight: set[asyncio.Task] = set()
        timeout, idle = spec.timeout_s, spec.idle_timeout_s

        async def one(index: int, scheduled: float) -> None:
            body, item = builder.body(index)
            rid = f"{run_id}-{index}"
            request = (head_prefix + f"x-request-id: {rid}\r\nContent-Length: {len(body)}\r\n\r\n").encode(
                "latin-1") + body
            state = builder.new_state()
            exchange = Exchange(on_data=state.on_data, keep_body=state.on_data is None or spec.keep_text)
            try:
                await perform(pool, exchange, request, timeout_s=timeout, idle_timeout_s=idle)
            except asyncio.CancelledError:  # still running when the drain limit was reached: recorded, not lost
                exchange.sent = exchange.sent or loop.time()
                exchange.end = loop.time()
                exchange.error = RequestFailed("cut_at_end", "still running when the run's drain limit was reached")
                raw.append((index, rid, scheduled, exchange, state.finish(exchange), item))
                raise
            raw.append((index, rid, scheduled, exchange, state.finish(exchange), item))

        def spawn(index: int, scheduled: float) -> None:
            task = loop.create_task(one(index, scheduled))
            in_flight.add(task)
            task.add_done_callback(in_flight.discard)

        t0 = loop.time() + 0.02
        end = t0 + spec.duration_s
        next_report = t0
        hooks.progress(0.0, f"load run started: {planned} requests planned" if not closed else
                       f"closed loop at concurrency {concurrency}")
        stopped = None
        if closed:
            counter_box = [0]
            stopped_box: list[str | None] = [None]

            async def worker() -> None:
                while counter_box[0] < spec.max_requests and loop.time() < end and stopped_box[0] is None:
                    index = counter_box[0]
                    counter_box[0] += 1
                    await one(index, loop.time())

            await asyncio.sleep(max(0.0, t0 - loop.time()))
            workers = [loop.create_task(worker()) for _ in range(concurrency)]
            while any(not w.done() for w in workers):
                await asyncio.wait(workers, timeout=0.1)
                if hooks.cancelled():
                    stopped_box[0] = stopped = "cancelled"
                now = loop.time()
                if now >= next_report:
                    hooks.progress(min(1.0, (now - t0) / spec.duration_s), f"{counter_box[0]} requests sent")
                    next_report = now + 1.0
                if now > end + (spec.drain_s if spec.drain_s is not None else timeout + 1.0):
                    stopped = stopped or "drain limit"
                    break
            pending = [w for w in workers if not w.done()]
            in_flight.update(pending)
        else:
            offsets = times.tolist()
            total = len(offsets)
            i = 0
            check_at = t0
            while i < total:
                now = loop.time()
                if now >= check_at:
                    if hooks.cancelled():
                        stopped = "cancelled"
                        break
                    check_at = now + 0.05
                    if now >= next_report:
                        hooks.progress(min(1.0, max(0.0, (now - t0) / spec.duration_s)), f"{i} of {total} sent")
                        next_report = now + 1.0
                due = t0 + offsets[i]
                if due > now:
                    await asyncio.sleep(min(due - now, 0.05))
                    continue
                while i < total and t0 + offsets[i] <= now:
                    spawn(i, t0 + offsets[i])
                    i += 1
                await asyncio.sleep(0)
            meta["dispatched"] = i
        drain = spec.drain_s if spec.drain_s is not None else timeout + 1.0
        if in_flight:
            await asyncio.wait(set(in_flight), timeout=max(0.0, min(drain, end + drain - loop.time())))
        cut = [task for task in in_flight if not task.done()]
        for task in cut:
            task.cancel()
        if cut:
            await asyncio.gather(*cut, return_exceptions=True)
        meta["cut_at_end"] = len(cut)
        meta["stopped"] = stopped
        meta["connections_opened"] = pool.opened_total
    finally:
        pool.close()
        gc.unfreeze()
        if collector_was_on:
            gc.enable()
    records = _records(raw, t0, spec)
    meta["completed_wall_s"] = round(loop.time() - t0, 3)
    meta["t0_unix"] = time.time() - (loop.time() - t0)  # record times are seconds after this moment
    offered = load_schedule.offered_rate(spec.profile, times, spec.duration_s)
    return LoadResult(spec, records, summarize(records, spec, offered), meta)


def _records(raw: list[tuple], t0: float, spec: LoadSpec) -> list[dict[str, Any]]:
    bounds = (None, None)
    records = []
    for index, rid, scheduled, exchange, outcome, item in sorted(raw, key=lambda row: row[0]):
        check = _check(outcome, item, bounds, spec) if outcome.error is None else None
        record = {
            "i": index, "rid": rid, "sched": round(scheduled - t0, 6), "send": _round(exchange.sent, t0),
            "first_byte": _round(exchange.first_byte, t0), "end": _round(exchange.end, t0),
            "status": outcome.status or None, "error": outcome.error, "detail": outcome.detail,
            "in_tok": outcome.input_tokens, "out_tok": outcome.output_tokens, "check": check,
            "usage": outcome.usage_source, "t": [round(t - t0, 6) for t in outcome.chunk_times],
        }
        if any(k != 1 for k in outcome.chunk_tokens):
            record["n"] = outcome.chunk_tokens
        if spec.keep_text:
            record["text"] = outcome.text
        records.append(record)
    return records


def _check(outcome, item, bounds, spec: LoadSpec) -> str:
    api = spec.endpoint.get("api", "chat")
    if api == "generic":
        expect = (spec.endpoint.get("generic") or {}).get("expect") or {}
        return output_checks.check_generic(outcome.status, outcome.text.encode(), expect)
    if api == "embeddings":
        return "ok"
    return output_checks.check_output(outcome.text, outcome.output_tokens, item, bounds)


def summarize(records: list[dict[str, Any]], spec: LoadSpec, offered: float | None) -> dict[str, Any]:
    columns = metrics.columns_from_records(records)
    summary = metrics.summarize(columns, window=spec.window, limits=spec.limits, slo_target=spec.slo.get("target"),
                                target_output_tokens=spec.output_tokens if spec.endpoint.get("api", "chat") in (
                                    "chat", "completions") else None,
                                send_lag_p99_limit_s=spec.send_lag_p99_limit_s, offered_rate=offered)
    return summary


def run_load_sync(spec: LoadSpec, **kwargs: Any) -> LoadResult:
    return asyncio.run(run_load(spec, **kwargs))
