"""Phase-3 figures from the agent's results, checked and recomputed without Django (docs/metrics.md, "Phase 3 on the
server").

Every function takes the agent's result dict (and, for `operations`, the per-request records it uploaded) and
either returns plain data or raises `ShapeError` naming what is wrong: a malformed result is summarised with that
problem by the caller, never half-read. Counts are integers and the phase-4 figures exact Decimals computed from
them (a float the agent measured enters once, through its shortest decimal repr):

* retry rate            = retries ÷ requests that succeeded, retries = attempts − requests (every attempt is paid
                          once, a request counts once whatever its attempts; the basis phase 4 charges on)
* failed-request share  = lost ÷ requests that succeeded (a request lost after every retry; a retried success is
                          not lost)
* accepted requests     = succeeded first try + retried then succeeded (each request at most once)
* recovery per incident = mean over the scenarios of the time from the event to the first healthy answer, ÷ 3600
* cold start            = median of the cold-start runs' time to healthy (seconds)
* checkpoint write       = workload checkpoint bytes ÷ measured write throughput of the first verified target, ÷ 3600
* lost work per failure = (checkpoint interval ÷ 2 + projected read-back time) × GPUs ÷ 3600 (GPU-hours)
* interconnect          = busbw at the largest message size, recomputed as nccl-tests defines it
                          (algbw = bytes ÷ time of the slowest rank, busbw = algbw · 2(n−1)/n, GB = 10⁹ B)
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation, localcontext
from typing import Any

from dossier_agent.contract import verdicts as agent_verdicts

#: Decimal places of a stored phase-4 figure (CandidateFigure.value has 12).
PLACES = 12
OUTCOMES = ("succeeded", "retried_then_succeeded", "lost")
ACCOUNTING_COUNTS = ("requests", "succeeded_first_try", "retried_then_succeeded", "lost", "attempts", "retries",
                     "accepted")
#: relative tolerance when comparing a figure the agent computed with the same figure recomputed here
REL_TOLERANCE = 1e-9


class ShapeError(ValueError):
    """The result does not have the shape the agent's job produces; the message names the place."""


# --- small checked readers ------------------------------------------------------------------------------------------


def _dict(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ShapeError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ShapeError(f"{where}: expected a list, got {type(value).__name__}")
    return value


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ShapeError(f"{where}: expected a whole number ≥ 0, got {value!r}")
    return value


def _number(value: Any, where: str, *, optional: bool = False, positive: bool = False) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ShapeError(f"{where}: expected a finite number, got {value!r}")
    try:
        finite = math.isfinite(value) and abs(value) < 1e30  # no measurement is larger; keeps Decimals in range
    except OverflowError:  # an integer too large for a float
        finite = False
    if not finite:
        raise ShapeError(f"{where}: expected a finite number below 1e30, got {str(value)[:40]}")
    if positive and not value > 0:
        raise ShapeError(f"{where}: expected a positive number, got {value!r}")
    return float(value)


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ShapeError(f"{where}: expected a non-empty text, got {value!r}")
    return value


def exact(value: float | int) -> Decimal:
    """A measured float as the Decimal of its shortest repr (0.1 → Decimal('0.1'), not its binary expansion)."""
    return Decimal(repr(float(value))) if isinstance(value, float) else Decimal(value)


def quantized(value: Decimal, places: int = PLACES) -> Decimal:
    """Rounded half-even to `places` decimals (what a CandidateFigure can hold), trailing zeros dropped."""
    with localcontext() as context:
        context.prec = 60
        try:
            rounded = value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN)
        except InvalidOperation:
            raise ShapeError(f"a figure of {value:.3e} is out of range") from None
    return rounded.normalize() if rounded != 0 else Decimal(0)


def _divide(numerator: Decimal, denominator: Decimal) -> Decimal:
    with localcontext() as context:
        context.prec = 60
        return numerator / denominator


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    if any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in (a, b)):
        return False
    return math.isclose(a, b, rel_tol=REL_TOLERANCE, abs_tol=1e-12)


