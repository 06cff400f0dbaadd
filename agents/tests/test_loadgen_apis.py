"""The other APIs and profiles end to end against the mock: embeddings, a generic HTTP JSON endpoint with its
response check, a dataset with output checks, the closed loop, a trace, and the output-length flag."""

import pytest
from dossier_agent.contract.load_spec import LoadSpec, SpecError
from dossier_agent.loadgen.runner import run_load_sync
from dossier_agent.mockserver import MockConfig, MockServer


@pytest.fixture(scope="module")
def mock():
    with MockServer(MockConfig(natural_tokens=3)) as server:
        yield server


def spec_for(url, **extra):
    return LoadSpec.from_dict({
        "endpoint": {"url": url, "api": "chat"}, "profile": {"kind": "constant", "rate": 20},
        "duration_s": 0.5, "warmup_s": 0.0, "cooldown_s": 0.0, "min_window_s": 0.0, "output_tokens": 6,
        "prompts": {"synthetic": {"input_tokens_mean": 8}}, "calibrate": False, "timeout_s": 5.0,
        "send_lag_p99_limit_s": 0.5, **extra})


def test_embeddings(mock):
    result = run_load_sync(spec_for(mock.url, endpoint={"url": mock.url + "/v1", "api": "embeddings"}))
    summary = result.summary
    assert summary["counts"]["succeeded"] == 10 and summary["slo"]["attainment"] == 1.0
    assert all(r["in_tok"] == 8 and r["t"] == [] for r in result.records)
    assert summary["latency_s"]["e2e"]["per_request"]["p50"] > 0
    assert summary["output_length"]["target"] is None  # no output tokens to hold for embeddings


def test_generic_endpoint_with_template_and_check(mock):
    generic = {"path": "/generic", "body": {"input": "{{prompt}}", "n": "{{index}}"},
               "expect": {"status": 200, "json_path": "echo.input"}}
    result = run_load_sync(spec_for(mock.url, endpoint={"url": mock.url, "api": "generic", "generic": generic}))
    assert result.summary["slo"]["attainment"] == 1.0
    failing = dict(generic, expect={"json_path": "echo.missing"})
    result = run_load_sync(spec_for(mock.url, endpoint={"url": mock.url, "api": "generic", "generic": failing}))
    assert result.summary["counts"]["succeeded"] == 10 and result.summary["slo"]["attainment"] == 0.0
    assert {r["check"] for r in result.records} == {"json_path"}


def test_dataset_output_checks_decide_acceptance(mock):
    lines = ['{"prompt": "say tok", "regex": "tok", "max_tokens": 4}',
             '{"messages": [{"role": "user", "content": "say a number"}], "regex": "\\\\d"}']
    result = run_load_sync(spec_for(mock.url, prompts={"dataset_lines": lines}))
    checks = [r["check"] for r in result.records]
    assert checks == ["ok", "regex"] * 5
    assert result.summary["slo"]["attainment"] == pytest.approx(0.5)
    assert result.summary["counts"]["succeeded"] == 10


def test_bad_dataset_line_stops_before_the_run(mock):
    with pytest.raises(Exception, match="line 2"):
        run_load_sync(spec_for(mock.url, prompts={"dataset_lines": ['{"prompt": "ok"}', "{bad"]}))


def test_output_length_is_flagged_when_the_server_stops_early(mock):
    held = run_load_sync(spec_for(mock.url))
    assert held.summary["output_length"]["mean"] == 6 and not held.summary["output_length"]["flag"]
    loose = run_load_sync(spec_for(mock.url, endpoint={"url": mock.url, "api": "chat", "hold_output_length": False}))
    assert loose.summary["output_length"]["mean"] == 3 and loose.summary["output_length"]["flag"]


def test_closed_loop_and_trace_profiles(mock):
    closed = run_load_sync(spec_for(mock.url, profile={"kind": "concurrency", "concurrency": 4}, max_requests=40))
    assert closed.summary["counts"]["records"] == 40 and closed.meta["closed_loop"]
    trace = run_load_sync(spec_for(mock.url, profile={"kind": "trace", "timestamps": [5.0, 5.1, 5.1, 5.3]}))
    assert [r["sched"] for r in trace.records] == pytest.approx([0.0, 0.1, 0.1, 0.3])


def test_missing_api_key_variable_is_a_spec_error(mock):
    with pytest.raises(SpecError, match="NO_SUCH_KEY_VAR"):
        run_load_sync(spec_for(mock.url, endpoint={"url": mock.url, "api_key_env": "NO_SUCH_KEY_VAR"}))
