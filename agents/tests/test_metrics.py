"""The metrics module: definitions on hand-made records, and properties with hypothesis."""

import math

import numpy as np
import pytest
from dossier_agent.contract import metrics
from hypothesis import given, settings
from hypothesis import strategies as st


def record(i, *, sched, send, chunks, end=None, error=None, out=None, check="ok", status=200, in_tok=10):
    last = chunks[-1][0] if chunks else send
    return {"i": i, "sched": sched, "send": send, "first_byte": send + 0.001 if error is None else None,
            "end": end if end is not None else last + 0.0005, "status": status if error is None else None,
            "error": error, "in_tok": in_tok, "out_tok": out if out is not None else sum(k for _, k in chunks),
            "check": check, "t": [t for t, _ in chunks], "n": [k for _, k in chunks]}


def test_min_samples_rule():
    assert metrics.min_samples(50) == 2
    assert metrics.min_samples(90) == 10
    assert metrics.min_samples(95) == 20
    assert metrics.min_samples(99) == 100
    with pytest.raises(ValueError):
        metrics.min_samples(100)


def test_no_p99_from_fewer_than_100_samples():
    out = metrics.percentiles(np.arange(99.0))
    assert out["p99"] is None and out["p95"] is not None and out["n"] == 99
    out = metrics.percentiles(np.arange(100.0))
    assert out["p99"] == pytest.approx(np.percentile(np.arange(100.0), 99))
    assert "type 7" in out["method"]


def test_nan_values_are_dropped_and_empty_gives_none():
    out = metrics.percentiles([np.nan, 1.0, 3.0])
    assert out["n"] == 2 and out["p50"] == 2.0
    empty = metrics.percentiles([])
    assert empty["p50"] is None and empty["mean"] is None


def test_token_weighted_percentile_counts_long_requests_more():
    values = [1.0, 10.0]
    weights = [1, 99]
    out = metrics.percentiles(values, weights=weights, samples=100)
    assert out["p50"] == 10.0
    plain = metrics.percentiles(values)
    assert plain["p50"] == 5.5
    assert "weighted" in out["method"]


def test_wilson_interval_known_value():
    low, high = metrics.wilson_interval(95, 100)
    assert low == pytest.approx(0.8883, abs=1e-3)
    assert high == pytest.approx(0.9785, abs=1e-3)
    assert metrics.wilson_interval(0, 0) is None
    low, high = metrics.wilson_interval(10, 10)
    assert high == 1.0 and 0.69 < low < 0.73


def test_normal_quantile():
    assert metrics._normal_quantile(0.975) == pytest.approx(1.959964, abs=1e-6)
    assert metrics._normal_quantile(0.5) == pytest.approx(0.0, abs=1e-9)
    assert metrics._normal_quantile(0.001) == pytest.approx(-3.090232, abs=1e-5)


def test_ttft_e2e_tpot_itl_definitions():
    # Sent at 1.0; role chunk is not recorded by the client; content chunks at 1.05 (1 token), 1.07 (2 tokens),
    # 1.10 (1 token): TTFT 50 ms, TPOT (1.10 − 1.05)/(4 − 1), ITL gaps per token: 10 ms, 10 ms, 30 ms.
    rec = record(0, sched=0.999, send=1.0, chunks=[(1.05, 1), (1.07, 2), (1.10, 1)], end=1.101)
    cols = metrics.columns_from_records([rec])
    lat = metrics.request_latencies(cols)
    assert lat["ttft"][0] == pytest.approx(0.05)
    assert lat["e2e"][0] == pytest.approx(0.101)
    assert lat["tpot"][0] == pytest.approx(0.05 / 3)
    assert lat["send_lag"][0] == pytest.approx(0.001)
    gaps, weights, owner = metrics.inter_token_gaps(cols)
    assert np.allclose(gaps, [0.01, 0.03]) and list(weights) == [2.0, 1.0] and list(owner) == [0, 0]


