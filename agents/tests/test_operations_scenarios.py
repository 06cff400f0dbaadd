"""Failure scenarios under load and cold start against a real serving process the agent starts itself (the built-in
mock server with an injected start-up delay), declared the way an operator declares it; the refusal of anything the
node did not declare; the accounting and timeline arithmetic; the proxy model's load time."""

import socket

import pytest
from dossier_agent.contract import job_specs
from dossier_agent.jobs import operations as job
from dossier_agent.jobs.allreduce import free_port
from dossier_agent.serving_stack import OperationRefused
from test_acceptance import make_context
from test_serving_stack import mock_config

DELAY_S = 0.5


def declared_context(tmp_path, spec, port, **tables):
    context, events = make_context(tmp_path, spec)
    context.operations = mock_config(port, delay_s=DELAY_S, **tables)
    context.operations["serving"]["base_url"] = f"http://127.0.0.1:{port}"
    return context, events


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_sigkill_under_load_is_detected_recovered_and_every_request_accounted_for(tmp_path):
    port = free_port()
    spec = {"load": {"rate_per_s": 40, "before_s": 1.5, "after_s": 1.5},
            "scenarios": [{"name": "kill_worker", "recovery": "restart"}, {"name": "bad_deploy"}]}
    bad = [*mock_config(port, delay_s=DELAY_S)["serving"]["argv"], "--fault", "status:500", "--fault-every", "1"]
    context, events = declared_context(tmp_path, spec, port, start={}, stop={}, restart={}, kill_worker={},
                                       bad_deploy={"argv": bad})
    result = job.run(spec, context)
    events.close()
    assert not listening(port)  # the agent stopped the process it started

    kill, deploy = result["scenarios"]
    assert kill["event"]["returncode"] == -9 and kill["event"]["signal"] == "SIGKILL"
    assert 0 <= kill["time_to_detection_s"] < 1.0 and kill["recovered"]
    # time to healthy against the time the mock itself logs as ready, both from the kill
    assert kill["logged_ready_s"] > DELAY_S  # the process start counts too, not the injected delay alone
    # A probe in flight when the stack comes up may wait out its own timeout (max(0.2, 10 × the 0.05 s interval) =
    # 0.5 s) before the next one sees it: that bounds the resolution, more so on a loaded machine (0.27 s seen in CI).
    difference = abs(kill["time_to_healthy_s"] - kill["logged_ready_s"])
    assert difference <= max(0.5, 0.1 * kill["logged_ready_s"])
    assert kill["ready_check"]["within"] is True
    assert kill["time_to_first_success_s"] >= kill["logged_ready_s"]
    assert kill["errors_after_event"].get("connect_refused", 0) > 0

    for scenario in (kill, deploy):
        counts = scenario["accounting"]
        assert counts["all_accounted"] and counts["unaccounted"] == 0 and counts["lost_cut_at_end"] == 0
        assert counts["requests"] == (counts["succeeded_first_try"] + counts["retried_then_succeeded"]
                                      + counts["lost"]) == scenario["load"]["scheduled"]
        assert counts["attempts"] == counts["requests"] + counts["retries"] and counts["retries"] > 0
        assert counts["accepted"] == counts["succeeded_first_try"] + counts["retried_then_succeeded"]
        rows = scenario["timeline"]["rows"]
        assert sum(row["sent"] for row in rows) == counts["requests"]
        assert sum(row["retries"] for row in rows) == counts["retries"]
        assert scenario["timeline"]["markers"]["event_start"] > 1.0
        assert scenario["latency_before"]["e2e_s"]["n"] > 0 and scenario["latency_after_recovery"]["e2e_s"]["n"] > 0

    # the bad deploy is detected when it answers badly (HTTP 500: a request or a health check), not by the refused
    # connections of the swap; then it is rolled back by restart
    assert deploy["recovery"] == "restart" and deploy["recovered"]
    assert deploy["detected_by"] == {"source": "health", "status": 500} or (
        deploy["detected_by"]["source"] == "request" and deploy["errors_after_event"].get("http_500", 0) > 0)
    assert deploy["time_to_detection_s"] > deploy["time_to_first_failed_request_s"]
    assert deploy["time_to_detection_s"] > DELAY_S  # the bad version answers only after its start-up delay
    assert deploy["ready_check"]["within"] is True

    inputs = result["figures"]
    assert inputs["requests"] == kill["accounting"]["requests"] + deploy["accounting"]["requests"]
    assert inputs["recovery_time_s_per_incident"]["kill_worker"] == kill["time_to_healthy_s"]
    names = [artifact["name"] for artifact in context.artifacts]
    assert names == ["requests-1-kill_worker.jsonl.gz", "requests-2-bad_deploy.jsonl.gz", "serving_logs.jsonl.gz",
                     "operations.json"]
    assert result["observability"]["log_lines_captured"] > 0
    # the stack's declared metrics endpoint answered and parsed, before and after the scenarios
    before, after = result["observability"]["metrics_before"], result["observability"]["metrics_after"]
    assert before["answers"] and before["parses"] and "mock_requests" in before["families"]
    assert after["answers"] and after["parses"] and after["samples"] >= before["samples"]


