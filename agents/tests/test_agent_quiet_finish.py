"""Normal ends are not warnings, and misspellings are not silent (issue: hardening, item 11).

- A lease renewal that races the attempt's own finish gets 409 attempt_not_running/attempt_finished: while the
  finish is being delivered that is the normal end of the lease (INFO); before it, a real supersession (WARNING).
- A DOSSIER_AGENT_* variable the agent does not read is named in a warning with the closest known name, worded like
  the configuration file's refusal of an unknown key.
"""

import logging
import time

import pytest
from dossier_agent import cli
from dossier_agent.config import ConfigError, load_config, unknown_environment
from dossier_agent.errors import AttemptSuperseded
from dossier_agent.lease import LeaseKeeper


class FinishedClient:
    """Answers every renewal the way the server does once the attempt's finish has been stored."""

    def __init__(self, code):
        self.code = code
        self.calls = 0

    def renew_lease(self, *args):
        self.calls += 1
        raise AttemptSuperseded(409, self.code, "Attempt 1 of job 7 is no longer running (succeeded).")


def _run_keeper(code, *, delivering):
    client = FinishedClient(code)
    keeper = LeaseKeeper(client, job_id="7", attempt=1, job_token="t", renew_every_s=0.01)
    if delivering:
        keeper.delivering.set()
    keeper.start()
    deadline = time.monotonic() + 5
    while not keeper.superseded.is_set() and time.monotonic() < deadline:
        time.sleep(0.01)
    keeper.stop()
    assert client.calls >= 1 and keeper.superseded.is_set()


@pytest.mark.parametrize("code", ["attempt_not_running", "attempt_finished"])
def test_a_renewal_racing_the_finish_is_not_a_warning(code, caplog):
    caplog.set_level(logging.INFO, logger="dossier_agent.lease")
    _run_keeper(code, delivering=True)
    records = [record for record in caplog.records if record.name == "dossier_agent.lease"]
    assert records and all(record.levelno == logging.INFO for record in records)
    assert not any("superseded" in record.getMessage() for record in records)


def test_a_supersession_while_the_job_runs_is_still_a_warning(caplog):
    caplog.set_level(logging.INFO, logger="dossier_agent.lease")
    _run_keeper("attempt_not_running", delivering=False)
    assert any(record.levelno == logging.WARNING and "attempt superseded" in record.getMessage()
               for record in caplog.records)


def test_a_newer_attempt_is_a_warning_even_while_delivering(caplog):
    caplog.set_level(logging.INFO, logger="dossier_agent.lease")
    _run_keeper("attempt_superseded", delivering=True)
    assert any(record.levelno == logging.WARNING for record in caplog.records)


def test_a_misspelled_variable_is_named_with_the_closest_setting():
    messages = unknown_environment({"DOSSIER_AGENT_SEVER_URL": "https://x", "DOSSIER_AGENT_SERVER_URL": "https://y",
                                    "DOSSIER_AGENT_CONFIG": "/etc/a.toml", "DOSSIER_AGENT_OFFLINE_AFTER_S": "90",
                                    "OTHER": "1"})
    assert len(messages) == 1
    assert messages[0].startswith("environment: unknown setting DOSSIER_AGENT_SEVER_URL")
    assert "did you mean DOSSIER_AGENT_SERVER_URL?" in messages[0]


def test_the_file_refuses_an_unknown_key_in_the_same_words(tmp_path):
    file = tmp_path / "agent.toml"
    file.write_text('sever_url = "https://typo.example"\n')
    with pytest.raises(ConfigError, match=r"unknown setting sever_url \(did you mean server_url\?\)"):
        load_config({"config_file": str(file)}, environ={})


def test_the_cli_warns_at_start(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DOSSIER_AGENT_STATE_DIRR", str(tmp_path))
    monkeypatch.setenv("DOSSIER_AGENT_STATE_DIR", str(tmp_path))
    monkeypatch.delenv("DOSSIER_AGENT_CONFIG", raising=False)
    monkeypatch.setattr(cli, "COMMANDS", {**cli.COMMANDS, "inventory": lambda config, arguments: 0})
    assert cli.main(["inventory"]) == 0
    output = capsys.readouterr()
    text = output.out + output.err
    assert "DOSSIER_AGENT_STATE_DIRR" in text and "did you mean DOSSIER_AGENT_STATE_DIR?" in text
