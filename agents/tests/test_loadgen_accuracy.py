"""Against the mock with injected delays (TTFT 50 ms, 10 ms per token, no jitter), run serially at a low rate: the
measured TTFT and ITL medians are within max(2 ms, 5 %) of the injected values, and the report shows send lag."""

import pytest
from dossier_agent.contract.load_spec import LoadSpec
from dossier_agent.loadgen.runner import run_load_sync
from dossier_agent.loadgen.selfcheck import MockProcess

TTFT_S, TOKEN_S, TOKENS = 0.050, 0.010, 12


def tolerance(value):
    return max(0.002, 0.05 * value)


@pytest.fixture(scope="module")
def delayed_mock():
    with MockProcess(f"--ttft-ms={TTFT_S * 1000}", f"--token-ms={TOKEN_S * 1000}") as mock:
        yield mock


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_ttft_and_itl_medians_match_the_injected_delays(delayed_mock, api):
    # One request every 0.25 s, each lasting 0.05 + 11 × 0.01 = 0.16 s: never two at once.
    spec = LoadSpec.from_dict({
        "endpoint": {"url": delayed_mock.url, "api": api}, "profile": {"kind": "constant", "rate": 4},
        "duration_s": 3.0, "warmup_s": 0.25, "cooldown_s": 0.0, "min_window_s": 1.0, "output_tokens": TOKENS,
        "prompts": {"synthetic": {"input_tokens_mean": 24}}, "send_lag_p99_limit_s": 0.05,
    })
    result = run_load_sync(spec)
    summary = result.summary
    assert summary["counts"]["errors"] == 0 and summary["counts"]["measured"] == 11
    ttft = summary["latency_s"]["ttft"]["per_request"]["p50"]
    itl = summary["latency_s"]["itl"]["per_token"]["p50"]
    assert abs(ttft - TTFT_S) <= tolerance(TTFT_S), ttft
    assert abs(itl - TOKEN_S) <= tolerance(TOKEN_S), itl
    tpot = summary["latency_s"]["tpot"]["per_request"]["p50"]
    assert abs(tpot - TOKEN_S) <= tolerance(TOKEN_S)
    e2e = summary["latency_s"]["e2e"]["per_request"]["p50"]
    assert abs(e2e - (TTFT_S + (TOKENS - 1) * TOKEN_S)) <= 0.01
    lag = summary["send_lag_s"]
    assert lag["n"] == 11 and lag["p50"] is not None and 0 <= lag["min"] <= lag["max"] < 0.05
    assert summary["valid"] and not summary["output_length"]["flag"]
    assert summary["output_length"]["mean"] == TOKENS
    assert result.meta["prompt_calibration"]["calibrated"] is True
    # every record carries its schedule, send, first byte, token times, end, status, tokens and request id
    record = result.records[5]
    assert record["sched"] <= record["send"] <= record["first_byte"] <= record["t"][0] <= record["end"]
    assert len(record["t"]) == TOKENS and "n" not in record and record["status"] == 200 and record["rid"].endswith("-5")
    assert record["in_tok"] == 24 and record["out_tok"] == TOKENS and record["error"] is None