# --- operations: request accounting ---------------------------------------------------------------------------------


def check_request_line(line: Any, where: str) -> tuple[str, int]:
    """(outcome, attempts) of one request record, checked: a success ends its attempts, a loss has no success."""
    line = _dict(line, where)
    outcome = line.get("outcome")
    if outcome not in OUTCOMES:
        raise ShapeError(f"{where}.outcome: expected one of {', '.join(OUTCOMES)}, got {outcome!r}")
    attempts = _list(line.get("attempts"), f"{where}.attempts")
    if not attempts:
        raise ShapeError(f"{where}: a request without any attempt")
    errors = [_dict(attempt, f"{where}.attempts[{n}]").get("error") for n, attempt in enumerate(attempts)]
    if outcome == "lost":
        if any(error is None for error in errors):
            raise ShapeError(f"{where}: counted lost, yet an attempt succeeded")
    else:
        if errors[-1] is not None or any(error is None for error in errors[:-1]):
            raise ShapeError(f"{where}: a success must be the last attempt and the only one")
        if (outcome == "succeeded") != (len(attempts) == 1):
            raise ShapeError(f"{where}: {outcome} with {len(attempts)} attempt(s)")
    return outcome, len(attempts)


def count_requests(lines: list[Any], where: str = "requests") -> dict[str, int]:
    """The accounting counts from the per-request records: each request once, each attempt paid once."""
    counts = dict.fromkeys(ACCOUNTING_COUNTS, 0)
    seen: set[Any] = set()
    for position, line in enumerate(_list(lines, where)):
        outcome, attempts = check_request_line(line, f"{where}[{position}]")
        index = line.get("i")
        if isinstance(index, bool) or not isinstance(index, (int, str)):
            raise ShapeError(f"{where}[{position}].i: expected a request number, got {index!r}")
        if index in seen:
            raise ShapeError(f"{where}[{position}]: request {index!r} is listed twice")
        seen.add(index)
        counts["requests"] += 1
        counts["attempts"] += attempts
        counts["succeeded_first_try" if outcome == "succeeded" else outcome] += 1
    counts["retries"] = counts["attempts"] - counts["requests"]
    counts["accepted"] = counts["succeeded_first_try"] + counts["retried_then_succeeded"]
    return counts


def check_accounting(accounting: Any, where: str) -> dict[str, int]:
    """The agent's accounting counts, checked for the identities every request and attempt must satisfy."""
    accounting = _dict(accounting, where)
    counts = {key: _count(accounting.get(key), f"{where}.{key}") for key in ACCOUNTING_COUNTS}
    if counts["succeeded_first_try"] + counts["retried_then_succeeded"] + counts["lost"] != counts["requests"]:
        raise ShapeError(f"{where}: succeeded + retried then succeeded + lost ≠ requests (a request unaccounted for)")
    if counts["attempts"] - counts["requests"] != counts["retries"] or counts["attempts"] < counts["requests"]:
        raise ShapeError(f"{where}: retries ≠ attempts − requests")
    if counts["accepted"] != counts["succeeded_first_try"] + counts["retried_then_succeeded"]:
        raise ShapeError(f"{where}: accepted ≠ succeeded first try + retried then succeeded")
    if counts["retried_then_succeeded"] > counts["retries"]:
        raise ShapeError(f"{where}: more retried successes than retries")
    return counts