def test_itl_gaps_do_not_cross_requests_and_skip_requests_without_chunks():
    recs = [record(0, sched=0, send=0, chunks=[(0.1, 1), (0.2, 1)]),
            record(1, sched=0.1, send=0.1, chunks=[], error="connect_refused"),
            record(2, sched=0.2, send=0.2, chunks=[(0.25, 1)]),
            record(3, sched=0.3, send=0.3, chunks=[(0.5, 1), (0.55, 1)])]
    cols = metrics.columns_from_records(recs)
    gaps, _, owner = metrics.inter_token_gaps(cols)
    assert np.allclose(gaps, [0.1, 0.05]) and list(owner) == [0, 3]
    first = cols.first_token()
    assert np.isnan(first[1]) and first[2] == pytest.approx(0.25)


def test_acceptance_counts_errors_in_denominator_and_every_limit():
    recs = [
        record(0, sched=0, send=0, chunks=[(0.05, 1), (0.06, 1)]),                     # accepted
        record(1, sched=0, send=0, chunks=[(0.30, 1), (0.31, 1)]),                     # TTFT too slow
        record(2, sched=0, send=0, chunks=[(0.05, 1), (0.06, 1)], check="regex"),      # output check failed
        record(3, sched=0, send=0, chunks=[], error="timeout"),                        # error
        record(4, sched=0, send=0, chunks=[(0.05, 1), (0.50, 1)]),                     # gap too long
    ]
    cols = metrics.columns_from_records(recs)
    verdict = metrics.acceptance(cols, {"ttft_max_s": 0.2, "itl_max_s": 0.1})
    assert list(verdict["accepted"]) == [True, False, False, False, False]
    assert list(verdict["succeeded"]) == [True, True, True, False, True]
    summary = metrics.summarize(cols, window=(0, 1), limits={"ttft_max_s": 0.2, "itl_max_s": 0.1}, slo_target=0.5)
    assert summary["slo"]["attainment"] == pytest.approx(0.2)
    assert summary["slo"]["total"] == 5 and summary["slo"]["met"] is False
    assert summary["counts"]["errors_by_kind"] == {"timeout": 1}
    with pytest.raises(ValueError):
        metrics.acceptance(cols, {"latency_max": 1})


def test_summary_window_rates_goodput_and_output_length_flag():
    recs = [record(i, sched=i * 0.1, send=i * 0.1 + 0.001, chunks=[(i * 0.1 + 0.05 + 0.01 * k, 1) for k in range(8)])
            for i in range(100)]
    cols = metrics.columns_from_records(recs)
    summary = metrics.summarize(cols, window=(1.0, 9.0), limits={"e2e_max_s": 1.0}, target_output_tokens=10)
    assert summary["counts"]["measured"] == 81 and summary["counts"]["excluded"] == 19
    assert summary["throughput"]["requests_per_s"] == pytest.approx(81 / 8.0)
    assert summary["goodput"]["accepted_tokens_per_s"] == pytest.approx(81 * 8 / 8.0)
    assert summary["output_length"]["flag"] is True and summary["output_length"]["off_by"] == pytest.approx(-0.2)
    assert summary["valid"] is True
    assert summary["latency_s"]["ttft"]["per_request"]["p99"] is None  # 81 samples: no p99
    assert summary["latency_s"]["itl"]["per_token"]["p50"] == pytest.approx(0.01)
    hist = summary["histograms"]["ttft"]
    assert sum(hist["counts"]) == 81 and len(hist["edges_s"]) == len(hist["counts"]) + 1
    assert hist["cdf"]["q"][0] == 0.0 and hist["cdf"]["q"][-1] == 1.0
    rows = summary["slices"]["rows"]
    assert sum(row["sent"] for row in rows) == 81
    # 81 scheduled in [1, 9]; request 90 (scheduled at 9.0) went out at 9.001, after the window: 80 sent in it.
    assert summary["throughput"]["scheduled_per_s"] == pytest.approx(81 / 8.0)
    assert summary["throughput"]["sent_per_s"] == pytest.approx(80 / 8.0)
    assert summary["rate_check"]["ok"] is True and summary["rate_check"]["allowed_shortfall_requests"] == 2


