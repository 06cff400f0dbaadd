"""Declared node operations: configuration, refusal of anything undeclared, execution with timeouts and captured
logs, the process the agent starts itself (the built-in mock server), systemd/container defaults, metrics parsing."""

import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from dossier_agent import serving_stack
from dossier_agent.serving_stack import OperationRefused, OperationsConfigError, ServingStack, parse_operations

from conftest import AGENTS_ROOT


def mock_config(port: int, delay_s: float = 0.3, **operations_tables):
    argv = [sys.executable, "-m", "dossier_agent.mockserver", "--port", str(port), "--startup-delay-s", str(delay_s)]
    return {
        "serving": {"type": "process", "argv": argv, "health_url": f"http://127.0.0.1:{port}/health",
                    "metrics_url": f"http://127.0.0.1:{port}/metrics", "ready_pattern": "MOCK_READY",
                    "env": {"PYTHONPATH": str(AGENTS_ROOT)}, "stop_timeout_s": 5},
        **operations_tables,
    }


# -- configuration ----------------------------------------------------------------------------------------------
def test_the_declared_operations_are_the_named_tables():
    raw = mock_config(8100, start={}, kill_worker={}, restart={"timeout_s": 20},
                      drain={"command": "curl -fsS -X POST 'http://127.0.0.1:8100/drain'"})
    spec = parse_operations(raw)
    assert spec.declared == ["drain", "kill_worker", "restart", "start"]
    assert serving_stack.declared_operations(raw) == spec.declared  # `serving` is not an operation
    assert spec.operations["drain"].argv == ("curl", "-fsS", "-X", "POST", "http://127.0.0.1:8100/drain")
    assert spec.operations["restart"].timeout_s == 20 and spec.operations["start"].timeout_s == 600
    assert serving_stack.declared_operations({}) == []


@pytest.mark.parametrize(("raw", "message"), [
    ({"serving": {"type": "process", "argv": ["x"], "health_url": "http://h/"}, "reboot": {}}, "unknown operation"),
    ({"start": {}}, r"\[operations.serving\]"),
    ({"serving": {"type": "process", "health_url": "http://h/"}}, "needs argv"),
    ({"serving": {"type": "systemd", "health_url": "http://h/"}}, "needs unit"),
    ({"serving": {"type": "container", "health_url": "http://h/"}}, "needs container"),
    ({"serving": {"type": "ssh", "health_url": "http://h/"}}, "type must be one of"),
    ({"serving": {"type": "systemd", "unit": "v", "health_url": "ftp://h/"}}, "health_url"),
    ({"serving": {"type": "systemd", "unit": "v", "health_url": "http://h/"}, "drain": {}}, "no default drain"),
    ({"serving": {"type": "process", "argv": ["x"], "health_url": "http://h/"}, "bad_deploy": {}},
     "no default bad_deploy"),
    ({"serving": {"type": "command", "health_url": "http://h/"}, "start": {}}, "no default start"),
    ({"serving": {"type": "systemd", "unit": "v", "health_url": "http://h/"}, "stop": {"shell": "x"}},
     "unknown key"),
    ({"serving": {"type": "systemd", "unit": "v", "health_url": "http://h/"}, "stop": {"argv": ["a"],
                                                                                      "command": "b"}}, "not both"),
    ({"serving": {"type": "systemd", "unit": "v", "health_url": "http://h/"}, "stop": {"timeout_s": 0}},
     "timeout_s"),
])
def test_bad_operation_tables_are_refused_with_the_key(raw, message):
    with pytest.raises(OperationsConfigError, match=message):
        parse_operations(raw)


# -- refusal ----------------------------------------------------------------------------------------------------
def test_anything_undeclared_is_refused(tmp_path):
    marker = tmp_path / "ran"
    stack = ServingStack(parse_operations({
        "serving": {"type": "command", "health_url": "http://127.0.0.1:9/health"},
        "stop": {"argv": ["touch", str(marker)]},
    }))
    with pytest.raises(OperationRefused, match="not declared"):
        stack.run("drain")
    with pytest.raises(OperationRefused, match="not an operation"):
        stack.run("rm -rf /")
    with pytest.raises(OperationRefused, match="kill_worker, restart"):
        stack.require(["stop", "restart", "kill_worker"])
    assert not marker.exists() and stack.history == []
    stack.require(["stop"])
    assert stack.run("stop")["ok"] and marker.exists()
    with pytest.raises(OperationRefused, match="declares no operations"):
        ServingStack.from_config({})


# -- execution --------------------------------------------------------------------------------------------------
def test_commands_run_with_a_timeout_and_their_output_is_kept():
    stack = ServingStack(parse_operations({
        "serving": {"type": "command", "health_url": "http://127.0.0.1:9/health"},
        "drain": {"argv": [sys.executable, "-c", "import sys; print('draining'); print('oops', file=sys.stderr)"]},
        "stop": {"argv": [sys.executable, "-c", "import time; print('stopping', flush=True); time.sleep(30)"],
                 "timeout_s": 0.5},
    }))
    began = time.time()
    drained = stack.run("drain")
    assert drained["ok"] and drained["returncode"] == 0 and "draining" in drained["output_tail"]
    assert "oops" in drained["output_tail"]
    stopped = stack.run("stop")
    assert stopped["timed_out"] and not stopped["ok"] and stopped["duration_s"] < 5
    assert "stopping" in stopped["output_tail"]
    lines = [entry["line"] for entry in stack.logs_between(began, time.time())]
    assert "draining" in lines and "operation stop begins" in lines and "stopping" in lines
    assert [record["operation"] for record in stack.history] == ["drain", "stop"]