def operations_figures(result: Any, records: dict[int, list[Any]] | None = None) -> dict[str, Any]:
    """Checked scenarios, totals and the exact phase-4 figures of an `operations` result.

    `records` maps a scenario's position (0-based) to its uploaded request records; where given, the counts come
    from them and must equal the agent's accounting (else ShapeError).
    """
    result = _dict(result, "result")
    scenarios = _list(result.get("scenarios"), "result.scenarios")
    records = records or {}
    checked, totals = [], dict.fromkeys(ACCOUNTING_COUNTS, 0)
    for position, scenario in enumerate(scenarios):
        where = f"scenarios[{position}]"
        scenario = _dict(scenario, where)
        name = _text(scenario.get("name"), f"{where}.name")
        counts = check_accounting(scenario.get("accounting"), f"{where}.accounting")
        source = "agent"
        if position in records:
            recounted = count_requests(records[position], f"{where} request records")
            differing = [key for key in ACCOUNTING_COUNTS if recounted[key] != counts[key]]
            if differing:
                raise ShapeError(f"{where}: the uploaded request records disagree with the agent's accounting on "
                                 f"{', '.join(differing)}")
            source = "records"
        times = {key: _number(scenario.get(key), f"{where}.{key}", optional=True) for key in (
            "time_to_detection_s", "time_to_healthy_s", "logged_ready_s", "time_to_first_success_s")}
        for key, value in times.items():
            if value is not None and value < 0 and key != "time_to_detection_s":
                raise ShapeError(f"{where}.{key}: negative")
        ratio = _dict(scenario.get("latency_ratio_after_vs_before") or {}, f"{where}.latency_ratio_after_vs_before")
        checked.append({"name": name, "recovery": scenario.get("recovery"), **times,
                        "recovered": bool(scenario.get("recovered")), "counts": counts, "counted_from": source,
                        "latency_ratio_p99": _number(ratio.get("e2e_p99"), f"{where}.latency ratio p99",
                                                     optional=True),
                        "latency_ratio_p50": _number(ratio.get("e2e_p50"), f"{where}.latency ratio p50",
                                                     optional=True)})
        for key in ACCOUNTING_COUNTS:
            totals[key] += counts[key]
    cold = result.get("cold_start")
    cold_runs = []
    if cold is not None:
        for position, run in enumerate(_list(_dict(cold, "cold_start").get("runs"), "cold_start.runs")):
            run = _dict(run, f"cold_start.runs[{position}]")
            cold_runs.append({key: _number(run.get(key), f"cold_start.runs[{position}].{key}", optional=True)
                              for key in ("time_to_healthy_s", "time_to_first_token_s", "logged_ready_s")})
    return {"scenarios": checked, "totals": totals, "cold_start_runs": cold_runs,
            "phase4": operations_phase4(checked, totals, cold_runs)}


def _median(values: list[Decimal]) -> Decimal:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return _divide(ordered[middle - 1] + ordered[middle], Decimal(2))


def operations_phase4(scenarios: list[dict[str, Any]], totals: dict[str, int],
                      cold_runs: list[dict[str, Any]]) -> dict[str, Any]:
    """{"figures": {name: (Decimal, note)}, "skipped": [reasons]} from checked scenarios and cold-start runs."""
    figures: dict[str, tuple[Decimal, str]] = {}
    skipped: list[str] = []
    # Phase 4 charges generated × (1 + retry_rate + failure_rate) for the requests it needs served (apps/decisions/
    # normalize.py): both rates are per request that succeeded, so accepted × (1 + r + f) = requests + retries
    # = every attempt paid, and each request counts as accepted at most once.
    accepted = totals["succeeded_first_try"] + totals["retried_then_succeeded"]
    if accepted:
        figures["retry_rate"] = (
            quantized(_divide(Decimal(totals["retries"]), Decimal(accepted))),
            f"retries ÷ requests that succeeded = {totals['retries']} ÷ {accepted} over {len(scenarios)} failure "
            f"scenario(s); {totals['attempts']} attempts paid")
        figures["failed_request_fraction"] = (
            quantized(_divide(Decimal(totals["lost"]), Decimal(accepted))),
            f"requests lost after every retry ÷ requests that succeeded = {totals['lost']} ÷ {accepted}")
    elif totals["requests"]:
        skipped.append("retry and failure rates: no request succeeded")
    else:
        skipped.append("retry and failure rates: no request was sent")
    healthy = [(s["name"], s["time_to_healthy_s"]) for s in scenarios]
    never = [name for name, seconds in healthy if seconds is None]
    if not scenarios:
        skipped.append("recovery time: no failure scenario ran")
    elif never:
        skipped.append(f"recovery time: never healthy again after {', '.join(never)}")
    else:
        seconds = _divide(sum((exact(s) for _n, s in healthy), Decimal(0)), Decimal(len(healthy)))
        figures["recovery_hours"] = (
            quantized(_divide(seconds, Decimal(3600))),
            f"mean time from the event to the first healthy answer over {len(healthy)} scenario(s) = "
            f"{quantized(seconds, 6)} s, ÷ 3600 for hours")
    if cold_runs:
        values = [run["time_to_healthy_s"] for run in cold_runs]
        if any(value is None for value in values):
            skipped.append("cold start: a start never became healthy")
        else:
            figures["cold_start_seconds"] = (
                quantized(_median([exact(value) for value in values]), 6),
                f"median time from start to healthy over {len(values)} cold start(s)")
    return {"figures": figures, "skipped": skipped}