def test_send_lag_over_limit_marks_the_run_invalid():
    recs = [record(i, sched=i * 0.01, send=i * 0.01 + (0.05 if i % 10 == 0 else 0.0001), chunks=[(i * 0.01 + 0.1, 1)])
            for i in range(200)]
    summary = metrics.summarize(metrics.columns_from_records(recs), window=(0, 2), send_lag_p99_limit_s=0.01)
    assert summary["valid"] is False and "send lag" in summary["invalid_reasons"][0]
    ok = metrics.summarize(metrics.columns_from_records(recs), window=(0, 2), send_lag_p99_limit_s=0.1)
    assert ok["valid"] is True


def steady(rate, seconds, send_of=lambda i, sched: sched + 0.001):
    """Records of a constant-rate schedule; request i scheduled at i / rate and sent at send_of(i, sched) (None: never
    sent, recorded as a refused connection), one content chunk 20 ms after its send."""
    out = []
    for i in range(round(rate * seconds)):
        sched = i / rate
        send = send_of(i, sched)
        if send is None:
            out.append({"i": i, "sched": sched, "send": None, "end": sched, "error": "connect_refused", "t": []})
        else:
            out.append(record(i, sched=sched, send=send, chunks=[(send + 0.02, 1)]))
    return out


def test_sent_rate_is_what_the_client_sent_and_a_run_that_fell_behind_is_invalid():
    # 4,000 req/s scheduled for 10 s from a client that can send 2,800/s: request i leaves at i / 2,800, ever later.
    sends = {}

    def behind(i, sched):
        sends[i] = max(sched, i / 2800)
        return sends[i]

    summary = metrics.summarize(metrics.columns_from_records(steady(4000, 10, behind)), window=(1.0, 9.0),
                                with_histograms=False)
    sent_in_window = sum(1 for t in sends.values() if 1.0 <= t <= 9.0)
    throughput, check = summary["throughput"], summary["rate_check"]
    assert throughput["scheduled_per_s"] == pytest.approx(4000, rel=1e-3)
    assert throughput["sent_per_s"] == pytest.approx(sent_in_window / 8.0)
    assert throughput["sent_per_s"] == pytest.approx(2800, rel=1e-3)
    assert check["scheduled"] == 32001 and check["sent"] == sent_in_window
    assert check["ratio"] == pytest.approx(0.70, abs=1e-3)
    assert check["allowed_shortfall_requests"] == 41  # 4,000 req/s × 10 ms + 1
    assert check["allowed_shortfall"] == pytest.approx(41 / 32001)  # ≈ 10 ms ÷ 8 s + 1 ÷ 32,001
    assert check["allowed_shortfall"] == pytest.approx(10e-3 / 8.0 + 1 / 32001, rel=1e-4)
    assert check["ok"] is False
    assert summary["send_lag_s"]["max"] > 3.0  # seconds late by the end
    assert summary["valid"] is False
    rate_reasons = [r for r in summary["invalid_reasons"] if "did not keep its schedule" in r]
    assert len(rate_reasons) == 1 and "22401" in rate_reasons[0] and "32001" in rate_reasons[0]


def test_a_stall_at_the_window_end_fails_the_rate_rule_even_when_the_send_lag_p99_passes():
    # 1 % of the window's requests (the last 300 of 32,001) wait until 10.5 s: the p99 of the lag stays at 1 ms,
    # but the window was offered 300 requests fewer than scheduled, beyond the 41 the lag limit lets slip.
    summary = metrics.summarize(metrics.columns_from_records(
        steady(4000, 10, lambda i, sched: 10.5 if 35701 <= i <= 36000 else sched + 0.001)), window=(1.0, 9.0),
        with_histograms=False)
    assert summary["send_lag_s"]["p99"] == pytest.approx(0.001)
    # 300 left the window, 4 scheduled in the warm-up's last millisecond came in: 296 fewer.
    assert summary["rate_check"]["scheduled"] - summary["rate_check"]["sent"] == 296
    assert summary["valid"] is False
    assert len(summary["invalid_reasons"]) == 1 and "did not keep its schedule" in summary["invalid_reasons"][0]


def test_requests_never_sent_count_as_not_sent():
    summary = metrics.summarize(metrics.columns_from_records(
        steady(1000, 4, lambda i, sched: None if i % 3 == 0 else sched + 0.001)), window=(0.5, 3.5),
        with_histograms=False)
    assert summary["throughput"]["scheduled_per_s"] == pytest.approx(3001 / 3.0)
    assert summary["throughput"]["sent_per_s"] == pytest.approx(2000 / 3.0, rel=1e-3)
    assert summary["send_lag_s"]["p99"] == pytest.approx(0.001)  # the lag knows nothing of unsent requests
    assert summary["valid"] is False and "did not keep its schedule" in summary["invalid_reasons"][0]


