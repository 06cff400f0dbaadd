"""An unreachable endpoint, 4xx/5xx, malformed SSE, a stalled stream, a hung server, a dropped connection and
timeouts are counted as errors with their kind; the run completes and reports."""

import socket
import time

import pytest
from dossier_agent.contract.load_spec import LoadSpec
from dossier_agent.loadgen.runner import run_load_sync
from dossier_agent.mockserver import MockConfig, MockServer


def spec_for(url, **extra):
    return LoadSpec.from_dict({
        "endpoint": {"url": url, "api": "chat"}, "profile": {"kind": "constant", "rate": 10},
        "duration_s": 0.6, "warmup_s": 0.0, "cooldown_s": 0.0, "min_window_s": 0.0, "output_tokens": 4,
        "prompts": {"synthetic": {"input_tokens_mean": 8}}, "calibrate": False, "timeout_s": 2.0,
        "idle_timeout_s": 0.3, "send_lag_p99_limit_s": 0.5, **extra})


@pytest.mark.parametrize(("fault", "kind"), [
    ("status:404", "http_404"), ("status:503", "http_503"), ("malformed", "malformed_sse"),
    ("stall", "stalled"), ("hang", "timeout"), ("close", "connection_reset"),
])
def test_faults_are_counted_with_their_kind(fault, kind):
    config = MockConfig(fault=fault, fault_every=2, stall_s=5.0, token_delay_s=0.001)
    with MockServer(config) as server:
        began = time.monotonic()
        result = run_load_sync(spec_for(server.url))
        elapsed = time.monotonic() - began
    counts = result.summary["counts"]
    assert counts["measured"] == 6
    assert counts["errors_by_kind"] == {kind: 3}, counts
    assert counts["succeeded"] == 3
    assert result.summary["slo"]["total"] == 6 and result.summary["slo"]["attainment"] == pytest.approx(0.5)
    assert elapsed < 3.0
    failed = [r for r in result.records if r["error"]]
    assert all(r["error"] == kind and r["send"] is not None and r["end"] is not None for r in failed)


def test_unreachable_endpoint_completes_with_connect_errors():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = run_load_sync(spec_for(f"http://127.0.0.1:{port}"))
    assert result.summary["counts"]["errors_by_kind"] == {"connect_refused": 6}
    assert result.summary["slo"]["attainment"] == 0.0
    assert result.meta["prewarmed_connections"] == 0


def test_total_timeout_cuts_a_slow_stream():
    with MockServer(MockConfig(ttft_s=0.01, token_delay_s=0.2)) as server:
        result = run_load_sync(spec_for(server.url, output_tokens=20, timeout_s=0.5, idle_timeout_s=5.0))
    assert result.summary["counts"]["errors_by_kind"] == {"timeout": 6}
    assert all(len(r["t"]) >= 1 for r in result.records)


def test_bad_request_body_is_a_4xx_not_a_crash():
    with MockServer(MockConfig()) as server:
        result = run_load_sync(spec_for(server.url, endpoint={"url": server.url, "api": "chat",
                                                              "extra_body": {"max_tokens": "many"}}))
    assert result.summary["counts"]["errors_by_kind"] == {"http_400": 6}
