"""Settings from flags over DOSSIER_AGENT_* variables over the TOML file, with clear errors."""

from pathlib import Path

import pytest
from dossier_agent.config import load_config
from dossier_agent.errors import ConfigError


def test_flags_beat_the_environment_which_beats_the_file(tmp_path):
    file = tmp_path / "agent.toml"
    file.write_text(
        'server_url = "https://from-file.example"\nshutdown_grace_s = 5\nname = "file-name"\n'
        'job_kinds = ["inventory"]\n\n[operations.restart_serving]\ncommand = "systemctl restart vllm"\n'
    )
    environment = {"DOSSIER_AGENT_CONFIG": str(file), "DOSSIER_AGENT_SHUTDOWN_GRACE_S": "7",
                   "DOSSIER_AGENT_NAME": "env-name", "DOSSIER_AGENT_STATE_DIR": str(tmp_path / "state")}

    config = load_config({"name": "flag-name"}, environ=environment)

    assert config.server_url == "https://from-file.example"
    assert config.shutdown_grace_s == 7.0
    assert config.name == "flag-name"
    assert config.job_kinds == ["inventory"]
    assert config.operations == {"restart_serving": {"command": "systemctl restart vllm"}}
    assert config.config_file == file
    assert config.token_file == tmp_path / "state" / "agent-token"
    assert config.spool_dir == tmp_path / "state" / "spool"


def test_defaults_without_file_or_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    config = load_config({}, environ={})
    assert config.server_url is None
    assert config.shutdown_grace_s == 60.0 and config.telemetry_interval_s == 1.0
    assert config.tls_verify is True
    assert config.config_file is None


@pytest.mark.parametrize(("environment", "message"), [
    ({"DOSSIER_AGENT_SHUTDOWN_GRACE_S": "soon"}, "must be a number"),
    ({"DOSSIER_AGENT_TELEMETRY_INTERVAL_S": "0"}, "greater than 0"),
    ({"DOSSIER_AGENT_SERVER_URL": "dossier.example"}, "https://"),
    ({"DOSSIER_AGENT_LOG_LEVEL": "loud"}, "log_level"),
    ({"DOSSIER_AGENT_KEEP_WORKDIRS": "perhaps"}, "true or false"),
    ({"DOSSIER_AGENT_CONFIG": "/nonexistent/agent.toml"}, "cannot read"),
])
def test_bad_values_are_refused_with_the_setting_named(environment, message):
    with pytest.raises(ConfigError, match=message):
        load_config({}, environ=environment)


def test_unknown_file_settings_are_refused(tmp_path):
    file = tmp_path / "agent.toml"
    file.write_text('sever_url = "https://typo.example"\n')
    with pytest.raises(ConfigError, match="sever_url"):
        load_config({"config_file": str(file)}, environ={})


def test_list_settings_from_the_environment(tmp_path):
    config = load_config({}, environ={"DOSSIER_AGENT_JOB_KINDS": "inventory, memory_fit",
                                      "DOSSIER_AGENT_JOB_DIRS": f"{tmp_path}/a:{tmp_path}/b",
                                      "DOSSIER_AGENT_CA_BUNDLE": "/etc/ssl/dossier.pem"})
    assert config.job_kinds == ["inventory", "memory_fit"]
    assert config.job_dirs == [Path(tmp_path / "a"), Path(tmp_path / "b")]
    assert config.tls_verify == "/etc/ssl/dossier.pem"
