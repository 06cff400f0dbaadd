"""The run loop in-process against the loopback server: claim → start → lease → events → artifacts → finish."""

import signal
import threading
import time

import pytest
from dossier_agent.jobs.registry import discover
from dossier_agent.runner import EXIT_AUTHENTICATION_FAILED, EXIT_OK, AgentRunner

FAST = {"claim_interval_s": 0.1, "heartbeat_interval_s": 0.3}


@pytest.fixture
def start_runner(server, config):
    started = []

    def start(token=None, **config_changes):
        for key, value in config_changes.items():
            setattr(config, key, value)
        runner = AgentRunner(config, discover(config.job_dirs), server_url=server.url,
                             agent_token=token or server.register_agent(), details=FAST)
        result = {}
        thread = threading.Thread(target=lambda: result.setdefault("code", runner.run()), daemon=True)
        thread.start()
        started.append((runner, thread))
        return runner, thread, result

    yield start
    for runner, thread in started:
        runner.handle_signal(signal.SIGTERM)
        thread.join(timeout=30)


def _stop(runner, thread, result):
    runner.handle_signal(signal.SIGTERM)
    thread.join(timeout=30)
    assert not thread.is_alive()
    return result["code"]


def test_an_inventory_job_runs_end_to_end(server, start_runner):
    job_id = server.state.add_job("inventory")
    runner, thread, result = start_runner()

    assert server.state.wait_for(lambda: server.state.finished_attempts(job_id), timeout=60)
    assert _stop(runner, thread, result) == EXIT_OK

    attempt = server.state.jobs[job_id].attempts[0]
    assert attempt.finish["status"] == "succeeded"
    assert attempt.finish["result"]["host"]["cpu_cores_logical"] >= 1
    assert attempt.started_inventory["host"]["machine_id"]  # the inventory goes with every job
    assert len(attempt.events) == attempt.finish["event_count"] > 0  # every event arrived before the finish
    assert [a["name"] for a in server.state.jobs[job_id].artifacts.values()] == ["inventory.json"]
    assert server.state.heartbeats and server.state.heartbeats[0]["agent_version"]
    assert not list((runner.config.spool_dir / "attempts").iterdir())  # delivered and removed


def test_cancellation_reaches_the_job_within_one_lease_interval(server, start_runner):
    server.state.lease_renew_every_s = 0.3
    job_id = server.state.add_job("test_sleeper", {"seconds": 60})
    runner, thread, result = start_runner()
    assert server.state.wait_for(lambda: server.state.jobs[job_id].status == "running", timeout=30)

    cancelled_at = time.monotonic()
    server.state.cancel(job_id)
    assert server.state.wait_for(lambda: server.state.finished_attempts(job_id), timeout=30)

    finish = server.state.jobs[job_id].attempts[0].finish
    assert finish["status"] == "cancelled"
    assert time.monotonic() - cancelled_at < 10
    _stop(runner, thread, result)


def test_a_superseded_attempt_is_abandoned_without_a_finish(server, start_runner):
    server.state.lease_renew_every_s = 0.3
    job_id = server.state.add_job("test_sleeper", {"seconds": 60})
    runner, thread, result = start_runner()
    assert server.state.wait_for(lambda: server.state.jobs[job_id].status == "running", timeout=30)

    server.state.supersede(job_id)  # the reaper re-queued it: the same agent claims attempt 2
    job = server.state.jobs[job_id]
    assert server.state.wait_for(lambda: len(job.attempts) == 2 and job.attempts[1].state == "running", timeout=30)
    assert server.state.count("POST", f"/jobs/{job_id}/lease$", 409) >= 1
    assert job.attempts[0].finish is None

    _stop(runner, thread, result)
    assert job.attempts[1].finish["status"] == "handed_back"
    assert job.attempts[0].finish is None


def test_a_revoked_agent_token_stops_the_agent_with_exit_code_3(server, start_runner):
    runner, thread, result = start_runner(token="dsa_revoked")
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert result["code"] == EXIT_AUTHENTICATION_FAILED
    assert "register again" in __import__("dossier_agent.runner").runner.fatal_message(runner.fatal_error)


def test_results_finished_while_the_server_is_down_arrive_later_exactly_once(server, start_runner):
    job_id = server.state.add_job("test_sleeper", {"seconds": 1.5})
    runner, thread, result = start_runner()
    assert server.state.wait_for(lambda: server.state.jobs[job_id].status == "running", timeout=30)
    server.stop()
    time.sleep(3)  # the job ends while the server is unreachable; its finish waits in the spool
    assert list((runner.config.spool_dir / "attempts").glob("*/finish.json"))

    server.start()
    assert server.state.wait_for(lambda: server.state.finished_attempts(job_id), timeout=60)
    _stop(runner, thread, result)

    attempt = server.state.jobs[job_id].attempts[0]
    assert attempt.finish["status"] == "succeeded"
    assert len(attempt.events) == attempt.finish["event_count"]
    assert server.state.count("POST", f"/jobs/{job_id}/finish$", 201) == 1


def test_server_commands_pause_and_stop_the_agent(server, start_runner):
    server.state.heartbeat_interval_s = 0.3  # the agent takes its heartbeat interval from the server's reply
    runner, thread, result = start_runner()
    server.state.commands.append({"command": "pause"})
    assert server.state.wait_for(lambda: runner.paused, timeout=10)
    job_id = server.state.add_job("inventory")
    time.sleep(1)
    assert server.state.jobs[job_id].status == "queued"  # paused: nothing claimed

    server.state.commands.append({"command": "stop"})
    thread.join(timeout=10)
    assert result["code"] == EXIT_OK
    assert server.state.jobs[job_id].status == "queued"
