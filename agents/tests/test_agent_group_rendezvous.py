"""A job group's rendezvous on the agent side: the lease thread takes it from the server's replies and hands it to
the job process through the attempt's spool folder (docs/agent-protocol.md §8)."""

import json
import threading
import time

import pytest
from dossier_agent.config import ConfigError, load_config
from dossier_agent.errors import JobCancelled
from dossier_agent.lease import LeaseKeeper
from test_acceptance import make_context


class NoClient:
    def renew_lease(self, *args):  # pragma: no cover - the keeper's thread is not started here
        raise AssertionError("not called")


WAITING = {"group_id": "g-7", "generation": 1, "rank": 1, "world_size": 2, "ready": False, "poll_s": 2}
READY = {**WAITING, "ready": True, "master_addr": "10.0.0.5", "master_port": 29517}


def _keeper(tmp_path):
    context, events = make_context(tmp_path, {})
    keeper = LeaseKeeper(NoClient(), job_id="1", attempt=1, job_token="t", renew_every_s=30,
                         rendezvous_path=context._spool.rendezvous_path)
    return keeper, context, events


def test_a_waiting_group_renews_every_poll_interval_and_writes_nothing(tmp_path):
    keeper, context, events = _keeper(tmp_path)
    keeper.apply_reply({"lease": {"renew_every_s": 30}, "cancel_requested": False, "group": WAITING})
    assert keeper.renew_every_s == 2 and keeper.rendezvous is None
    assert not context._spool.rendezvous_path.exists()
    assert context.wait_rendezvous(0.2, poll_s=0.05) is None
    events.close()


def test_the_rendezvous_reaches_the_job_once_ready(tmp_path):
    keeper, context, events = _keeper(tmp_path)
    keeper.apply_reply({"lease": {"renew_every_s": 30}, "group": WAITING})
    found = {}
    waiter = threading.Thread(target=lambda: found.update(context.wait_rendezvous(10, poll_s=0.02) or {}))
    waiter.start()
    time.sleep(0.1)
    keeper.apply_reply({"lease": {"renew_every_s": 30}, "group": READY})
    waiter.join(timeout=10)
    assert found == {"group_id": "g-7", "generation": 1, "master_addr": "10.0.0.5", "master_port": 29517}
    assert keeper.renew_every_s == 30, "once ready, the lease goes back to its normal interval"
    assert json.loads(context._spool.rendezvous_path.read_text()) == found
    events.close()


def test_waiting_for_the_rendezvous_stops_when_the_job_is_cancelled(tmp_path):
    context, events = make_context(tmp_path, {})
    context._is_cancelled = lambda: True
    with pytest.raises(JobCancelled):
        context.wait_rendezvous(5)
    events.close()


def test_advertise_address_is_an_ip_address(tmp_path):
    config = load_config({"state_dir": tmp_path}, environ={"DOSSIER_AGENT_ADVERTISE_ADDRESS": " 10.0.0.5 "})
    assert config.advertise_address == "10.0.0.5"
    with pytest.raises(ConfigError, match=r"advertise_address .* must be an IP address"):
        load_config({"state_dir": tmp_path}, environ={"DOSSIER_AGENT_ADVERTISE_ADDRESS": "node-a.example"})
