"""The `checkpoint` job (benchmark phase 3, item 4): save a training state, kill the trainer, restore it bit for bit.

For each target folder (local NVMe, network storage, ...) it runs, in real subprocesses:

1. a **trainer** builds a proxy training state (a seeded MLP with an AdamW optimizer on the device, sized to
   `state_bytes`), trains `steps_before_save` steps, hashes the state, saves it (state moved to host memory, then
   `torch.save` to a temporary file, flush, fsync, atomic rename, fsync of the folder), trains one more step and
   records that state's hash too, and keeps training;
2. the job SIGKILLs the trainer (after the save, while it trains);
3. a **restorer**, a fresh process, drops the file's pages from the page cache (`posix_fadvise DONTNEED`, so the read
   comes from the storage, not from memory), loads it, rebuilds model and optimizer, hashes the restored state and
   compares it with the trainer's hash (sha256 over every tensor's name, dtype, shape and bytes, in a fixed order,
   plus the optimizer's hyper-parameters), checks the resumed step, and runs that next step to compare with the
   uninterrupted trainer.

It reports the bytes, write and read throughput, and the expected lost work per failure at the workload's checkpoint
interval: a failure lands on average half an interval after the last checkpoint, so interval/2 × GPUs of lost
GPU-time, plus the time to read the checkpoint back (projected to the workload's checkpoint size).

Spec (every key optional):

    {
      "targets": [{"name": "nvme", "path": "/mnt/nvme"}, {"name": "shared", "path": "/mnt/nfs/ckpt"}],
      "device": "auto" | "cuda" | "cpu",
      "state_bytes": 1073741824,          # model + optimizer state of the proxy (fp32 weights, AdamW: 12 B/param)
      "depth": 4, "batch_size": 64, "steps_before_save": 3,
      "workload": {"checkpoint_interval_s": 3600,          # or checkpoint_interval_steps × step_time_s
                   "gpus": 64,                              # GPUs the training job holds (lost work is theirs)
                   "checkpoint_bytes": 1.1e12},             # bytes this node writes per checkpoint (projection)
      "timeout_s": 600, "cpu_threads": null, "seed": 0, "keep_files": false
    }

A target path must be an existing folder; the job writes only inside a new `dossier-checkpoint-*` folder there and
removes it afterwards (unless `keep_files`). Without `targets` the job's own work folder is used.
Events: one `measurement` per target. Artifact: `checkpoint.json` (the result with each process's report).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from dossier_agent.contract.checkpoint_spec import CheckpointSpecError, check_spec
from dossier_agent.errors import JobCancelled

KIND = "checkpoint"
REQUIRES = ("torch",)
SCHEMA = 1
SELF_TEST_SPEC: dict[str, Any] = {"device": "cpu", "state_bytes": 2 * 2**20, "batch_size": 8, "cpu_threads": 1,
                                  "timeout_s": 60}
SELF_TEST_TIMEOUT_S = 90
CHECKPOINT_FILE = "state.pt"
_HASH_CHUNK = 64 * 2**20
_ADAM_BYTES_PER_PARAM = 12  # fp32 weight + two fp32 moments


# ----------------------------------------------------------------------------------------------------------------------
# Pure arithmetic
# ----------------------------------------------------------------------------------------------------------------------


def checkpoint_interval_s(workload: dict[str, Any]) -> float | None:
    if workload.get("checkpoint_interval_s") is not None:
        return float(workload["checkpoint_interval_s"])
    steps, step_time = workload.get("checkpoint_interval_steps"), workload.get("step_time_s")
    if steps is not None and step_time is not None:
        return float(steps) * float(step_time)
    return None


def lost_work(interval_s: float | None, gpus: int, restore_s: float | None = None,
              write_s: float | None = None) -> dict[str, Any]:
    """Expected loss per failure: interval/2 of all GPUs' time (uniform failure time), plus the time to read back.

    `write_s` gives the share of each interval spent writing a synchronous checkpoint.
    """
    if interval_s is None or not interval_s > 0:
        return {"available": False, "reason": "the workload gives no checkpoint interval"}
    lost_s = interval_s / 2
    result: dict[str, Any] = {
        "available": True,
        "checkpoint_interval_s": interval_s,
        "gpus": gpus,
        "expected_lost_wall_s": lost_s,
        "expected_lost_gpu_hours": lost_s * gpus / 3600,
        "restore_wall_s": restore_s,
        "restore_gpu_hours": restore_s * gpus / 3600 if restore_s is not None else None,
        "formula": "lost = interval/2 x GPUs; restore = checkpoint read time x GPUs",
    }
    result["expected_total_gpu_hours_per_failure"] = result["expected_lost_gpu_hours"] + (
        result["restore_gpu_hours"] or 0.0)
    if write_s is not None:
        result["checkpoint_write_s"] = write_s
        result["write_overhead_fraction"] = write_s / interval_s
    return result


def mlp_width(state_bytes: int, depth: int) -> int:
    """Width of a depth-layer square MLP whose fp32 weights and AdamW moments take about `state_bytes`."""
    return max(8, int(math.sqrt(state_bytes / (_ADAM_BYTES_PER_PARAM * depth))))


def mount_of(path: Path, mounts_text: str | None = None) -> dict[str, Any]:
    """The mount holding `path` (longest matching mount point in /proc/mounts): device and filesystem type."""
    if mounts_text is None:
        try:
            mounts_text = Path("/proc/mounts").read_text()
        except OSError:
            return {"mount_point": None, "fstype": None, "device": None}
    resolved = str(path.resolve())
    best = {"mount_point": None, "fstype": None, "device": None}
    for line in mounts_text.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        point = parts[1].replace("\\040", " ")
        inside = resolved == point or resolved.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best["mount_point"] or ""):
            best = {"mount_point": point, "fstype": parts[2], "device": parts[0]}
    return best


# ----------------------------------------------------------------------------------------------------------------------
# State hashing (torch, imported by the caller)
# ----------------------------------------------------------------------------------------------------------------------


def _feed_tensor(digest, name: str, tensor) -> None:
    tensor = tensor.detach().to("cpu").contiguous()
    digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
    size = tensor.numel() * tensor.element_size()
    pointer = tensor.data_ptr()
    for start in range(0, size, _HASH_CHUNK):
        length = min(_HASH_CHUNK, size - start)
        digest.update(memoryview((ctypes.c_char * length).from_address(pointer + start)))


def _feed_value(digest, name: str, value: Any) -> None:
    digest.update(f"{name}|{json.dumps(value, sort_keys=True, default=str)}|".encode())


def state_digest(model_state: dict[str, Any], optimizer_state: dict[str, Any]) -> str:
    """sha256 over the model's and the optimizer's state in a fixed order (names, dtypes, shapes, bytes)."""
    import torch

    digest = hashlib.sha256()
    for name in sorted(model_state):
        _feed_tensor(digest, f"model.{name}", model_state[name])
    states = optimizer_state.get("state", {})
    for parameter_id in sorted(states):
        for key in sorted(states[parameter_id]):
            value = states[parameter_id][key]
            label = f"optimizer.state.{parameter_id}.{key}"
            if isinstance(value, torch.Tensor):
                _feed_tensor(digest, label, value)
            else:
                _feed_value(digest, label, value)
    for position, group in enumerate(optimizer_state.get("param_groups", [])):
        _feed_value(digest, f"optimizer.param_groups.{position}", {key: group[key] for key in sorted(group)})
    return digest.hexdigest()


# ----------------------------------------------------------------------------------------------------------------------
# The trainer and the restorer (run as `python -m dossier_agent.jobs.checkpoint train|restore CONFIG.json`)
# ----------------------------------------------------------------------------------------------------------------------


def _write_json_atomic(path: Path, value: dict[str, Any]) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(value, indent=2, sort_keys=True))
    os.replace(temporary, path)


def _fsync_directory(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _build(torch, config: dict[str, Any]):
    device = torch.device(config["device"])
    torch.manual_seed(config["seed"])
    width, depth = config["width"], config["depth"]
    layers = []
    for _ in range(depth - 1):
        layers += [torch.nn.Linear(width, width), torch.nn.GELU()]
    layers.append(torch.nn.Linear(width, width))
    model = torch.nn.Sequential(*layers).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    return model, optimizer, device


def _train_step(torch, model, optimizer, device, config: dict[str, Any], step: int) -> None:
    """One step on batch number `step`; the data depend only on (seed, step), so a resumed run sees the same batch."""
    generator = torch.Generator().manual_seed(config["seed"] * 1_000_003 + step)
    inputs = torch.randn(config["batch_size"], config["width"], generator=generator).to(device)
    targets = torch.randn(config["batch_size"], config["width"], generator=generator).to(device)
    optimizer.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(inputs), targets)
    loss.backward()
    optimizer.step()


def _sync(torch, device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def trainer_main(config: dict[str, Any]) -> None:
    import torch

    if config.get("cpu_threads"):
        torch.set_num_threads(config["cpu_threads"])
    folder = Path(config["folder"])
    model, optimizer, device = _build(torch, config)
    step = 0
    while step < config["steps_before_save"]:
        step += 1
        _train_step(torch, model, optimizer, device, config, step)
    _sync(torch, device)
    saved_digest = state_digest(model.state_dict(), optimizer.state_dict())

    began = time.perf_counter()
    payload = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}
    host_payload = {
        "model": {name: tensor.detach().to("cpu") for name, tensor in payload["model"].items()},
        "optimizer": {
            "state": {pid: {key: value.detach().to("cpu") if isinstance(value, torch.Tensor) else value
                            for key, value in state.items()}
                      for pid, state in payload["optimizer"]["state"].items()},
            "param_groups": payload["optimizer"]["param_groups"],
        },
        "step": step,
    }
    _sync(torch, device)
    stage_s = time.perf_counter() - began

    target = folder / CHECKPOINT_FILE
    temporary = folder / (CHECKPOINT_FILE + ".partial")
    began = time.perf_counter()
    with open(temporary, "wb") as handle:
        torch.save(host_payload, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, target)
    _fsync_directory(folder)
    write_s = time.perf_counter() - began
    size = target.stat().st_size
    _write_json_atomic(folder / "saved.json", {
        "pid": os.getpid(), "step": step, "digest": saved_digest, "bytes": size, "stage_s": stage_s,
        "write_s": write_s, "write_bytes_per_s": size / write_s if write_s > 0 else None,
    })

    step += 1
    _train_step(torch, model, optimizer, device, config, step)
    _sync(torch, device)
    _write_json_atomic(folder / "stepped.json", {
        "step": step, "digest": state_digest(model.state_dict(), optimizer.state_dict()),
    })
    while True:  # keep training until the job kills this process
        step += 1
        _train_step(torch, model, optimizer, device, config, step)
        _sync(torch, device)


def _drop_from_page_cache(path: Path) -> str:
    if not hasattr(os, "posix_fadvise"):
        return "not possible on this platform: the read may come from the page cache"
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
        os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError as error:
        return f"posix_fadvise failed ({error.strerror}): the read may come from the page cache"
    finally:
        os.close(descriptor)
    return "dropped (posix_fadvise DONTNEED): the read comes from the storage"


def restorer_main(config: dict[str, Any]) -> None:
    import torch

    if config.get("cpu_threads"):
        torch.set_num_threads(config["cpu_threads"])
    folder = Path(config["folder"])
    path = folder / CHECKPOINT_FILE
    cache = _drop_from_page_cache(path) if config.get("drop_cache", True) else "kept (drop_cache false)"
    began = time.perf_counter()
    loaded = torch.load(path, map_location="cpu", weights_only=True)
    read_s = time.perf_counter() - began

    model, optimizer, device = _build(torch, config)  # a fresh model and optimizer, then the saved state into them
    began = time.perf_counter()
    model.load_state_dict(loaded["model"])
    optimizer.load_state_dict(loaded["optimizer"])
    _sync(torch, device)
    load_to_device_s = time.perf_counter() - began
    restored_digest = state_digest(model.state_dict(), optimizer.state_dict())
    step = int(loaded["step"])
    size = path.stat().st_size

    resumed_step = step + 1
    _train_step(torch, model, optimizer, device, config, resumed_step)
    _sync(torch, device)
    _write_json_atomic(folder / "restored.json", {
        "pid": os.getpid(), "step": step, "digest": restored_digest, "bytes": size, "read_s": read_s,
        "read_bytes_per_s": size / read_s if read_s > 0 else None, "load_to_device_s": load_to_device_s,
        "page_cache": cache, "resumed_step": resumed_step,
        "resumed_digest": state_digest(model.state_dict(), optimizer.state_dict()),
    })


# ----------------------------------------------------------------------------------------------------------------------
# The job
# ----------------------------------------------------------------------------------------------------------------------


def _child_environment() -> dict[str, str]:
    import dossier_agent

    environment = dict(os.environ)
    package_parent = str(Path(dossier_agent.__file__).resolve().parent.parent)
    existing = environment.get("PYTHONPATH")
    environment["PYTHONPATH"] = package_parent + (os.pathsep + existing if existing else "")
    return environment


def _spawn(role: str, config: dict[str, Any], folder: Path, logs: Path) -> subprocess.Popen:
    config_path = folder / f"{role}-config.json"
    config_path.write_text(json.dumps(config))
    with open(logs / f"{role}.log", "wb") as log:
        return subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "dossier_agent.jobs.checkpoint", role, str(config_path)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=_child_environment(),
            start_new_session=True,
        )


def _tail(path: Path, limit: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-limit:]
    except OSError:
        return ""


def _wait_for(path: Path, process: subprocess.Popen, deadline: float, ctx, logs: Path, role: str) -> dict[str, Any]:
    while not path.exists():
        if ctx.cancelled():
            process.kill()
            process.wait()
            raise JobCancelled("the job was cancelled")
        if process.poll() is not None:
            raise RuntimeError(f"the {role} exited with {process.returncode} before writing {path.name}: "
                               f"{_tail(logs / f'{role}.log')}")
        if time.monotonic() > deadline:
            process.kill()
            process.wait()
            raise TimeoutError(f"the {role} did not write {path.name} in time: {_tail(logs / f'{role}.log')}")
        time.sleep(0.02)
    return json.loads(path.read_text())


def _parse_spec(spec: dict[str, Any], ctx) -> dict[str, Any]:
    check_spec(spec)
    targets = spec.get("targets") or [{"name": "workdir", "path": str(ctx.workdir)}]
    for target in targets:
        path = Path(target["path"])
        if target["path"] != str(ctx.workdir) and not path.is_dir():
            raise CheckpointSpecError(f"checkpoint target {target['path']!r} is not an existing folder")
    return {"targets": targets, "workload": spec.get("workload") or {}}


def _resolve_device(requested: str) -> str:
    import torch

    if requested not in ("auto", "cuda", "cpu"):
        raise CheckpointSpecError(f"device must be auto, cuda or cpu, got {requested!r}")
    if requested == "cuda" and not torch.cuda.is_available():
        raise CheckpointSpecError("device cuda was asked for but torch sees no CUDA device")
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return requested


def run_target(target: dict[str, Any], config: dict[str, Any], ctx, timeout_s: float,
               keep_files: bool) -> dict[str, Any]:
    base = Path(target["path"])
    base.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=f"dossier-checkpoint-{uuid.uuid4().hex[:8]}-", dir=base))
    logs = ctx.workdir / f"checkpoint-logs-{folder.name}"
    logs.mkdir(parents=True, exist_ok=True)
    config = {**config, "folder": str(folder)}
    deadline = time.monotonic() + timeout_s
    try:
        trainer = _spawn("train", config, folder, logs)
        saved = _wait_for(folder / "saved.json", trainer, deadline, ctx, logs, "trainer")
        stepped = _wait_for(folder / "stepped.json", trainer, deadline, ctx, logs, "trainer")
        killed_at = time.monotonic()
        os.kill(trainer.pid, signal.SIGKILL)
        trainer.wait()
        kill = {"signal": "SIGKILL", "returncode": trainer.returncode, "trainer_pid": trainer.pid,
                "exit_after_kill_s": time.monotonic() - killed_at,
                "killed_after_step": stepped["step"], "killed_by_the_signal": trainer.returncode == -signal.SIGKILL}

        restorer = _spawn("restore", config, folder, logs)
        restored = _wait_for(folder / "restored.json", restorer, deadline, ctx, logs, "restorer")
        restorer.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if not keep_files:
            shutil.rmtree(folder, ignore_errors=True)
    hash_equal = restored["digest"] == saved["digest"]
    step_ok = restored["step"] == saved["step"] and restored["resumed_step"] == stepped["step"]
    return {
        "name": target.get("name") or str(base),
        "path": str(base),
        "mount": mount_of(base),
        "bytes": saved["bytes"],
        "saved_step": saved["step"],
        "saved_digest": saved["digest"],
        "restored_digest": restored["digest"],
        "hash_equal": hash_equal,
        "restored_step": restored["step"],
        "resumed_step": restored["resumed_step"],
        "step_ok": step_ok,
        "resume_matches_uninterrupted": restored["resumed_digest"] == stepped["digest"],
        "stage_to_host_s": saved["stage_s"],
        "write_s": saved["write_s"],
        "write_bytes_per_s": saved["write_bytes_per_s"],
        "read_s": restored["read_s"],
        "read_bytes_per_s": restored["read_bytes_per_s"],
        "load_to_device_s": restored["load_to_device_s"],
        "page_cache": restored["page_cache"],
        "kill": kill,
        "verified": hash_equal and step_ok and kill["killed_by_the_signal"],
        "files_kept": str(folder) if keep_files else None,
    }


def run(spec: dict[str, Any], ctx) -> dict[str, Any]:
    spec = spec or {}
    parsed = _parse_spec(spec, ctx)
    device = _resolve_device(spec.get("device", "auto"))
    depth = int(spec.get("depth", 4))
    width = mlp_width(int(spec.get("state_bytes", 256 * 2**20)), depth)
    config = {
        "device": "cuda:0" if device == "cuda" else "cpu", "width": width, "depth": depth,
        "batch_size": int(spec.get("batch_size", 64)), "steps_before_save": int(spec.get("steps_before_save", 3)),
        "seed": int(spec.get("seed", 0)), "cpu_threads": spec.get("cpu_threads"),
        "drop_cache": bool(spec.get("drop_cache", True)),
    }
    parameters = depth * (width * width + width)
    ctx.log("checkpoint proxy", device=device, width=width, depth=depth, parameters=parameters,
            state_bytes=parameters * _ADAM_BYTES_PER_PARAM)
    results = []
    for position, target in enumerate(parsed["targets"]):
        if ctx.cancelled():
            raise JobCancelled("the job was cancelled")
        ctx.progress(position / len(parsed["targets"]), f"checkpoint round trip on {target.get('name')}")
        outcome = run_target(target, config, ctx, float(spec.get("timeout_s", 600)), bool(spec.get("keep_files")))
        results.append(outcome)
        ctx.event("measurement", {key: outcome[key] for key in (
            "name", "bytes", "write_bytes_per_s", "read_bytes_per_s", "hash_equal", "step_ok", "verified")})
        ctx.log("checkpoint round trip", target=outcome["name"], verified=outcome["verified"],
                write_mb_s=round(outcome["write_bytes_per_s"] / 1e6, 1),
                read_mb_s=round(outcome["read_bytes_per_s"] / 1e6, 1))

    workload = parsed["workload"]
    gpu_count = len((ctx.inventory or {}).get("gpus") or []) or 1
    gpus = int(workload.get("gpus") or gpu_count)
    interval = checkpoint_interval_s(workload)
    workload_bytes = workload.get("checkpoint_bytes")
    projections = []
    for outcome in results:
        projected_write = workload_bytes / outcome["write_bytes_per_s"] if workload_bytes else None
        projected_read = workload_bytes / outcome["read_bytes_per_s"] if workload_bytes else None
        projections.append({
            "target": outcome["name"],
            "workload_checkpoint_bytes": workload_bytes,
            "projected_write_s": projected_write,
            "projected_read_s": projected_read,
            "lost_work": lost_work(interval, gpus, restore_s=projected_read, write_s=projected_write),
        })
    result = {
        "schema": SCHEMA,
        "label": device,
        "proxy": {"kind": "mlp", "width": width, "depth": depth, "parameters": parameters,
                  "dtype": "float32", "optimizer": "torch.optim.AdamW",
                  "state_bytes_estimate": parameters * _ADAM_BYTES_PER_PARAM},
        "targets": results,
        "verified": bool(results) and all(outcome["verified"] for outcome in results),
        "workload": workload,
        "projections": projections,
        "hash": "sha256 over model then optimizer state: sorted names; name|dtype|shape|bytes per tensor; "
                "optimizer hyper-parameters as sorted JSON",
    }
    ctx.add_artifact(json.dumps(result, indent=2, sort_keys=True).encode(), "checkpoint.json", "application/json")
    ctx.progress(1.0, "done")
    return result


if __name__ == "__main__":
    _role, _config_path = sys.argv[1], Path(sys.argv[2])
    _config = json.loads(_config_path.read_text())
    {"train": trainer_main, "restore": restorer_main}[_role](_config)
