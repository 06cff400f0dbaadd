"""The one definition of every load-test metric. Pure: stdlib and numpy only, no I/O; the agent (validity of a run,
capacity search) and the server (ingest of the per-request records) both call this module. docs/metrics.md explains
every definition with its reasons.

Times are seconds, all on one clock (the load generator's monotonic clock, offsets from the start of the run).

- TTFT = arrival of the first chunk with non-empty generated content − actual send (a role-only chunk does not count).
- E2E = arrival of the last byte − actual send.
- TPOT = (last token arrival − TTFT arrival) / (output tokens − 1), per request with at least 2 output tokens.
- ITL = gap between consecutive tokens, per token: a chunk carrying k tokens that arrives g after the previous chunk
  contributes k gaps of g/k (the tokens that came with the first content chunk have no gap before them). A token is
  a token of the server's count (`usage.completion_tokens`), spread over the chunks by per-chunk accounting.
- send lag = actual send − scheduled send; a run whose send-lag p99 exceeds the threshold is invalid.
- scheduled rate = requests scheduled inside the window ÷ window seconds; sent rate = requests whose actual send
  falls inside the window's time span (whenever they were scheduled; a request never sent is not sent) ÷ window
  seconds: the load the endpoint was really offered. Rate rule (`rate_check`): a run is invalid when the two counts
  differ by more than the send-lag limit L lets slip across the window's edges: fewer sent than scheduled by more
  than the requests scheduled in the window's last L seconds + 1, or more sent by more than those scheduled in the
  L seconds before it + 1. For a steady schedule that is scheduled rate × L + 1 requests, i.e. a shortfall of
  L ÷ window seconds + 1 ÷ scheduled as a share. A client whose lag stays within L cannot move more requests across
  an edge; one that falls behind its schedule (or stalls near the end of the window) does.
- accepted = succeeded ∧ within every latency limit ∧ passed the output check; errors and timeouts stay in the
  denominator; goodput = accepted requests (or their output tokens) per second of the measured window.
- capacity at the SLO = the highest offered load whose attainment is ≥ the target, every lower tested load passing too.

Percentiles: `PERCENTILE_METHOD` (per request) and `WEIGHTED_METHOD` (token-weighted); a percentile q is reported
only from at least ⌈1/(1 − q)⌉ samples (p50 from 2, p90 from 10, p95 from 20, p99 from 100), else it is `None`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

PERCENTILES: tuple[float, ...] = (50.0, 90.0, 95.0, 99.0)
PERCENTILE_METHOD = ("linear interpolation between the two nearest ranks (Hyndman & Fan type 7, numpy "
                     "method='linear'); a percentile q only from at least ceil(1/(1-q)) samples")
WEIGHTED_METHOD = ("weighted inverted CDF: the smallest value whose cumulative weight reaches q of the total weight "
                   "(weights = output tokens); needs the same number of requests as the per-request percentile")
CI_METHOD = "Wilson score interval"
DEFAULT_SEND_LAG_P99_LIMIT_S = 0.010
OUTPUT_LENGTH_TOLERANCE = 0.10
# Histogram bins shared by every latency metric: log-spaced, 10 µs to 1,000 s, 20 bins per decade.
HISTOGRAM_EDGES_S = np.logspace(-5, 3, 8 * 20 + 1)
CDF_POINTS = 101

SUCCESS = ""  # error kind of a request that succeeded


def min_samples(q: float) -> int:
    """Fewest samples from which percentile q (0–100) is reported: ⌈1/(1 − q/100)⌉."""
    if not 0 <= q < 100:
        raise ValueError(f"percentile must be in [0, 100), got {q}")
    return max(1, math.ceil(1.0 / (1.0 - q / 100.0) - 1e-9))


def _name(q: float) -> str:
    return f"p{q:g}".replace(".", "_")


def percentiles(values: Any, qs: Sequence[float] = PERCENTILES, weights: Any = None,
                samples: int | None = None) -> dict[str, Any]:
    """Percentiles of `values` (NaN dropped), with the method stated and `None` where there are too few samples.

    With `weights`, the token-weighted percentile (`WEIGHTED_METHOD`); `samples` then says how many independent
    samples the weighted values stand for (default: the number of values with positive weight).
    """
    data = np.asarray(values, dtype=np.float64).ravel()
    if weights is None:
        data = data[~np.isnan(data)]
        count = int(data.size)
        out: dict[str, Any] = {"n": count, "method": PERCENTILE_METHOD}
        wanted = [q for q in qs if count >= min_samples(q)]
        found = np.percentile(data, wanted, method="linear") if wanted else []
        lookup = dict(zip(wanted, (float(v) for v in found), strict=True))
        for q in qs:
            out[_name(q)] = lookup.get(q)
        out["mean"] = float(data.mean()) if count else None
        out["min"] = float(data.min()) if count else None
        out["max"] = float(data.max()) if count else None
        return out
    w = np.asarray(weights, dtype=np.float64).ravel()
    if w.shape != data.shape:
        raise ValueError("values and weights differ in length")
    keep = ~np.isnan(data) & (w > 0)
    data, w = data[keep], w[keep]
    count = int(data.size) if samples is None else int(samples)
    out = {"n": count, "weight": float(w.sum()), "method": WEIGHTED_METHOD}
    if data.size:
        wanted = [q for q in qs if count >= min_samples(q)]
        found = weighted_quantiles(data, w, [q / 100.0 for q in wanted])
        lookup = dict(zip(wanted, (float(v) for v in found), strict=True))
        for q in qs:
            out[_name(q)] = lookup.get(q)
        out["mean"] = float(np.dot(data, w) / w.sum())
        out["min"], out["max"] = float(data.min()), float(data.max())
    else:
        out.update({_name(q): None for q in qs} | {"mean": None, "min": None, "max": None})
    return out


def weighted_quantiles(data: np.ndarray, weights: np.ndarray, fractions: Sequence[float]) -> np.ndarray:
    """Weighted inverted CDF: for each fraction f, the smallest value whose cumulative weight reaches f·total.

    Integer weights that are mostly 1 (ITL: tokens per chunk) are expanded and selected by partition (O(n), the same
    answer as numpy's method='inverted_cdf' on the expanded data); anything else is sorted once.
    """
    if not len(fractions):
        return np.zeros(0)
    total = float(weights.sum())
    if total <= 2 * weights.size and np.all(weights == np.floor(weights)):
        expanded = data if np.all(weights == 1) else np.repeat(data, weights.astype(np.int64))
        return np.percentile(expanded, [100.0 * f for f in fractions], method="inverted_cdf")
    order = np.argsort(data, kind="stable")
    cumulative = np.cumsum(weights[order])
    index = np.searchsorted(cumulative, np.asarray(fractions) * cumulative[-1], side="left")
    return data[order][np.minimum(index, data.size - 1)]


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval of a proportion; `None` for n = 0."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError("successes must be between 0 and n")
    z = _normal_quantile(0.5 + confidence / 2.0)
    p = successes / n
    denominator = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # Exact at the ends (rounding would otherwise leave p = 1 a hair outside its own interval).
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


def _normal_quantile(p: float) -> float:
    """Inverse of the standard normal CDF (Acklam's rational approximation, refined by one Newton step)."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must be in (0, 1)")
    a = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02, 1.383577518672690e02,
         -3.066479806614716e01, 2.506628277459239e00)
    b = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02, 6.680131188771972e01,
         -1.328068155288572e01)
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00, -2.549732539343734e00,
         4.374664141464968e00, 2.938163982698783e00)
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)
    low = 0.02425
    if p < low:
        q = math.sqrt(-2 * math.log(p))
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / (
            (((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    elif p <= 1 - low:
        q = p - 0.5
        r = q * q
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q / (
            ((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
    else:
        q = math.sqrt(-2 * math.log(1 - p))
        x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / (
            (((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    error = 0.5 * math.erfc(-x / math.sqrt(2)) - p
    return x - error * math.sqrt(2 * math.pi) * math.exp(x * x / 2)


# ---------------------------------------------------------------------------------------------------------------
# Per-request records in columns
# ---------------------------------------------------------------------------------------------------------------

@dataclass
class Columns:
    """Per-request records as numpy columns (one row per request; times in seconds from the start of the run,
    NaN where absent). Chunks are flattened: request i owns chunk rows `chunk_offsets[i]:chunk_offsets[i+1]`, each
    with its arrival time and the number of tokens it carried (content chunks only)."""

    scheduled: np.ndarray
    sent: np.ndarray
    first_byte: np.ndarray
    end: np.ndarray
    status: np.ndarray
    error: np.ndarray          # object array of str: "" when the request succeeded, else the error kind
    input_tokens: np.ndarray   # -1 unknown
    output_tokens: np.ndarray  # -1 unknown
    output_ok: np.ndarray      # bool: passed the output check (True where no check applies)
    chunk_offsets: np.ndarray
    chunk_times: np.ndarray
    chunk_tokens: np.ndarray

    def __len__(self) -> int:
        return int(self.sent.size)

    @property
    def succeeded(self) -> np.ndarray:
        return self.error == SUCCESS

    def first_token(self) -> np.ndarray:
        """Arrival of the first content chunk (NaN for requests without one)."""
        counts = np.diff(self.chunk_offsets)
        out = np.full(len(self), np.nan)
        has = counts > 0
        out[has] = self.chunk_times[self.chunk_offsets[:-1][has]]
        return out

    def last_token(self) -> np.ndarray:
        counts = np.diff(self.chunk_offsets)
        out = np.full(len(self), np.nan)
        has = counts > 0
        out[has] = self.chunk_times[self.chunk_offsets[1:][has] - 1]
        return out

    def select(self, mask: np.ndarray) -> Columns:
        mask = np.asarray(mask, dtype=bool)
        counts = np.diff(self.chunk_offsets)
        chunk_mask = np.repeat(mask, counts)
        offsets = np.concatenate([[0], np.cumsum(counts[mask])]).astype(np.int64)
        return Columns(self.scheduled[mask], self.sent[mask], self.first_byte[mask], self.end[mask],
                       self.status[mask], self.error[mask], self.input_tokens[mask], self.output_tokens[mask],
                       self.output_ok[mask], offsets, self.chunk_times[chunk_mask], self.chunk_tokens[chunk_mask])


_BATCH = 20_000


def _column_batch(batch: list[Mapping[str, Any]]) -> tuple[list[np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
    """One batch of record dicts as arrays (list comprehensions: no per-field Python loop per record)."""
    f64 = np.float64
    fields = [
        np.array([r.get("sched") for r in batch], dtype=f64),
        np.array([r.get("send") for r in batch], dtype=f64),
        np.array([r.get("first_byte") for r in batch], dtype=f64),
        np.array([r.get("end") for r in batch], dtype=f64),
        np.array([r.get("status") or 0 for r in batch], dtype=np.int32),
        np.array([r.get("error") or SUCCESS for r in batch], dtype=object),
        np.array([-1 if v is None else v for v in [r.get("in_tok") for r in batch]], dtype=np.int64),
        np.array([-1 if v is None else v for v in [r.get("out_tok") for r in batch]], dtype=np.int64),
        np.array([c is None or c == "ok" for c in [r.get("check") for r in batch]], dtype=bool),
    ]
    times_lists = [r.get("t") or () for r in batch]
    counts = np.fromiter(map(len, times_lists), dtype=np.int64, count=len(batch))
    total = int(counts.sum())
    times = np.fromiter(chain.from_iterable(times_lists), dtype=f64, count=total)
    tokens = np.ones(total, dtype=np.int64)
    with_counts = [i for i, r in enumerate(batch) if r.get("n") is not None]
    if with_counts:
        starts = np.concatenate([[0], np.cumsum(counts)])
        for i in with_counts:
            given = batch[i]["n"]
            if len(given) != counts[i]:
                raise ValueError(f"record {batch[i].get('i', i)}: t and n differ in length")
            tokens[starts[i]:starts[i + 1]] = given
    return fields, counts, times, tokens


def columns_from_records(records: Iterable[Mapping[str, Any]]) -> Columns:
    """Columns from per-request record dicts as the load generator writes them (docs/metrics.md, "Record"):
    `sched`, `send`, `first_byte`, `end` (s from run start), `status`, `error`, `in_tok`, `out_tok`, `check`
    (None or "ok" = passed, else the failed check), `t` (arrival of each content chunk) and `n` (tokens in each
    chunk; absent when every chunk carried one token)."""
    parts, counts, times, tokens = [], [], [], []
    batch: list[Mapping[str, Any]] = []

    def flush() -> None:
        fields, c, t, n = _column_batch(batch)
        parts.append(fields)
        counts.append(c)
        times.append(t)
        tokens.append(n)
        batch.clear()

    for record in records:
        batch.append(record)
        if len(batch) >= _BATCH:
            flush()
    if batch or not parts:
        flush()
    merged = [np.concatenate([part[k] for part in parts]) for k in range(9)]
    all_counts = np.concatenate(counts)
    return Columns(*merged, chunk_offsets=np.concatenate([[0], np.cumsum(all_counts)]).astype(np.int64),
                   chunk_times=np.concatenate(times), chunk_tokens=np.concatenate(tokens))


def columns_from_jsonl(data: bytes | str) -> Columns:
    """Columns from the load generator's records artifact (one JSON object a line, already decompressed)."""
    text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    decode = json.JSONDecoder().decode

    def records():
        lines = text.splitlines()
        for start in range(0, len(lines), _BATCH):  # one decode call per batch: "[" + lines + "]"
            chunk = [line for line in lines[start:start + _BATCH] if line.strip()]
            if chunk:
                yield from decode("[" + ",".join(chunk) + "]")

    return columns_from_records(records())


_NPZ_FIELDS = ("scheduled", "sent", "first_byte", "end", "status", "error", "input_tokens", "output_tokens",
               "output_ok", "chunk_offsets", "chunk_times", "chunk_tokens")


def columns_to_npz(columns: Columns) -> bytes:
    """The columns as a compressed numpy archive (no pickle): the fast ingest form of a run's records, uploaded
    beside the JSON lines. Error kinds are stored as fixed-width text."""
    import io

    arrays = {name: getattr(columns, name) for name in _NPZ_FIELDS}
    arrays["error"] = np.asarray(columns.error, dtype=str) if len(columns) else np.zeros(0, dtype="<U1")
    buffer = io.BytesIO()
    np.savez_compressed(buffer, format_version=np.array([1]), **arrays)
    return buffer.getvalue()


def columns_from_npz(data: bytes) -> Columns:
    import io

    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        if int(archive["format_version"][0]) != 1:
            raise ValueError("unknown records archive version")
        arrays = {name: archive[name] for name in _NPZ_FIELDS}
    arrays["error"] = arrays["error"].astype(object)
    return Columns(**arrays)


# ---------------------------------------------------------------------------------------------------------------
# Latency of each request, and ITL per token
# ---------------------------------------------------------------------------------------------------------------

def request_latencies(columns: Columns) -> dict[str, np.ndarray]:
    """TTFT, E2E, TPOT and send lag per request (NaN where undefined), and output tokens (known or counted)."""
    first, last = columns.first_token(), columns.last_token()
    owner = np.repeat(np.arange(len(columns)), np.diff(columns.chunk_offsets))
    counted = np.bincount(owner, weights=columns.chunk_tokens, minlength=len(columns))
    tokens = np.where(columns.output_tokens >= 0, columns.output_tokens, counted)
    ttft = first - columns.sent
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(tokens >= 2, (last - first) / (tokens - 1), np.nan)
    return {"ttft": ttft, "e2e": columns.end - columns.sent, "tpot": tpot,
            "send_lag": columns.sent - columns.scheduled, "output_tokens": tokens.astype(np.float64)}


def inter_token_gaps(columns: Columns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-chunk gap per token (g/k), the chunk's token count (its weight) and the owning request's row."""
    times, tokens, offsets = columns.chunk_times, columns.chunk_tokens, columns.chunk_offsets
    if times.size < 2:
        empty = np.zeros(0)
        return empty, empty, np.zeros(0, dtype=np.int64)
    owner = np.repeat(np.arange(len(columns)), np.diff(offsets))
    follows = np.ones(times.size, dtype=bool)
    follows[offsets[:-1][np.diff(offsets) > 0]] = False  # the first content chunk of a request has no gap
    gap = np.diff(times, prepend=np.nan)
    keep = follows & (tokens > 0)
    return gap[keep] / tokens[keep], tokens[keep].astype(np.float64), owner[keep]


# ---------------------------------------------------------------------------------------------------------------
# Acceptance and SLO
# ---------------------------------------------------------------------------------------------------------------

LIMIT_KEYS = {"ttft_max_s": "ttft", "tpot_max_s": "tpot", "itl_max_s": "itl_max", "e2e_max_s": "e2e"}


def acceptance(columns: Columns, limits: Mapping[str, float | None] | None = None,
               latencies: Mapping[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Per request: succeeded, within every latency limit, output check passed, accepted (all three)."""
    latencies = latencies or request_latencies(columns)
    succeeded = columns.succeeded
    within = np.ones(len(columns), dtype=bool)
    for key, value in (limits or {}).items():
        if value is None:
            continue
        if key not in LIMIT_KEYS:
            raise ValueError(f"unknown latency limit {key!r}; use {sorted(LIMIT_KEYS)}")
        metric = LIMIT_KEYS[key]
        if metric == "itl_max":
            gaps, _weights, owner = inter_token_gaps(columns)
            worst = np.zeros(len(columns))
            if gaps.size:
                np.maximum.at(worst, owner, gaps)
            observed = worst
        else:
            observed = latencies[metric]
            if metric == "tpot":  # a single-token answer has no TPOT: nothing to exceed
                observed = np.where(np.isnan(observed) & succeeded, 0.0, observed)
        with np.errstate(invalid="ignore"):
            within &= observed <= float(value)
    output_ok = columns.output_ok & succeeded
    return {"succeeded": succeeded, "within_limits": within & succeeded, "output_ok": output_ok,
            "accepted": succeeded & within & output_ok}


def slo_attainment(accepted: int, total: int, confidence: float = 0.95) -> dict[str, Any]:
    interval = wilson_interval(accepted, total, confidence)
    return {"accepted": int(accepted), "total": int(total),
            "attainment": accepted / total if total else None,
            "ci": list(interval) if interval else None, "confidence": confidence, "ci_method": CI_METHOD}


def capacity_at_slo(points: Iterable[Mapping[str, Any]], target: float, *, key: str = "offered",
                    use_lower_bound: bool = False) -> dict[str, Any]:
    """Highest offered load (`key`) whose attainment ≥ target with every lower tested load passing too.

    `points`: dicts with `key` and `attainment` (and `ci` when `use_lower_bound`: the Wilson lower bound must reach
    the target). Returns the capacity (None when even the lowest load fails), the lowest failing load above it
    (the bracket) and whether the answer is bounded on both sides.
    """
    if not 0 < target <= 1:
        raise ValueError("target attainment must be in (0, 1]")
    ordered = sorted((p for p in points if p.get("attainment") is not None), key=lambda p: float(p[key]))
    capacity, first_failure = None, None
    for point in ordered:
        score = point["ci"][0] if use_lower_bound and point.get("ci") else point["attainment"]
        if score >= target:
            capacity = float(point[key])
        else:
            first_failure = float(point[key])
            break
    return {"capacity": capacity, "first_failing": first_failure, "target": target, "key": key,
            "bracketed": capacity is not None and first_failure is not None,
            "rule": "highest tested load with attainment >= target and every lower tested load passing"}


# ---------------------------------------------------------------------------------------------------------------
# Summary of a run: the stored form
# ---------------------------------------------------------------------------------------------------------------

def histogram(values: Any, weights: Any = None) -> dict[str, Any]:
    """Counts on the shared log-spaced edges (`HISTOGRAM_EDGES_S`: 20 bins per decade), trimmed to the occupied
    range, plus underflow/overflow; with CDF points (the value at each of `CDF_POINTS` evenly spaced quantiles,
    inverted CDF, weighted when weights are given)."""
    data = np.asarray(values, dtype=np.float64).ravel()
    w = None if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    keep = ~np.isnan(data)
    data = data[keep]
    if w is not None:
        w = w[keep]
    low, high = HISTOGRAM_EDGES_S[0], HISTOGRAM_EDGES_S[-1]
    inside = (data >= low) & (data <= high)
    bins = HISTOGRAM_EDGES_S.size - 1
    with np.errstate(divide="ignore"):
        index = np.floor((np.log10(data[inside]) + 5.0) * 20.0).astype(np.int64)
    index = np.clip(index, 0, bins - 1)
    counts = np.bincount(index, weights=None if w is None else w[inside], minlength=bins)
    below = float(w[data < low].sum()) if w is not None else float((data < low).sum())
    above = float(w[data > high].sum()) if w is not None else float((data > high).sum())
    nonzero = np.flatnonzero(counts)
    out: dict[str, Any] = {"edges_s": [], "counts": [], "underflow": below, "overflow": above,
                           "weighted": w is not None, "cdf": {"q": [], "value_s": []}}
    if nonzero.size:
        lo, hi = int(nonzero[0]), int(nonzero[-1]) + 1
        out["edges_s"] = [float(x) for x in HISTOGRAM_EDGES_S[lo:hi + 1]]
        out["counts"] = [float(x) for x in counts[lo:hi]]
    if data.size:
        qs = np.linspace(0.0, 1.0, CDF_POINTS)
        values_at = (np.percentile(data, 100.0 * qs, method="inverted_cdf") if w is None
                     else weighted_quantiles(data, w, qs))
        out["cdf"] = {"q": [float(q) for q in qs], "value_s": [float(v) for v in values_at]}
    return out


def _rate(count: float, seconds: float) -> float | None:
    return count / seconds if seconds > 0 else None


RATE_RULE = ("scheduled - sent <= requests scheduled in the window's last send_lag_p99_limit_s + 1, and "
             "sent - scheduled <= requests scheduled in the send_lag_p99_limit_s before it + 1; scheduled = requests "
             "scheduled inside the window, sent = requests actually sent inside its time span")


def rate_check(columns: Columns, start: float, stop: float,
               send_lag_p99_limit_s: float = DEFAULT_SEND_LAG_P99_LIMIT_S) -> dict[str, Any]:
    """The sent rate against the scheduled rate over the window [start, stop] (both ends included), from all
    records: a request scheduled in the warm-up but sent inside the window was sent inside it.

    scheduled = requests whose scheduled time is inside the window; sent = requests whose actual send time is inside
    it (no send time: not sent); both also per second of the window, `ratio` = sent ÷ scheduled. A client whose
    send lag stays within the limit L can only move across the window's edges the requests scheduled within L of
    them: at most those scheduled in (stop − L, stop] leave (the allowed shortfall) and those scheduled in
    [start − L, start) come in (the allowed excess), plus one request each for the request on the edge. `ok` when
    the difference stays within that (`RATE_RULE`). For a steady schedule the allowed shortfall is scheduled rate × L
    + 1 requests, i.e. L ÷ window seconds + 1 ÷ scheduled as a share (`allowed_shortfall`); counting the schedule
    itself keeps a burst that falls on an edge from failing a client that kept up.
    """
    seconds = stop - start
    limit = max(0.0, float(send_lag_p99_limit_s))
    times = columns.scheduled
    with np.errstate(invalid="ignore"):  # NaN compares False: a request never sent is not sent
        scheduled = int(((times >= start) & (times <= stop)).sum())
        sent = int(((columns.sent >= start) & (columns.sent <= stop)).sum())
        may_leave = int(((times > stop - limit) & (times <= stop) & (times >= start)).sum())
        may_enter = int(((times >= start - limit) & (times < start)).sum())
    shortfall_allowed, excess_allowed = may_leave + 1, may_enter + 1
    return {
        "scheduled": scheduled, "sent": sent,
        "scheduled_per_s": _rate(float(scheduled), seconds), "sent_per_s": _rate(float(sent), seconds),
        "ratio": sent / scheduled if scheduled else None,
        "allowed_shortfall_requests": shortfall_allowed, "allowed_excess_requests": excess_allowed,
        "allowed_shortfall": shortfall_allowed / scheduled if scheduled else None,
        "ok": -excess_allowed <= scheduled - sent <= shortfall_allowed, "rule": RATE_RULE,
        "send_lag_p99_limit_s": limit,
    }


def summarize(columns: Columns, *, window: tuple[float, float] | None = None,
              limits: Mapping[str, float | None] | None = None, slo_target: float | None = None,
              target_output_tokens: float | None = None, send_lag_p99_limit_s: float = DEFAULT_SEND_LAG_P99_LIMIT_S,
              slice_s: float | None = None, max_slices: int = 600, offered_rate: float | None = None,
              with_histograms: bool = True, confidence: float = 0.95) -> dict[str, Any]:
    """The stored summary of one run (or one level of a sweep) from its per-request records.

    `window` = (start, end) in run seconds: the measured requests are those scheduled inside it (warm-up before,
    cool-down after are excluded); rates are per second of the window. Default: the span of scheduled times.

    `throughput.scheduled_per_s` = requests scheduled inside the window ÷ its seconds (the schedule);
    `throughput.sent_per_s` = requests whose actual send time falls inside the window's time span ÷ its seconds
    (what the client achieved; a request never sent is not counted). `rate_check` compares the two (`rate_check`
    above) and a difference beyond the send-lag allowance makes the run invalid.
    """
    total_rows = len(columns)
    if window is None:
        finite = columns.scheduled[~np.isnan(columns.scheduled)]
        window = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
    start, stop = float(window[0]), float(window[1])
    measured_mask = (columns.scheduled >= start) & (columns.scheduled <= stop)
    run = columns.select(measured_mask) if not measured_mask.all() else columns
    seconds = stop - start
    n = len(run)
    latencies = request_latencies(run)
    verdict = acceptance(run, limits, latencies)
    tokens = latencies["output_tokens"]
    ok = verdict["succeeded"]
    errors: dict[str, int] = {}
    if n and (~ok).any():
        kinds, counts = np.unique(run.error[~ok].astype(str), return_counts=True)
        errors = {str(kind): int(count) for kind, count in zip(kinds, counts, strict=True)}
    accepted = verdict["accepted"]
    gaps, gap_weights, gap_owner = inter_token_gaps(run)
    ok_gaps = ok[gap_owner] if gaps.size else np.zeros(0, dtype=bool)
    token_weight = np.where(ok, tokens, 0.0)

    latency: dict[str, Any] = {}
    for metric in ("ttft", "e2e", "tpot"):
        values = np.where(ok, latencies[metric], np.nan)
        latency[metric] = {"per_request": percentiles(values),
                           "token_weighted": percentiles(values, weights=token_weight,
                                                         samples=int((~np.isnan(values) & (token_weight > 0)).sum()))}
    per_request_itl = np.full(n, np.nan)
    if gaps.size:
        sums = np.bincount(gap_owner, weights=gaps * gap_weights, minlength=n)
        weights = np.bincount(gap_owner, weights=gap_weights, minlength=n)
        with np.errstate(invalid="ignore", divide="ignore"):
            per_request_itl = np.where(ok & (weights > 0), sums / weights, np.nan)
    itl_requests = int((~np.isnan(per_request_itl)).sum())
    latency["itl"] = {"per_token": percentiles(gaps[ok_gaps], weights=gap_weights[ok_gaps], samples=itl_requests),
                      "per_request_mean": percentiles(per_request_itl)}

    lag = percentiles(latencies["send_lag"])
    lag_p99 = lag["p99"] if lag["p99"] is not None else lag["max"]
    invalid: list[str] = []
    if lag_p99 is not None and lag_p99 > send_lag_p99_limit_s:
        invalid.append(f"send lag p99 {lag_p99 * 1000:.1f} ms exceeds {send_lag_p99_limit_s * 1000:.1f} ms: "
                       "the load generator fell behind its schedule")
    rates = rate_check(columns, start, stop, send_lag_p99_limit_s)
    if n and not rates["ok"]:
        short = rates["sent"] < rates["scheduled"]
        allowed = rates["allowed_shortfall_requests"] if short else rates["allowed_excess_requests"]
        invalid.append(f"sent {rates['sent']} requests in the window against {rates['scheduled']} scheduled "
                       f"({rates['sent_per_s'] or 0:.1f} of {rates['scheduled_per_s'] or 0:.1f} req/s, "
                       f"{rates['ratio']:.1%}); the send-lag limit allows {allowed} "
                       f"{'fewer' if short else 'more'}: the load generator did not keep its schedule")
    if n == 0:
        invalid.append("no request in the measured window")

    out_tokens_ok = float(tokens[ok].sum()) if n else 0.0
    output_length: dict[str, Any] = {"mean": float(tokens[ok].mean()) if ok.any() else None,
                                     "target": target_output_tokens, "flag": False}
    if target_output_tokens and output_length["mean"] is not None:
        off = output_length["mean"] / float(target_output_tokens) - 1.0
        output_length["off_by"] = off
        output_length["flag"] = abs(off) > OUTPUT_LENGTH_TOLERANCE

    slo = slo_attainment(int(accepted.sum()), n, confidence)
    slo |= {"limits": dict(limits or {}), "target": slo_target,
            "met": None if slo_target is None or slo["attainment"] is None else slo["attainment"] >= slo_target,
            "succeeded": int(ok.sum()), "within_limits": int(verdict["within_limits"].sum()),
            "output_ok": int(verdict["output_ok"].sum())}

    summary: dict[str, Any] = {
        "methods": {"percentile": PERCENTILE_METHOD, "token_weighted": WEIGHTED_METHOD, "ci": CI_METHOD,
                    "min_samples": {_name(q): min_samples(q) for q in PERCENTILES}},
        "window_s": [start, stop], "duration_s": seconds, "offered_rate": offered_rate,
        "counts": {"records": total_rows, "measured": n, "excluded": total_rows - n, "succeeded": int(ok.sum()),
                   "errors": int(n - ok.sum()), "errors_by_kind": errors, "accepted": int(accepted.sum())},
        "throughput": {
            "requests_per_s": _rate(float(ok.sum()), seconds),
            "output_tokens_per_s": _rate(out_tokens_ok, seconds),
            "input_tokens_per_s": _rate(float(run.input_tokens[ok & (run.input_tokens >= 0)].sum()), seconds),
            "scheduled_per_s": rates["scheduled_per_s"],
            "sent_per_s": rates["sent_per_s"],
        },
        "rate_check": rates,
        "goodput": {"accepted_per_s": _rate(float(accepted.sum()), seconds),
                    "accepted_tokens_per_s": _rate(float(tokens[accepted].sum()), seconds)},
        "latency_s": latency,
        "send_lag_s": lag,
        "valid": not invalid, "invalid_reasons": invalid, "send_lag_p99_limit_s": send_lag_p99_limit_s,
        "output_length": output_length,
        "slo": slo,
    }
    if slice_s is None:
        slice_s = max(1.0, seconds / 60.0) if seconds > 0 else 1.0
    summary["slices"] = time_slices(run, latencies, verdict, start, stop, slice_s, max_slices)
    if with_histograms:
        summary["histograms"] = {
            metric: histogram(np.where(ok, latencies[metric], np.nan)) for metric in ("ttft", "e2e", "tpot")
        } | {"itl": histogram(gaps[ok_gaps], gap_weights[ok_gaps]),
             "send_lag": histogram(np.clip(latencies["send_lag"], 0, None))}
    return summary


def time_slices(run: Columns, latencies: Mapping[str, np.ndarray], verdict: Mapping[str, np.ndarray],
                start: float, stop: float, slice_s: float, max_slices: int = 600) -> dict[str, Any]:
    """Per slice of scheduled time: sent, succeeded, errors, accepted, output tokens/s, TTFT and E2E p50/p95."""
    if slice_s <= 0:
        raise ValueError("slice_s must be positive")
    count = max(1, min(max_slices, math.ceil((stop - start) / slice_s) if stop > start else 1))
    slice_s = (stop - start) / count if stop > start else slice_s
    index = np.clip(((run.scheduled - start) / slice_s).astype(np.int64), 0, count - 1) if len(run) else \
        np.zeros(0, dtype=np.int64)
    ok = verdict["succeeded"]
    tokens = np.where(ok, latencies["output_tokens"], 0.0)
    sent = np.bincount(index, minlength=count)
    good = np.bincount(index, weights=ok, minlength=count)
    acc = np.bincount(index, weights=verdict["accepted"], minlength=count)
    tok = np.bincount(index, weights=tokens, minlength=count)
    rows = []
    order = np.argsort(index, kind="stable")
    bounds = np.searchsorted(index[order], np.arange(count + 1))
    for i in range(count):
        members = order[bounds[i]:bounds[i + 1]]
        row = {"start_s": start + i * slice_s, "sent": int(sent[i]), "succeeded": int(good[i]),
               "errors": int(sent[i] - good[i]), "accepted": int(acc[i]),
               "output_tokens_per_s": float(tok[i]) / slice_s}
        for metric in ("ttft", "e2e"):
            values = latencies[metric][members][ok[members]]
            values = values[~np.isnan(values)]
            row[f"{metric}_p50_s"] = float(np.percentile(values, 50)) if values.size >= min_samples(50) else None
            row[f"{metric}_p95_s"] = float(np.percentile(values, 95)) if values.size >= min_samples(95) else None
        rows.append(row)
    return {"slice_s": slice_s, "rows": rows}