# --- checkpoint ---------------------------------------------------------------------------------------------------


def checkpoint_figures(result: Any) -> dict[str, Any]:
    result = _dict(result, "result")
    targets = []
    for position, target in enumerate(_list(result.get("targets"), "result.targets")):
        where = f"targets[{position}]"
        target = _dict(target, where)
        targets.append({
            "name": _text(target.get("name"), f"{where}.name"),
            "bytes": _count(target.get("bytes"), f"{where}.bytes"),
            "write_s": _number(target.get("write_s"), f"{where}.write_s"),
            "write_bytes_per_s": _number(target.get("write_bytes_per_s"), f"{where}.write_bytes_per_s",
                                         positive=True),
            "read_s": _number(target.get("read_s"), f"{where}.read_s"),
            "read_bytes_per_s": _number(target.get("read_bytes_per_s"), f"{where}.read_bytes_per_s", positive=True),
            "hash_equal": target.get("hash_equal") is True,
            "step_ok": target.get("step_ok") is True,
            "verified": target.get("verified") is True,
            "saved_step": target.get("saved_step"), "resumed_step": target.get("resumed_step"),
            "mount": (target.get("mount") or {}).get("fstype") if isinstance(target.get("mount"), dict) else None,
        })
    workload = _dict(result.get("workload") or {}, "result.workload")
    checkpoint_bytes = _number(workload.get("checkpoint_bytes"), "workload.checkpoint_bytes", optional=True,
                               positive=True) if workload.get("checkpoint_bytes") is not None else None
    interval = None
    if workload.get("checkpoint_interval_s") is not None:
        interval = _number(workload["checkpoint_interval_s"], "workload.checkpoint_interval_s", positive=True)
    elif workload.get("checkpoint_interval_steps") is not None and workload.get("step_time_s") is not None:
        interval = (_number(workload["checkpoint_interval_steps"], "workload.checkpoint_interval_steps",
                            positive=True)
                    * _number(workload["step_time_s"], "workload.step_time_s", positive=True))
    projections = {}
    for position, projection in enumerate(_list(result.get("projections") or [], "result.projections")):
        projection = _dict(projection, f"projections[{position}]")
        lost = _dict(projection.get("lost_work") or {}, f"projections[{position}].lost_work")
        target = projection.get("target")
        if not isinstance(target, str):
            raise ShapeError(f"projections[{position}].target: expected a target name, got {target!r}")
        projections[target] = {"gpus": lost.get("gpus")}
    figures: dict[str, tuple[Decimal, str]] = {}
    skipped: list[str] = []
    chosen = next((target for target in targets if target["verified"]), None)
    if chosen is None:
        skipped.append("checkpoint: no target restored an identical state (hash and step): nothing stored")
    else:
        read_s = None
        if checkpoint_bytes is None:
            skipped.append("checkpoint write time: the job gives no workload checkpoint size "
                           "(workload.checkpoint_bytes); the proxy state's write time is not the workload's")
        else:
            size = exact(checkpoint_bytes)
            write_s = _divide(size, exact(chosen["write_bytes_per_s"]))
            read_s = _divide(size, exact(chosen["read_bytes_per_s"]))
            figures["checkpoint_write_hours"] = (
                quantized(_divide(write_s, Decimal(3600))),
                f"{checkpoint_bytes:.6g} B ÷ {chosen['write_bytes_per_s']:.6g} B/s measured on "
                f"“{chosen['name']}” = {quantized(write_s, 3)} s, ÷ 3600 for hours")
        gpus = (projections.get(chosen["name"]) or {}).get("gpus")
        if interval is None:
            skipped.append("lost work per failure: the job gives no checkpoint interval")
        elif isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
            skipped.append("lost work per failure: the number of GPUs is unknown")
        else:
            lost_s = _divide(exact(interval), Decimal(2)) + (read_s or Decimal(0))
            figures["lost_work_gpu_hours"] = (
                quantized(_divide(lost_s * gpus, Decimal(3600))),
                f"(interval {interval:g} s ÷ 2 + read-back "
                f"{quantized(read_s, 3) if read_s is not None else 'not projected'} s) × {gpus} GPU(s) ÷ 3600")
    return {"label": result.get("label"), "targets": targets, "chosen": chosen["name"] if chosen else None,
            "verified": bool(targets) and all(target["verified"] for target in targets),
            "checkpoint_bytes": checkpoint_bytes, "interval_s": interval,
            "phase4": {"figures": figures, "skipped": skipped}}