def test_a_client_that_kept_its_schedule_stays_valid_with_both_rates_equal():
    rng = np.random.default_rng(7)
    jitter = rng.uniform(0.0002, 0.008, 40000)
    summary = metrics.summarize(metrics.columns_from_records(
        steady(4000, 10, lambda i, sched: sched + jitter[i])), window=(1.0, 9.0), with_histograms=False)
    assert summary["valid"] is True and summary["invalid_reasons"] == []
    check = summary["rate_check"]
    assert check["ok"] is True and abs(check["sent"] - check["scheduled"]) <= 40
    assert summary["throughput"]["sent_per_s"] == pytest.approx(summary["throughput"]["scheduled_per_s"], rel=2e-3)


def test_a_burst_on_the_window_edge_does_not_fail_a_client_that_kept_up():
    # 500 requests scheduled at the window's last instant, each sent 2 ms later: after the window, but within the
    # lag limit, so the allowance (counted from the schedule, not the mean rate) covers them.
    recs = [record(i, sched=i * 0.01, send=i * 0.01 + 0.001, chunks=[(i * 0.01 + 0.02, 1)]) for i in range(400)]
    recs += [record(400 + k, sched=2.0, send=2.002, chunks=[(2.05, 1)]) for k in range(500)]
    summary = metrics.summarize(metrics.columns_from_records(recs), window=(1.0, 2.0), with_histograms=False)
    check = summary["rate_check"]
    assert check["scheduled"] - check["sent"] == 501 and check["allowed_shortfall_requests"] == 502
    assert check["ok"] is True and summary["valid"] is True


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 10, allow_nan=False), st.floats(0, 0.99)), min_size=1, max_size=200),
       st.floats(0, 9), st.floats(0.01, 5), st.sampled_from([0.001, 0.01, 0.1, 1.0]))
def test_lags_within_the_limit_never_fail_the_rate_rule(rows, start, length, limit):
    recs = [record(i, sched=sched, send=sched + share * limit, chunks=[]) for i, (sched, share) in enumerate(rows)]
    check = metrics.rate_check(metrics.columns_from_records(recs), start, start + length, limit)
    assert check["ok"] is True


def test_capacity_at_slo_rule():
    points = [{"offered": 10, "attainment": 1.0}, {"offered": 20, "attainment": 0.995},
              {"offered": 40, "attainment": 0.5}, {"offered": 30, "attainment": 0.99}, {"offered": 50, "attainment": 1}]
    out = metrics.capacity_at_slo(points, 0.99)
    assert out["capacity"] == 30 and out["first_failing"] == 40 and out["bracketed"]
    assert metrics.capacity_at_slo([{"offered": 5, "attainment": 0.1}], 0.9)["capacity"] is None
    lower = metrics.capacity_at_slo([{"offered": 10, "attainment": 1.0, "ci": [0.9, 1.0]}], 0.95,
                                    use_lower_bound=True)
    assert lower["capacity"] is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1e4, allow_nan=False), min_size=1, max_size=300))
def test_percentiles_are_monotone_and_within_range(values):
    out = metrics.percentiles(values)
    found = [out[k] for k in ("p50", "p90", "p95", "p99") if out[k] is not None]
    assert found == sorted(found)
    for value in found:
        assert min(values) - 1e-9 <= value <= max(values) + 1e-9
    if len(values) < 100:
        assert out["p99"] is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(min_value=0, max_value=100, allow_nan=False), st.integers(1, 50)),
                min_size=1, max_size=200))
def test_weighted_percentiles_are_monotone(pairs):
    values, weights = zip(*pairs, strict=True)
    out = metrics.percentiles(values, weights=weights)
    found = [out[k] for k in ("p50", "p90", "p95", "p99") if out[k] is not None]
    assert found == sorted(found)
    assert all(v in values for v in found)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 10_000))
