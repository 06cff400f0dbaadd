"""All-reduce bus bandwidth: the nccl-tests definition, two local gloo processes through `run()`, and a two-job group
(two jobs, one rank each, meeting at the rendezvous in their specs, as two agents would).

The end-to-end test with two agent processes through the server comes once the server hands out job groups
(docs/agent-protocol.md, "Job groups (all-reduce)")."""

import threading

import pytest
import torch
from dossier_agent.jobs import allreduce
from test_acceptance import make_context

torch.set_num_threads(1)

SMALL = {"device": "cpu", "cpu_threads": 1, "sizes_bytes": [4096, 262144], "warmup": 1, "target_s": 0.01,
         "max_iterations": 20, "timeout_s": 90}


def test_message_sizes():
    assert allreduce.message_sizes({"sizes": {"min_bytes": 1024, "max_bytes": 65536, "factor": 4}}, "cpu", 4) == [
        1024, 4096, 16384, 65536]
    assert allreduce.message_sizes({"sizes_bytes": [10, 4096, 4096]}, "cpu", 4) == [8, 4096]
    assert allreduce.message_sizes({}, "cuda", 2)[-1] == 2**30
    with pytest.raises(allreduce.AllReduceSpecError):
        allreduce.message_sizes({"sizes_bytes": [2]}, "cpu", 4)


def _check_rows(result, sizes, world):
    assert [row["size_bytes"] for row in result["rows"]] == sizes
    for row in result["rows"]:
        assert row["correct"] and row["time_us"] > 0
        seconds = row["time_us"] / 1e6
        assert row["algbw_gbps"] == pytest.approx(row["size_bytes"] / seconds / 1e9)
        assert row["busbw_gbps"] == pytest.approx(row["algbw_gbps"] * 2 * (world - 1) / world)
    assert result["peak_busbw_gbps"] == max(row["busbw_gbps"] for row in result["rows"])


def test_two_local_gloo_processes_report_bus_bandwidth(tmp_path):
    spec = {**SMALL, "local_ranks": 2}
    context, events = make_context(tmp_path, spec)
    result = allreduce.run(spec, context)
    events.close()
    assert result["label"] == "cpu" and result["backend"] == "gloo" and result["mode"] == "local"
    assert result["world_size"] == 2 and result["correct"]
    _check_rows(result, [4096, 262144], 2)
    assert [artifact["name"] for artifact in context.artifacts] == ["allreduce.json"]


def test_a_job_group_of_two_meets_at_the_rendezvous(tmp_path):
    port = allreduce.free_port()
    results, errors = {}, []

    def job(rank):
        spec = {**SMALL, "group": {"group_id": "g-1", "rank": rank, "world_size": 2, "master_addr": "127.0.0.1",
                                   "master_port": port, "env": {"GLOO_SOCKET_IFNAME": "lo"}}}
        context, events = make_context(tmp_path / f"agent-{rank}", spec)
        try:
            results[rank] = allreduce.run(spec, context)
        except Exception as error:  # reported below
            errors.append(error)
        finally:
            events.close()

    threads = [threading.Thread(target=job, args=(rank,)) for rank in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    for rank in (0, 1):
        assert results[rank]["mode"] == "group" and results[rank]["node_rank"] == rank
        assert results[rank]["world_size"] == 2 and results[rank]["group_id"] == "g-1"
        _check_rows(results[rank], [4096, 262144], 2)
    # both ranks report the slowest rank's time: the same table
    assert [row["time_us"] for row in results[0]["rows"]] == [row["time_us"] for row in results[1]["rows"]]


def test_group_settings_are_checked(tmp_path):
    context, events = make_context(tmp_path, {})
    group = {"rank": 0, "world_size": 2, "master_addr": "127.0.0.1", "master_port": 29500}
    with pytest.raises(allreduce.AllReduceSpecError, match="refused: NCCL_NET_PLUGIN"):
        allreduce.run({**SMALL, "group": {**group, "env": {"NCCL_NET_PLUGIN": "evil"}}}, context)
    with pytest.raises(allreduce.AllReduceSpecError, match=r"group\.rank"):
        allreduce.run({**SMALL, "group": {**group, "rank": 2}}, context)
    # No rendezvous in the spec: the job waits for the agent to pass it on (here none comes) …
    with pytest.raises(TimeoutError, match=r"rendezvous did not arrive within 0\.3 s"):
        allreduce.run({**SMALL, "timeout_s": 0.3, "group": {"rank": 1, "world_size": 2}}, context)
    # … and a context that cannot pass one on is refused at once.
    with pytest.raises(allreduce.AllReduceSpecError, match="rendezvous"):
        allreduce._rendezvous({"rank": 1, "world_size": 2}, object(), 5)
    with pytest.raises(allreduce.AllReduceSpecError, match="NCCL needs CUDA"):
        allreduce.run({**SMALL, "backend": "nccl"}, context)
    events.close()

    class Waiting:
        def __init__(self, reply):
            self.reply = reply

        def wait_rendezvous(self, timeout_s):
            return self.reply

    found = allreduce._rendezvous({"rank": 1, "world_size": 2}, Waiting({"master_addr": "10.0.0.5",
                                                                        "master_port": 29517}), 5)
    assert found == {"rank": 1, "world_size": 2, "master_addr": "10.0.0.5", "master_port": 29517}
    with pytest.raises(TimeoutError):
        allreduce._rendezvous({"rank": 1, "world_size": 2}, Waiting(None), 5)