def test_cold_start_is_repeated_into_a_distribution(tmp_path):
    spec = {"target": "builtin_mock", "mock": {"startup_delay_s": 0.3}, "cold_start": {"repeats": 2}}
    context, events = make_context(tmp_path, spec)
    result = job.run(spec, context)
    events.close()
    cold = result["cold_start"]
    assert cold["time_to_healthy_s"]["n"] == 2 and cold["time_to_first_token_s"]["n"] == 2
    for run in cold["runs"]:
        assert run["logged_ready_s"] > 0.3 and run["ready_check"]["within"] is True
        assert run["time_to_first_token_s"] >= run["logged_ready_s"]
    assert result["figures"]["cold_start_s_median"] == cold["time_to_healthy_s"]["median"]
    assert result["required_operations"] == ["start", "stop"]


def test_an_undeclared_operation_is_refused_before_anything_runs(tmp_path):
    port = free_port()
    spec = {"scenarios": [{"name": "drain"}], "load": {"before_s": 0.1, "after_s": 0.1}}
    context, events = declared_context(tmp_path, spec, port, start={}, kill_worker={})
    with pytest.raises(OperationRefused, match="drain"):
        job.run(spec, context)
    with pytest.raises(OperationRefused, match="restart"):  # a declared scenario with an undeclared recovery
        job.run({**spec, "scenarios": [{"name": "kill_worker", "recovery": "restart"}]}, context)
    assert not listening(port)  # nothing was started

    context.operations = {}
    with pytest.raises(OperationRefused, match="declares no operations"):
        job.run({"scenarios": ["kill_worker"]}, context)
    with pytest.raises(job_specs.OperationsSpecError, match="scenarios"):  # no place for a command in the spec
        job.run({"scenarios": [{"name": "kill_worker", "command": "rm -rf /"}]}, context)
    with pytest.raises(job_specs.OperationsSpecError, match="name must be one of"):
        job.run({"scenarios": [{"name": "reboot"}]}, context)
    with pytest.raises(job_specs.OperationsSpecError, match="unknown spec key"):
        job.run({"scenarios": ["kill_worker"], "argv": ["sh"]}, context)
    events.close()


def _request(i, outcome, attempts):
    return {"i": i, "sched": float(i), "outcome": outcome, "attempts": [
        {"send": send, "end": end, "first_token": None if error else end - 0.01, "status": None, "error": error,
         "detail": None, "out_tok": None} for send, end, error in attempts]}