# --- all-reduce -------------------------------------------------------------------------------------------------------


def allreduce_figures(result: Any) -> dict[str, Any]:
    result = _dict(result, "result")
    world = _count(result.get("world_size"), "result.world_size")
    if world < 2:
        raise ShapeError("result.world_size: an all-reduce needs at least 2 ranks")
    label = _text(result.get("label"), "result.label")
    backend = _text(result.get("backend"), "result.backend")
    rows = []
    for position, row in enumerate(_list(result.get("rows"), "result.rows")):
        where = f"rows[{position}]"
        row = _dict(row, where)
        size = _count(row.get("size_bytes"), f"{where}.size_bytes")
        time_us = _number(row.get("time_us"), f"{where}.time_us", positive=True)
        busbw = _number(row.get("busbw_gbps"), f"{where}.busbw_gbps")
        algbw = _number(row.get("algbw_gbps"), f"{where}.algbw_gbps")
        expected_alg, expected_bus = agent_verdicts.bus_bandwidth(size, time_us / 1e6, world)
        if not (_close(algbw, expected_alg / 1e9) and _close(busbw, expected_bus / 1e9)):
            raise ShapeError(f"{where}: algbw/busbw differ from bytes ÷ time and algbw · 2(n−1)/n for n = {world}")
        rows.append({"size_bytes": size, "time_us": time_us, "algbw_gbps": algbw, "busbw_gbps": busbw})
    if not rows:
        raise ShapeError("result.rows: no message size was measured")
    if result.get("correct") is not True:
        raise ShapeError("result.correct: the all-reduce did not return the right sums")
    rows.sort(key=lambda row: row["size_bytes"])
    largest = rows[-1]
    peak = max(rows, key=lambda row: row["busbw_gbps"])
    figures: dict[str, tuple[Decimal, str]] = {}
    skipped: list[str] = []
    mode = result.get("mode")
    nodes = result.get("nodes")
    if label != "cuda":
        skipped.append(f"interconnect: a {label}/{backend} all-reduce does not measure the GPUs' interconnect")
    else:
        figures["busbw_gbps"] = (
            quantized(exact(largest["busbw_gbps"]), 6),
            f"busbw at the largest message ({largest['size_bytes']} B), {world} ranks, {backend}, "
            f"{nodes if isinstance(nodes, int) else '?'} node(s) (nccl-tests: algbw · 2(n−1)/n)")
    return {"label": label, "backend": backend, "world_size": world, "mode": mode, "nodes": nodes,
            "dtype": result.get("dtype"), "rows": rows, "largest": largest, "peak": peak,
            "phase4": {"figures": figures, "skipped": skipped}}