def test_systemd_and_container_defaults_call_their_tools(tmp_path):
    calls = tmp_path / "calls"
    for tool in ("systemctl", "docker"):
        script = tmp_path / tool
        script.write_text(f"#!/bin/sh\necho {tool} \"$@\" >> {calls}\necho done\n")
        script.chmod(0o755)
    environ = {"PATH": str(tmp_path)}
    systemd = ServingStack(parse_operations({
        "serving": {"type": "systemd", "unit": "vllm.service", "health_url": "http://127.0.0.1:9/"},
        "restart": {}, "kill_worker": {}}), environ=environ)
    container = ServingStack(parse_operations({
        "serving": {"type": "container", "container": "vllm", "health_url": "http://127.0.0.1:9/"},
        "stop": {}, "kill_worker": {}}), environ=environ)
    assert systemd.run("restart")["ok"] and systemd.run("kill_worker")["ok"]
    assert container.run("stop")["ok"] and container.run("kill_worker")["ok"]
    assert calls.read_text().splitlines() == [
        "systemctl restart vllm.service", "systemctl kill -s SIGKILL vllm.service",
        "docker stop vllm", "docker kill -s KILL vllm"]


def test_the_process_the_agent_starts_itself_is_killed_and_restarted():
    from dossier_agent.jobs.allreduce import free_port

    port = free_port()
    stack = ServingStack.from_config(mock_config(port, start={}, kill_worker={}, restart={}, stop={}))
    try:
        started = stack.run("start")
        assert started["spawned"] and stack.running()
        healthy = stack.wait_healthy(20)
        assert healthy["healthy"]
        ready = stack.ready_events[-1]
        assert ready["pid"] == started["pid"] and ready["logged_ready_unix"] is not None
        assert started["spawned_unix"] + 0.3 <= ready["logged_ready_unix"] <= healthy["healthy_unix"]

        killed = stack.run("kill_worker")
        assert killed["returncode"] == -9 and killed["signal"] == "SIGKILL" and not stack.running()
        assert not stack.check_health()["ok"]

        restarted = stack.run("restart")
        assert restarted["stop"] == {"was_running": False} and restarted["spawned"]
        assert stack.wait_healthy(20)["healthy"] and len(stack.ready_events) == 2
        stopped = stack.run("stop")
        assert stopped["was_running"] and not stopped["forced"]
    finally:
        stack.close()
    assert not stack.running()


# -- metrics ----------------------------------------------------------------------------------------------------
METRICS = """# HELP vllm:num_requests_running Number of requests running.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 3.0
vllm:e2e_request_latency_seconds_bucket{le="0.5",model_name="m"} 10
vllm:e2e_request_latency_seconds_count{model_name="m"} 12
process_start_time_seconds 1.7e9
"""


def test_prometheus_text_is_parsed():
    parsed = serving_stack.parse_prometheus(METRICS)
    assert parsed["parses"] and parsed["samples"] == 4
    assert parsed["families"] == ["process_start_time_seconds", "vllm:e2e_request_latency_seconds",
                                  "vllm:num_requests_running"]
    broken = serving_stack.parse_prometheus("up 1\nthis is not a metric\nx{a=\"b\"} NaNx\n")
    assert not broken["parses"] and len(broken["errors"]) == 2


def test_the_declared_metrics_endpoint_is_checked():
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = METRICS.encode()
            self.send_response(200 if self.path == "/metrics" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        stack = ServingStack(parse_operations({"serving": {
            "type": "command", "health_url": f"http://127.0.0.1:{port}/metrics",
            "metrics_url": f"http://127.0.0.1:{port}/metrics"}}))
        metrics = stack.check_metrics()
        assert metrics["answers"] and metrics["parses"] and metrics["samples"] == 4
        assert stack.check_health()["ok"]
        missing = ServingStack(parse_operations({"serving": {
            "type": "command", "health_url": f"http://127.0.0.1:{port}/health",
            "metrics_url": f"http://127.0.0.1:{port}/nothing"}}))
        assert missing.check_metrics()["answers"] is False and missing.check_health()["status"] == 404
    finally:
        server.shutdown()


def test_the_ready_time_of_a_systemd_or_container_stack_comes_from_its_log_timestamps(tmp_path):
    now = time.time()
    (tmp_path / "journalctl").write_text(
        "#!/bin/sh\n"
        f"echo '{now - 3:.6f} node vllm[12]: loading weights'\n"
        f"echo '{now - 1:.6f} node vllm[12]: Application startup complete.'\n")
    (tmp_path / "docker").write_text(
        "#!/bin/sh\necho '2030-01-02T03:04:05.123456789Z INFO Application startup complete.'\n")
    for tool in ("journalctl", "docker"):
        (tmp_path / tool).chmod(0o755)
    environ = {"PATH": str(tmp_path)}
    systemd = ServingStack(parse_operations({"serving": {
        "type": "systemd", "unit": "vllm.service", "health_url": "http://127.0.0.1:9/",
        "ready_pattern": "startup complete"}}), environ=environ)
    assert systemd.ready_after(now - 5, now) == pytest.approx(now - 1, abs=1e-5)
    assert systemd.logs_between(now - 5, now)[0]["ts"] == pytest.approx(now - 3, abs=1e-5)
    container = ServingStack(parse_operations({"serving": {
        "type": "container", "container": "vllm", "health_url": "http://127.0.0.1:9/",
        "ready_pattern": "startup complete"}}), environ=environ)
    expected = 1893553445.123456  # 2030-01-02T03:04:05.123456Z
    assert container.ready_after(expected - 10, expected + 10) == pytest.approx(expected, abs=1e-6)
    assert serving_stack.log_line_time("2030-01-02T03:04:05+01:00 x") == pytest.approx(expected - 0.123456 - 3600)
    assert serving_stack.log_line_time("loading weights") is None