def test_accounting_and_timeline_by_hand():
    records = [
        _request(0, "succeeded", [(0.1, 0.2, None)]),
        _request(1, "retried_then_succeeded", [(1.1, 1.15, "connect_refused"), (1.3, 1.4, None)]),
        _request(2, "lost", [(1.5, 1.55, "connect_refused"), (1.7, 1.75, "connect_refused"),
                             (2.1, 2.2, "http_503")]),
        _request(3, "lost", [(2.5, 2.9, "cut_at_end")]),
    ]
    counts = job.accounting(records)
    assert (counts["requests"], counts["succeeded_first_try"], counts["retried_then_succeeded"], counts["lost"]) == (
        4, 1, 1, 2)
    assert counts["attempts"] == 7 and counts["retries"] == 3 and counts["lost_cut_at_end"] == 1
    assert counts["retry_success_rate"] == 0.5 and counts["failed_request_fraction"] == 0.5
    assert counts["retry_rate"] == pytest.approx(3 / 7) and counts["accepted"] == 2
    assert job.error_kinds(records, since=1.6) == {"connect_refused": 1, "cut_at_end": 1, "http_503": 1}

    line = job.timeline(records, [(0.5, True), (1.2, False), (1.6, True)], 0.0, 3.0,
                        {"event_start": 1.0, "healthy": None})
    rows = line["rows"]
    assert [row["sent"] for row in rows] == [1, 2, 1] and [row["retries"] for row in rows] == [0, 2, 1]
    assert [row["succeeded"] for row in rows] == [1, 1, 0]
    assert rows[1]["errors"] == {"connect_refused": 3} and rows[2]["errors"] == {"http_503": 1, "cut_at_end": 1}
    assert rows[0]["e2e_p50_s"] is None and rows[0]["e2e_n"] == 1  # p50 needs 2 samples
    assert rows[1]["health_ok_share"] == 0.5 and rows[2]["health_ok_share"] is None
    assert line["markers"] == {"event_start": 1.0, "healthy": None}

    window = job.latency_window(records, 0.0, 2.0)
    assert window["e2e_s"]["n"] == 2 and window["e2e_s"]["max"] == pytest.approx(0.3)  # retries count in E2E


def test_ready_tolerance_is_the_larger_of_200_ms_and_10_percent():
    tolerance = {"abs_s": 0.2, "rel": 0.1}
    assert job.ready_check(1.19, 1.0, tolerance) == {"within": True, "difference_s": pytest.approx(0.19),
                                                     "tolerance_s": 0.2}
    assert job.ready_check(1.25, 1.0, tolerance)["within"] is False
    assert job.ready_check(5.45, 5.0, tolerance)["within"] is True  # 10 % of 5 s = 0.5 s
    assert job.ready_check(5.6, 5.0, tolerance)["within"] is False
    assert job.ready_check(None, 1.0, tolerance)["within"] is None


@pytest.mark.slow
def test_the_proxy_model_load_time_is_measured_in_a_fresh_process(tmp_path):
    model = {"architecture": "dense", "precision": "bf16", "num_layers": 2, "hidden_size": 64,
             "num_attention_heads": 4, "num_kv_heads": 2, "ffn_size": 128, "vocab_size": 256}
    spec = {"proxy_model": {"model": model, "device": "cpu", "repeats": 1, "prompt_tokens": 8, "timeout_s": 120}}
    context, events = make_context(tmp_path, spec)
    context.workdir.mkdir(parents=True)
    result = job.run(spec, context)
    events.close()
    proxy = result["proxy_model"]
    assert proxy["device"] == "cpu" and proxy["parameters"] > 0
    phases = proxy["runs"][0]["phases"]
    assert all(phases[key] >= 0 for key in ("import_torch_s", "device_init_s", "build_s", "first_token_s"))
    assert phases["total_s"] >= phases["import_torch_s"] + phases["build_s"]
    assert proxy["build_s"]["n"] == 1 and result["scenarios"] == [] and result["stack"] is None