# --- acceptance -------------------------------------------------------------------------------------------------------


def acceptance_review(result: Any) -> dict[str, Any]:
    """Every check re-judged with the agent's own rule (`check_verdict`): the ratios, verdicts and the flags.

    A CPU (or any non-CUDA) figure is shown labelled and never compared with a GPU datasheet: its ratio is dropped
    whatever the result says, and it is never flagged.
    """
    result = _dict(result, "result")
    label = _text(result.get("label"), "result.label")
    rows, flags, disagreements = [], [], []
    for d_position, device in enumerate(_list(result.get("devices"), "result.devices")):
        device = _dict(device, f"devices[{d_position}]")
        device_label = device.get("label") or label
        for c_position, check in enumerate(_list(device.get("checks"), f"devices[{d_position}].checks")):
            where = f"devices[{d_position}].checks[{c_position}]"
            check = _dict(check, where)
            name = _text(check.get("check"), f"{where}.check")
            check_label = check.get("label") or device_label
            measured = _number(check.get("measured"), f"{where}.measured", optional=True)
            datasheet = _number(check.get("datasheet"), f"{where}.datasheet", optional=True)
            threshold = _number(check.get("threshold"), f"{where}.threshold", optional=True)
            agent_verdict = check.get("verdict")
            if agent_verdict == "skipped" or (check_label != "cuda" and measured is None):
                verdict, ratio = ("not_applicable" if check_label != "cuda" else "skipped"), None
            else:
                verdict, ratio = agent_verdicts.check_verdict(check_label, measured, datasheet, threshold)
            if check_label != "cuda":
                datasheet = threshold = None
            elif agent_verdict != verdict or not _close(check.get("ratio"), ratio):
                disagreements.append(f"{name} on device {device.get('index')}: the agent said {agent_verdict}")
            rows.append({"device": device.get("index"), "device_name": device.get("name"), "check": name,
                         "label": check_label, "unit": check.get("unit"), "precision": check.get("precision"),
                         "measured": measured, "datasheet": datasheet, "ratio": ratio, "threshold": threshold,
                         "verdict": verdict, "datasheet_source": check.get("datasheet_source")})
            if verdict == "below_threshold":
                flags.append({"severity": "fail", "source": "check", "device": device.get("index"), "check": name,
                              "ratio": ratio, "threshold": threshold})
    if label == "cuda":
        for position, flag in enumerate(_list(result.get("flags") or [], "result.flags")):
            flag = _dict(flag, f"flags[{position}]")
            if flag.get("source") in ("nvml", "dcgm") and flag.get("severity") in ("fail", "warning"):
                flags.append({"severity": flag["severity"], "source": flag["source"], "device": flag.get("device"),
                              "check": str(flag.get("check") or ""), "message": str(flag.get("message") or "")[:300]})
    verdicts = {row["verdict"] for row in rows if row["verdict"] != "skipped"}
    if label != "cuda":
        verdict = "not_applicable"
    elif any(flag["severity"] == "fail" for flag in flags):
        verdict = "fail"
    elif verdicts - {"pass"} or not verdicts:
        verdict = "incomplete"
    else:
        verdict = "pass"
    return {"label": label, "precision": result.get("precision"), "rows": rows, "flags": flags, "verdict": verdict,
            "agent_verdict": result.get("verdict"), "disagreements": disagreements,
            "datasheet_gpu": (result.get("datasheet") or {}).get("gpu") if isinstance(result.get("datasheet"), dict)
            else None}
