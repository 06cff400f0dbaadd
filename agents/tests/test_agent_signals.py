"""`dossier-agent run` as a real process: SIGTERM finishes or hands back the job; SIGKILL loses nothing."""

import os
import re
import signal
import subprocess
import time

import pytest

from conftest import agent_command, agent_environment


@pytest.fixture
def start_agent(server, tmp_path):
    processes = []

    def start(grace_s="30"):
        environment = agent_environment(
            tmp_path, DOSSIER_AGENT_SERVER_URL=server.url, DOSSIER_AGENT_AGENT_TOKEN=token,
            DOSSIER_AGENT_SHUTDOWN_GRACE_S=grace_s, DOSSIER_AGENT_JOB_KINDS="test_sleeper,test_stubborn",
        )
        process = subprocess.Popen(agent_command("run"), env=environment, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        processes.append(process)
        return process

    token = server.register_agent()
    yield start
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=30)


def _running(server, job_id, attempt=1):
    job = server.state.jobs[job_id]
    return len(job.attempts) >= attempt and job.attempts[attempt - 1].state == "running"


def _terminate(process):
    began = time.monotonic()
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    return process.returncode, time.monotonic() - began, stderr


def test_sigterm_hands_back_a_job_that_stops_when_asked(server, start_agent):
    job_id = server.state.add_job("test_sleeper", {"seconds": 120})
    process = start_agent()
    assert server.state.wait_for(lambda: _running(server, job_id), timeout=60)

    code, seconds, stderr = _terminate(process)

    assert code == 0, stderr
    assert seconds < 15
    finish = server.state.jobs[job_id].attempts[0].finish
    assert finish["status"] == "handed_back" and finish["error"]["type"] == "AgentShutdown"
    assert server.state.jobs[job_id].status == "queued"  # back in the queue for another agent
    assert 'event="agent stopped"' in stderr


def test_sigterm_lets_a_job_finish_within_the_grace_period(server, start_agent):
    job_id = server.state.add_job("test_stubborn", {"seconds": 3})
    process = start_agent(grace_s="60")
    assert server.state.wait_for(lambda: _running(server, job_id), timeout=60)

    code, _, stderr = _terminate(process)

    assert code == 0, stderr
    finish = server.state.jobs[job_id].attempts[0].finish
    assert finish["status"] == "succeeded" and finish["result"]["done"] is True


def test_sigterm_stops_a_stubborn_job_after_the_grace_period(server, start_agent):
    job_id = server.state.add_job("test_stubborn", {"seconds": 300})
    process = start_agent(grace_s="1")
    assert server.state.wait_for(lambda: _running(server, job_id), timeout=60)

    code, seconds, stderr = _terminate(process)

    assert code == 0, stderr
    assert seconds < 15
    assert server.state.jobs[job_id].attempts[0].finish["status"] == "handed_back"
    worker_pid = int(re.search(r'event="job started".* pid=(\d+)', stderr).group(1))
    with pytest.raises(ProcessLookupError):
        os.kill(worker_pid, 0)  # the job process is gone too


def test_after_sigkill_the_restarted_agent_hands_back_and_the_job_runs_again(server, start_agent, tmp_path):
    job_id = server.state.add_job("test_sleeper", {"seconds": 2})
    first = start_agent()
    assert server.state.wait_for(lambda: _running(server, job_id), timeout=60)
    deadline = time.monotonic() + 30
    while not list((tmp_path / "state" / "spool" / "attempts").glob("*/worker/progress.json")):
        assert time.monotonic() < deadline, "the job process never reported progress"
        time.sleep(0.05)  # the job process is running and has reported
    first.kill()
    _, stderr = first.communicate(timeout=30)
    worker_pid = int(re.search(r'event="job started".* pid=(\d+)', stderr).group(1))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the kernel ends the orphaned job process (parent-death signal)
        try:
            os.kill(worker_pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the job process outlived the killed agent")

    second = start_agent()
    job = server.state.jobs[job_id]
    assert server.state.wait_for(lambda: len(job.attempts) == 2 and job.attempts[1].finish is not None, timeout=90)
    _terminate(second)

    assert job.attempts[0].finish["status"] == "handed_back"
    assert job.attempts[0].finish["error"]["type"] == "AgentRestarted"
    assert job.attempts[1].finish["status"] == "succeeded"
    assert [attempt.finish["status"] for attempt in job.attempts].count("succeeded") == 1