def test_wilson_interval_contains_the_estimate_within_unit_interval(successes, failures):
    n = successes + failures
    if n == 0:
        assert metrics.wilson_interval(0, 0) is None
        return
    low, high = metrics.wilson_interval(successes, n)
    assert 0.0 <= low <= successes / n <= high <= 1.0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans(), st.floats(0.001, 2.0)), min_size=1, max_size=120))
def test_attainment_is_a_fraction(rows):
    recs = []
    for i, (fails, bad_output, ttft) in enumerate(rows):
        if fails:
            recs.append(record(i, sched=i * 0.01, send=i * 0.01, chunks=[], error="http_500"))
        else:
            recs.append(record(i, sched=i * 0.01, send=i * 0.01, chunks=[(i * 0.01 + ttft, 2)],
                               check="regex" if bad_output else "ok"))
    summary = metrics.summarize(metrics.columns_from_records(recs), window=(0, len(rows) * 0.01),
                                limits={"ttft_max_s": 1.0}, with_histograms=False)
    attainment = summary["slo"]["attainment"]
    assert 0.0 <= attainment <= 1.0
    expected = sum(1 for fails, bad, ttft in rows if not fails and not bad and ttft <= 1.0) / len(rows)
    assert math.isclose(attainment, expected)
    low, high = summary["slo"]["ci"]
    assert low <= attainment <= high


def test_jsonl_artifact_reads_back_the_same_columns():
    import json

    recs = [record(0, sched=0, send=0.001, chunks=[(0.05, 1), (0.06, 3)]),
            record(1, sched=0.1, send=0.1, chunks=[], error="http_503"),
            {"i": 2, "sched": 0.2, "send": 0.2, "end": 0.3, "status": 200, "t": [0.25, 0.26]}]
    text = "\n".join(json.dumps(r) for r in recs) + "\n"
    a, b = metrics.columns_from_records(recs), metrics.columns_from_jsonl(text.encode())
    for name in ("scheduled", "sent", "end", "status", "input_tokens", "output_tokens", "output_ok",
                 "chunk_offsets", "chunk_times", "chunk_tokens"):
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=name not in (
            "status", "input_tokens", "output_tokens", "output_ok", "chunk_offsets", "chunk_tokens")), name
    assert list(b.chunk_tokens) == [1, 3, 1, 1] and list(b.error) == ["", "http_503", ""]
    assert b.output_tokens[2] == -1 and metrics.request_latencies(b)["output_tokens"][2] == 2
    with pytest.raises(ValueError, match="differ in length"):
        metrics.columns_from_records([{"t": [1.0, 2.0], "n": [1]}])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(min_value=0, max_value=10, allow_nan=False), st.integers(1, 3)),
                min_size=1, max_size=80), st.lists(st.floats(0, 1), min_size=1, max_size=5))
def test_weighted_quantiles_fast_path_equals_the_sorted_path(pairs, fractions):
    data = np.array([v for v, _ in pairs])
    weights = np.array([float(k) for _, k in pairs])
    fast = metrics.weighted_quantiles(data, weights, fractions)
    order = np.argsort(data, kind="stable")
    cumulative = np.cumsum(weights[order])
    index = np.searchsorted(cumulative, np.asarray(fractions) * cumulative[-1], side="left")
    slow = data[order][np.minimum(index, data.size - 1)]
    assert np.allclose(fast, slow)


def test_npz_archive_round_trip():
    recs = [record(0, sched=0, send=0.001, chunks=[(0.05, 1), (0.06, 3)]),
            record(1, sched=0.1, send=0.1, chunks=[], error="http_503")]
    columns = metrics.columns_from_records(recs)
    again = metrics.columns_from_npz(metrics.columns_to_npz(columns))
    assert list(again.error) == ["", "http_503"] and again.error.dtype == object
    assert np.array_equal(again.chunk_tokens, [1, 3]) and np.array_equal(again.chunk_offsets, [0, 2, 2])
    one = metrics.summarize(columns, window=(0, 1), with_histograms=False)
    two = metrics.summarize(again, window=(0, 1), with_histograms=False)
    assert one == two
    empty = metrics.columns_from_records([])
    assert len(metrics.columns_from_npz(metrics.columns_to_npz(empty))) == 0
