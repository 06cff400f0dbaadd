"""Checkpoint recovery: a real trainer process is SIGKILLed after its save, a fresh process restores the state bit for
bit (hash equal) and resumes at the right step; throughput and lost work per failure are reported."""

from pathlib import Path

import pytest
import torch
from dossier_agent.jobs import checkpoint
from test_acceptance import make_context

torch.set_num_threads(1)


def test_round_trip_restores_an_identical_state_and_reports_the_throughput(tmp_path):
    target = tmp_path / "nvme"
    target.mkdir()
    spec = {"device": "cpu", "state_bytes": 2 * 2**20, "batch_size": 8, "cpu_threads": 1, "timeout_s": 120,
            "targets": [{"name": "local", "path": str(target)}],
            "workload": {"checkpoint_interval_steps": 500, "step_time_s": 7.2, "gpus": 16,
                         "checkpoint_bytes": 2 * 10**11}}
    context, events = make_context(tmp_path, spec)
    result = checkpoint.run(spec, context)
    events.close()

    outcome = result["targets"][0]
    assert outcome["kill"]["returncode"] == -9 and outcome["kill"]["killed_by_the_signal"]
    assert outcome["kill"]["killed_after_step"] == outcome["saved_step"] + 1  # killed while training on
    assert outcome["hash_equal"] and outcome["saved_digest"] == outcome["restored_digest"]
    assert len(outcome["saved_digest"]) == 64
    assert outcome["restored_step"] == 3 and outcome["resumed_step"] == 4 and outcome["step_ok"]
    assert outcome["resume_matches_uninterrupted"]  # on the CPU the resumed step is bit-identical too
    assert outcome["verified"] and result["verified"] and result["label"] == "cpu"
    assert outcome["bytes"] >= result["proxy"]["state_bytes_estimate"]
    assert outcome["write_bytes_per_s"] > 0 and outcome["read_bytes_per_s"] > 0
    assert outcome["write_bytes_per_s"] == pytest.approx(outcome["bytes"] / outcome["write_s"])
    assert outcome["mount"]["mount_point"] is not None
    assert list(target.iterdir()) == []  # the job cleans up after itself

    projection = result["projections"][0]
    assert projection["projected_write_s"] == pytest.approx(2e11 / outcome["write_bytes_per_s"])
    lost = projection["lost_work"]
    assert lost["checkpoint_interval_s"] == pytest.approx(3600.0)
    assert lost["expected_lost_gpu_hours"] == pytest.approx(8.0)  # 1800 s x 16 GPUs
    assert [artifact["name"] for artifact in context.artifacts] == ["checkpoint.json"]


def test_the_digest_sees_one_changed_bit_and_ignores_insertion_order():
    model = torch.nn.Linear(4, 3)
    optimizer = torch.optim.AdamW(model.parameters())
    model(torch.ones(2, 4)).sum().backward()
    optimizer.step()
    reference = checkpoint.state_digest(model.state_dict(), optimizer.state_dict())

    reordered = dict(reversed(list(model.state_dict().items())))
    assert checkpoint.state_digest(reordered, optimizer.state_dict()) == reference

    changed = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    changed["bias"].view(torch.int32)[1] ^= 1  # one bit of one float
    assert checkpoint.state_digest(changed, optimizer.state_dict()) != reference

    moments = optimizer.state_dict()
    moments["state"][0]["exp_avg"] = moments["state"][0]["exp_avg"].clone()
    moments["state"][0]["exp_avg"].view(-1)[0] += 1e-3
    assert checkpoint.state_digest(model.state_dict(), moments) != reference

    groups = optimizer.state_dict()
    groups["param_groups"][0]["lr"] = 0.5
    assert checkpoint.state_digest(model.state_dict(), groups) != reference


def test_lost_work_per_failure():
    lost = checkpoint.lost_work(3600, 64, restore_s=90, write_s=120)
    assert lost["expected_lost_wall_s"] == 1800
    assert lost["expected_lost_gpu_hours"] == pytest.approx(32.0)
    assert lost["restore_gpu_hours"] == pytest.approx(1.6)
    assert lost["expected_total_gpu_hours_per_failure"] == pytest.approx(33.6)
    assert lost["write_overhead_fraction"] == pytest.approx(120 / 3600)
    assert checkpoint.lost_work(None, 8)["available"] is False
    assert checkpoint.checkpoint_interval_s({"checkpoint_interval_steps": 100, "step_time_s": 1.5}) == 150.0
    assert checkpoint.checkpoint_interval_s({}) is None


def test_mount_and_sizing():
    mounts = ("/dev/vda / ext4 rw 0 0\n"
              "nfs01:/export /mnt/shared nfs4 rw 0 0\n"
              "/dev/nvme0n1 /mnt/shared/fast xfs rw 0 0\n")
    assert checkpoint.mount_of(Path("/mnt/shared/run1"), mounts)["fstype"] == "nfs4"
    assert checkpoint.mount_of(Path("/mnt/shared/fast/x"), mounts)["fstype"] == "xfs"
    assert checkpoint.mount_of(Path("/mnt/sharedother"), mounts)["fstype"] == "ext4"
    width = checkpoint.mlp_width(2**30, 4)
    assert abs(4 * width * width * 12 - 2**30) / 2**30 < 0.01


def test_a_target_that_is_not_a_folder_is_refused(tmp_path):
    spec = {"device": "cpu", "targets": [{"name": "x", "path": str(tmp_path / "missing")}]}
    context, events = make_context(tmp_path, spec)
    with pytest.raises(checkpoint.CheckpointSpecError, match="not an existing folder"):
        checkpoint.run(spec, context)
    with pytest.raises(checkpoint.CheckpointSpecError, match="unknown spec key"):
        checkpoint.run({"device": "cpu", "command": "x"}, context)
    events.close()
