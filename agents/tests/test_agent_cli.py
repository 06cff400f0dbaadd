"""The `dossier-agent` command in real processes: register, inventory, self-test, run-job and replay."""

import json
import subprocess
import tarfile

from conftest import agent_command, agent_environment


def _run(tmp_path, *arguments, timeout=120, **environment):
    return subprocess.run(agent_command(*arguments), env=agent_environment(tmp_path, **environment),
                          capture_output=True, text=True, timeout=timeout, check=False)


def test_register_writes_the_token_readable_by_the_owner_only(server, tmp_path):
    completed = _run(tmp_path, "register", "--server", server.url,
                     "--registration-token", server.state.registration_token, "--name", "node-7")

    assert completed.returncode == 0, completed.stderr
    token_file = tmp_path / "state" / "agent-token"
    token = token_file.read_text().strip()
    assert token.startswith("dsa_") and token in server.state.agents
    assert token_file.stat().st_mode & 0o777 == 0o600
    details = json.loads((tmp_path / "state" / "agent-token.json").read_text())
    assert details["server_url"] == server.url and token not in json.dumps(details)
    assert (tmp_path / "state" / "agent-token.json").stat().st_mode & 0o777 == 0o600
    registration = server.state.agents[token]["registration"]
    assert registration["name"] == "node-7"
    assert {"inventory", "test_sleeper"} <= set(registration["job_kinds"])
    assert "test_broken" not in registration["job_kinds"]
    assert registration["inventory"]["host"]["hostname"]
    assert token not in completed.stdout + completed.stderr  # the token is never printed


def test_register_with_a_revoked_token_says_so_and_exits_3(server, tmp_path):
    completed = _run(tmp_path, "register", "--server", server.url, "--registration-token", "dsr_revoked")
    assert completed.returncode == 3
    assert "invalid_registration_token" in completed.stderr
    assert not (tmp_path / "state" / "agent-token").exists()


def test_run_without_registration_explains_what_to_do(tmp_path):
    completed = _run(tmp_path, "run", "--server", "http://127.0.0.1:9")
    assert completed.returncode == 2
    assert "dossier-agent register" in completed.stderr


def test_a_bad_setting_is_a_configuration_error(tmp_path):
    completed = _run(tmp_path, "inventory", DOSSIER_AGENT_SHUTDOWN_GRACE_S="soon")
    assert completed.returncode == 2
    assert "DOSSIER_AGENT_SHUTDOWN_GRACE_S" in completed.stderr


def test_inventory_prints_json(tmp_path):
    completed = _run(tmp_path, "inventory")
    assert completed.returncode == 0, completed.stderr
    inventory = json.loads(completed.stdout)
    assert inventory["schema"] == 1 and "gpu_present" in inventory and inventory["host"]["cpu_cores_logical"] >= 1


def test_self_test_runs_every_kind_locally(tmp_path):
    completed = _run(tmp_path, "self-test", "--kind", "inventory", "--kind", "test_sleeper", "--kind", "test_chatty")
    report = json.loads(completed.stdout)
    assert completed.returncode == 0, completed.stderr
    assert report["passed"] is True
    assert {result["kind"]: result["status"] for result in report["results"]} == {
        "inventory": "succeeded", "test_sleeper": "succeeded", "test_chatty": "succeeded"}
    assert "broken_import" in report["not_offered"]


def test_self_test_fails_when_a_kind_fails(tmp_path):
    completed = _run(tmp_path, "self-test", "--kind", "test_failing")
    assert completed.returncode == 1
    assert json.loads(completed.stdout)["results"][0]["error"] == "the device fell over"


def _offline_run(tmp_path, spool):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"kind": "test_chatty", "spec": {"events": 4}}))
    completed = _run(tmp_path, "run-job", str(spec), "--spool", str(spool))
    assert completed.returncode == 0, completed.stderr
    assert "status=succeeded" in completed.stdout


def test_an_offline_run_is_replayed_through_the_same_endpoints_exactly_once(server, tmp_path):
    spool = tmp_path / "offline-spool"
    _offline_run(tmp_path, spool)
    token = server.register_agent()

    first = _run(tmp_path, "replay", str(spool), "--server", server.url, DOSSIER_AGENT_AGENT_TOKEN=token)
    second = _run(tmp_path, "replay", str(spool), "--server", server.url, DOSSIER_AGENT_AGENT_TOKEN=token)

    assert first.returncode == 0, first.stderr
    assert [entry["outcome"] for entry in json.loads(first.stdout)] == ["delivered"]
    assert second.returncode == 0 and json.loads(second.stdout) == []
    (job,) = server.state.jobs.values()
    assert job.offline_run_id and job.kind == "test_chatty" and job.spec == {"events": 4}
    attempt = job.attempts[0]
    assert attempt.finish["status"] == "succeeded" and attempt.finish["result"]["events"] == 4
    assert len(attempt.events) == attempt.finish["event_count"] == 9
    assert len(job.artifacts) == 2
    assert attempt.started_inventory["host"]["hostname"]


def test_a_spool_tar_file_can_be_replayed(server, tmp_path):
    spool = tmp_path / "offline-spool"
    _offline_run(tmp_path, spool)
    archive = tmp_path / "evidence.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(spool, arcname="spool")

    completed = _run(tmp_path, "replay", str(archive), "--server", server.url,
                     DOSSIER_AGENT_AGENT_TOKEN=server.register_agent())

    assert completed.returncode == 0, completed.stderr
    (job,) = server.state.jobs.values()
    assert job.attempts[0].finish["status"] == "succeeded"


def test_replay_with_the_server_down_keeps_the_spool(tmp_path):
    spool = tmp_path / "offline-spool"
    _offline_run(tmp_path, spool)
    completed = _run(tmp_path, "replay", str(spool), "--server", "http://127.0.0.1:9", "--give-up-after-s", "2",
                     DOSSIER_AGENT_AGENT_TOKEN="dsa_x")
    assert completed.returncode == 1
    assert json.loads(completed.stdout)[0]["outcome"] == "pending"
    assert list((spool / "attempts").glob("*/finish.json"))


def test_run_job_with_an_unknown_kind_is_a_configuration_error(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"kind": "test_broken", "spec": {}}))
    completed = _run(tmp_path, "run-job", str(spec), "--spool", str(tmp_path / "spool"))
    assert completed.returncode == 2
    assert "module_that_does_not_exist" in completed.stderr


def test_offline_commands_work_without_httpx_or_psutil(tmp_path):
    """As on an air-gapped node running the agent from its source folder with only the standard library."""
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    for name in ("httpx", "psutil", "pynvml"):
        (blocked / f"{name}.py").write_text(f"raise ImportError('{name} is not installed on this node')\n")
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"kind": "inventory", "spec": {}}))
    pythonpath = f"{blocked}:{agent_environment(tmp_path)['PYTHONPATH']}"

    completed = _run(tmp_path, "run-job", str(spec), "--spool", str(tmp_path / "spool"), PYTHONPATH=pythonpath)
    self_test = _run(tmp_path, "self-test", "--kind", "inventory", PYTHONPATH=pythonpath)

    assert completed.returncode == 0, completed.stderr
    assert self_test.returncode == 0, self_test.stderr
    finish = json.loads(next((tmp_path / "spool" / "attempts").glob("*/finish.json")).read_text())
    inventory = finish["payload"]["result"]
    assert inventory["gpu_present"] is False and "nvidia-ml-py" in inventory["gpu_error"]
    assert inventory["host"]["memory_total_bytes"] > 0 and inventory["host"]["disks"]  # from /proc, not psutil
