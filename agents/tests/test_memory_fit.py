"""The memory_fit job: spec checks, the search, the comparison with the prediction, the probe runner's verdicts, and
the job end to end on the CPU with an address-space limit (RLIMIT_AS) forcing real out-of-memory failures."""

import json
import math
import os
import subprocess
import sys
from types import SimpleNamespace

import fake_pynvml
import pytest
from dossier_agent.context import JobContext
from dossier_agent.errors import JobCancelled
from dossier_agent.event_writer import EventWriter
from dossier_agent.jobs import memory_fit
from dossier_agent.jobs.memory_fit import MemoryFitSpecError, compare, parse_spec, resolve_device, run_search
from dossier_agent.probe import NvmlProcessMemory, probe_environment, run_probe
from dossier_agent.proxies.shape import ProxyShape, total_parameters
from dossier_agent.spool import Spool

MIB = 2**20
# Per request 2·L·n_kv·d·4 bytes·512 tokens = 8 MiB of fp32 KV cache, against little compute: quick probes whose
# footprint grows by whole pages.
KV_HEAVY = {"num_layers": 2, "hidden_size": 256, "num_attention_heads": 4, "num_kv_heads": 4, "head_dim": 256,
            "ffn_size": 512, "vocab_size": 512, "precision": "fp32"}
TINY = {"num_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "num_kv_heads": 2, "ffn_size": 128,
        "vocab_size": 256, "precision": "bf16"}
INFERENCE = {"p95_context_tokens": 512, "concurrent_sessions": 2, "decode_steps": 4, "max_batched_tokens": 512}
CPU_INVENTORY = {"gpu_present": False, "gpus": [], "gpu_error": "NVML Shared Library Not Found", "software": {}}


def _spec(**changes):
    return {"model": TINY, "device": "cpu", "inference": INFERENCE,
            "search": {"address_space_limit_bytes": 8 * 2**30}, **changes}


def _context(tmp_path, *, cancelled=lambda: False):
    attempt = Spool(tmp_path / "spool").create_attempt({
        "job_id": None, "attempt": None, "job_token": None, "kind": "memory_fit", "spec": {},
        "offline_run_id": "test",
    })
    events = EventWriter(attempt)
    context = JobContext(job_id="offline-test", attempt=1, kind="memory_fit", spec={}, workdir=tmp_path / "work",
                         inventory=CPU_INVENTORY, events=events, spool=attempt, is_cancelled=cancelled)
    return context, attempt, events


def _events(attempt, events):
    events.close()
    return [event for path in attempt.pending_event_batches() for event in json.loads(path.read_text())["events"]]


# ----------------------------------------------------------------------------------------------------------------------
# Spec
# ----------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"workload": "serving"}, "workload must be inference or training"),
        ({"model": {**TINY, "kv_lora_rank": 64}}, "model.qk_rope_head_dim"),
        ({"inference": {**INFERENCE, "p95_context_tokens": 0}}, "inference.p95_context_tokens"),
        ({"inference": {**INFERENCE, "kv_cache_precision": "nf4"}}, "kv_cache_precision"),
        ({"workload": "training", "training": {"sequence_length": 64, "method": "dora"}}, "training.method"),
        ({"workload": "training", "model": {**TINY, "precision": "nf4"}, "training": {"sequence_length": 64}},
         "use training.method lora or qlora"),
        ({"device": "tpu"}, "device must be auto, cuda or cpu"),
        ({"device": "cuda", "search": {"address_space_limit_bytes": 2**30}}, "CPU probes only"),
        ({"search": {"minimum": 9, "maximum": 4}}, "minimum exceeds"),
        ({"predicted": [1, 2]}, "breakdown object"),
    ],
)
def test_a_bad_spec_names_what_is_wrong(changes, fragment):
    with pytest.raises(MemoryFitSpecError) as excinfo:
        parse_spec(_spec(**changes), CPU_INVENTORY)
    assert fragment in str(excinfo.value)


def test_auto_takes_the_gpu_only_when_nvml_sees_one_and_torch_has_cuda():
    gpu = {"gpu_present": True, "gpus": [{"index": 0}], "software": {"torch_cuda_version": "12.8"}}
    assert resolve_device("auto", gpu)[0] == "cuda"
    assert resolve_device("auto", {**gpu, "software": {"torch_cuda_version": None}}) == (
        "cpu", "auto: NVML reports a GPU but the installed torch has no CUDA build")
    device, reason = resolve_device("auto", CPU_INVENTORY)
    assert device == "cpu" and "NVML Shared Library Not Found" in reason


def test_a_cpu_plan_is_always_capped_by_an_address_space_limit():
    plan = parse_spec(_spec(search={}), CPU_INVENTORY)
    assert plan.search.address_space_limit_bytes > 0
    assert plan.search.address_space_limit_source == "the host's available memory when the job started"


# ----------------------------------------------------------------------------------------------------------------------
# Search (simulated device: footprint = base + n·per, capacity from the address-space limit)
# ----------------------------------------------------------------------------------------------------------------------


def _simulated(base: int, per: int, capacity: int, *, report_footprints: bool = True, measured_slopes: bool = True):
    calls = []

    def runner(spec):
        n = spec["n"]
        calls.append(n)
        footprint = base + n * per
        fits = footprint <= capacity
        if not report_footprints:
            return {"n": n, "outcome": "ok" if fits else "oom", "totals": {}}
        return {"n": n, "outcome": "ok" if fits else "oom", "totals": {"footprint_bytes": footprint},
                "components": {"kv_cache": n * per} if measured_slopes else {}}

    return runner, calls


@pytest.mark.parametrize(("target", "capacity_n"), [(4, 37), (64, 37), (37, 37), (1, 500)])
def test_the_search_finds_the_largest_fitting_n_in_few_probes(target, capacity_n):
    base, per = 700 * MIB, 3 * MIB
    capacity = base + capacity_n * per + per // 2
    plan = parse_spec(_spec(inference={**INFERENCE, "concurrent_sessions": target},
                            search={"address_space_limit_bytes": capacity, "max_probes": 6, "maximum": 1024}))
    runner, calls = _simulated(base, per, capacity)
    search = run_search(plan, runner)
    assert search["state"].fits == capacity_n
    assert search["state"].fails == capacity_n + 1
    assert calls[0] == target and len(set(calls)) == len(calls) <= 4


def test_without_footprints_the_search_bisects_and_never_repeats_a_probe():
    capacity = 700 * MIB + 23 * MIB
    plan = parse_spec(_spec(inference={**INFERENCE, "concurrent_sessions": 100},
                            search={"address_space_limit_bytes": capacity, "max_probes": 12, "maximum": 1024}))
    runner, calls = _simulated(700 * MIB, MIB, capacity, report_footprints=False)
    search = run_search(plan, runner)
    assert (search["state"].fits, search["state"].fails) == (23, 24)
    assert calls[:3] == [100, 50, 25] and len(set(calls)) == len(calls) <= math.ceil(math.log2(100)) + 1


def test_the_search_stops_at_its_probe_budget_and_at_its_maximum():
    capacity = 700 * MIB + 500 * MIB
    plan = parse_spec(_spec(inference={**INFERENCE, "concurrent_sessions": 2},
                            search={"address_space_limit_bytes": capacity, "max_probes": 3, "maximum": 1024}))
    runner, calls = _simulated(700 * MIB, MIB, capacity, report_footprints=False)
    assert len(run_search(plan, runner)["probes"]) == 3 and calls == [2, 4, 8]
    plan = parse_spec(_spec(inference={**INFERENCE, "concurrent_sessions": 2},
                            search={"address_space_limit_bytes": capacity, "max_probes": 6, "maximum": 16}))
    runner, calls = _simulated(700 * MIB, MIB, capacity)
    state = run_search(plan, runner)["state"]
    assert state.fits == 16 and state.fails is None and calls[-1] == 16


def test_the_prediction_seeds_the_extrapolation_until_two_probes_fit():
    base, per = 700 * MIB, 5 * MIB
    capacity = base + 80 * per
    predicted = {"total_bytes": 0, "terms": [{"name": "kv_cache", "size_bytes": 4 * per}]}  # 4 sessions
    plan = parse_spec(_spec(inference={**INFERENCE, "concurrent_sessions": 4}, predicted=predicted,
                            search={"address_space_limit_bytes": capacity, "max_probes": 6, "maximum": 1024}))
    runner, calls = _simulated(base, per, capacity, measured_slopes=False)
    assert run_search(plan, runner)["state"].fits == 80
    assert calls[:2] == [4, 80]


def test_a_failing_first_probe_fails_the_job_and_a_later_one_stops_the_search():
    plan = parse_spec(_spec(search={"address_space_limit_bytes": 2**31, "max_probes": 6}))
    with pytest.raises(RuntimeError, match="first memory probe"):
        run_search(plan, lambda spec: {"n": spec["n"], "outcome": "error", "error": {"message": "boom"}})

    def runner(spec):
        outcome = "ok" if spec["n"] == 2 else "crashed"
        return {"n": spec["n"], "outcome": outcome, "error": {"message": "segfault"}, "totals": {}}

    search = run_search(plan, runner)
    assert search["stopped"] == "probe n=4 crashed: segfault" and len(search["probes"]) == 2


def test_a_cancelled_job_stops_before_the_next_probe():
    plan = parse_spec(_spec())
    with pytest.raises(JobCancelled):
        run_search(plan, lambda spec: pytest.fail("no probe may start"), cancelled=lambda: True)


# ----------------------------------------------------------------------------------------------------------------------
# Comparison
# ----------------------------------------------------------------------------------------------------------------------


def test_the_comparison_sets_each_measured_component_beside_its_prediction():
    predicted = {"total_bytes": 1100, "terms": [
        {"name": "weights", "size_bytes": 400}, {"name": "kv_cache", "size_bytes": 300},
        {"name": "activation_peak", "size_bytes": 100}, {"name": "cuda_runtime", "size_bytes": 200},
        {"name": "safety_margin", "size_bytes": 100},
    ]}
    plan = parse_spec(_spec(predicted=predicted))
    probe = {"components": {"weights": 410, "kv_cache": 300, "activation_peak": 150, "runtime_baseline": 90},
             "totals": {"footprint_bytes": 1200, "footprint_source": "cpu-process-address-space (VmPeak)"}}
    rows = {row["component"]: row for row in compare(plan, probe, 10_000)}
    assert rows["weights"]["error_pct"] == 2.5
    assert rows["kv_cache"]["error_pct"] == 0.0
    assert rows["activation_peak"]["error_pct"] == 50.0
    assert rows["cuda_runtime"]["measured_bytes"] is None
    assert "not measurable on the CPU" in rows["cuda_runtime"]["note"]
    assert rows["total_without_margin"]["predicted_bytes"] == 1000
    assert rows["total_without_margin"]["error_pct"] == 20.0


def test_training_compares_lora_base_and_adapters_apart():
    predicted = {"total_bytes": 0, "terms": [
        {"name": "frozen_base_weights", "size_bytes": 1000}, {"name": "weights", "size_bytes": 20},
        {"name": "gradients", "size_bytes": 20}, {"name": "optimizer_states", "size_bytes": 120},
        {"name": "activations", "size_bytes": 300}, {"name": "output_activations", "size_bytes": 100},
    ]}
    plan = parse_spec(_spec(workload="training", predicted=predicted,
                            training={"sequence_length": 64, "method": "lora"}))
    probe = {"components": {"weights": 1000, "adapters": 25, "gradients": 20, "optimizer_states": 120,
                            "activations": 500}, "totals": {}}
    rows = {row["component"]: row for row in compare(plan, probe, None)}
    assert rows["weights"]["predicted_terms"] == ["frozen_base_weights"]
    assert rows["adapters"]["error_pct"] == 25.0
    assert rows["activations"]["predicted_bytes"] == 400 and rows["activations"]["error_pct"] == 25.0


# ----------------------------------------------------------------------------------------------------------------------
# The probe runner
# ----------------------------------------------------------------------------------------------------------------------


def _probe_spec(n=1, **changes):
    return {"model": TINY, "device": "cpu", "workload": "inference", "n": n,
            "inference": {"context_tokens": 64, "decode_steps": 2, "max_batched_tokens": 64}, **changes}


def test_a_probe_past_its_timeout_is_killed_and_recorded_as_a_timeout():
    record = run_probe(_probe_spec(), timeout_s=0.3)
    assert record["outcome"] == "timeout" and record["wall_s"] < 5


@pytest.mark.parametrize(
    ("script", "outcome"),
    [
        ("kill -9 $$", "oom"),  # SIGKILL from outside: the kernel's OOM killer
        ("echo 'terminate called after throwing an instance of std::bad_alloc' >&2; exit 134", "oom"),
        ("echo 'Segmentation fault' >&2; exit 139", "crashed"),
    ],
)
def test_a_probe_that_dies_without_a_report_is_classified(tmp_path, script, outcome):
    fake_python = tmp_path / "python"
    fake_python.write_text(f"#!/bin/sh\ncat > /dev/null\n{script}\n")
    fake_python.chmod(0o755)
    record = run_probe(_probe_spec(), timeout_s=20, python=str(fake_python))
    assert record["outcome"] == outcome and record["error"]["type"] == "ProbeDied"


def test_a_training_probe_measures_model_states_gradients_and_activations():
    model = {**KV_HEAVY, "precision": "bf16"}  # tensors above the mmap threshold: resident bytes track them
    record = run_probe(_probe_spec(2, model=model, workload="training",
                                   # long enough that the activations saved for backward outweigh the gradients:
                                   # with 32 tokens they were smaller, and the peak could be the gradients' level
                                   training={"sequence_length": 256, "steps": 1}),
                       timeout_s=120, address_space_limit=8 * 2**30)
    assert record["outcome"] == "ok", record
    components, details = record["components"], record["details"]
    params = details["proxy_parameters"]
    assert params == total_parameters(ProxyShape.from_spec(model))
    assert details["optimizer_state_tensor_bytes"] == 12 * params  # bf16 model: fp32 master + two fp32 moments
    # Resident memory also holds allocator and page overhead: within 5 % (8 or 16 bytes/param would be 33 % off).
    assert abs(components["optimizer_states"] - 12 * params) < 0.05 * 12 * params
    assert components["gradients"] > 0 and components["activations"] > components["gradients"]
    assert details["labels"]["weights_storage"].startswith("bf16 tensors")


def test_the_module_imports_without_torch_and_the_registry_offers_it():
    blocked = ("import sys; sys.modules['torch'] = None; import dossier_agent.jobs.memory_fit as job; "
               "print(job.KIND, job.REQUIRES)")
    completed = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, timeout=60,
                               check=False, env=probe_environment())
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == ["memory_fit", "('torch',)"]
    from dossier_agent.jobs.registry import discover

    registry = discover()
    assert "memory_fit" in registry.offered()
    assert registry.get("memory_fit").self_test_spec == memory_fit.SELF_TEST_SPEC


# ----------------------------------------------------------------------------------------------------------------------
# End to end: run(spec, ctx) on the CPU, an address-space limit forcing OOMs
# ----------------------------------------------------------------------------------------------------------------------


def test_rlimit_as_ooms_are_recorded_the_search_goes_on_and_finds_the_extrapolated_concurrency(tmp_path):
    model_spec = {"model": KV_HEAVY, "device": "cpu", "workload": "inference",
                  "inference": {"context_tokens": 512, "decode_steps": 4, "max_batched_tokens": 512}}
    # Two probes' measured footprints (their address space, which RLIMIT_AS limits): base + n · per-request.
    footprints = {}
    for n in (1, 2):
        record = run_probe({**model_spec, "n": n}, timeout_s=120, address_space_limit=8 * 2**30)
        assert record["outcome"] == "ok", record
        footprints[n] = record["totals"]["address_space_peak_bytes"]
    per_request = footprints[2] - footprints[1]
    base = footprints[1] - per_request
    kv_per_request = ProxyShape.from_spec(KV_HEAVY).kv_cache_bytes_per_request(512, "fp32")
    assert abs(per_request - kv_per_request) < 0.05 * kv_per_request  # the increase is the request's KV cache
    limit = base + per_request * 7 + per_request // 2
    expected = math.floor((limit - base) / per_request)
    assert expected == 7

    spec = {"model": KV_HEAVY, "device": "cpu",
            "inference": {"p95_context_tokens": 512, "concurrent_sessions": 12, "decode_steps": 4,
                          "max_batched_tokens": 512},
            "search": {"max_probes": 6, "maximum": 32, "probe_timeout_s": 120, "address_space_limit_bytes": limit}}
    context, attempt, events = _context(tmp_path)
    result = memory_fit.run(spec, context)

    probes = result["probes"]
    assert probes[0]["n"] == 12 and probes[0]["outcome"] == "oom"  # the target does not fit under the limit
    assert "allocate" in probes[0]["error"]["message"] or probes[0]["error"]["type"] in ("MemoryError", "ImportError")
    assert len(probes) > 1 and any(probe["outcome"] == "ok" for probe in probes[1:])  # the search went on
    assert result["oom_count"] == sum(1 for probe in probes if probe["outcome"] == "oom") >= 2
    assert abs(result["largest_fitting"]["value"] - expected) <= 1
    assert result["largest_fitting"]["exact"] is True
    assert result["fits_at_target"] is False and result["comparison"] is None
    assert result["usable_memory"]["total_bytes"] == limit
    assert "RLIMIT_AS" in result["usable_memory"]["source"]
    assert result["labels"]["device_kind"] == "cpu" and result["labels"]["memory_accounting"] == "cpu-process-rss"
    assert result["labels"]["model_source"] == "proxy"

    measurements = [event for event in _events(attempt, events) if event["kind"] == "measurement"]
    assert [event["data"]["n"] for event in measurements] == [probe["n"] for probe in probes]
    (artifact,) = context.artifacts
    assert artifact["name"] == "memory_fit_probes.json" and artifact["sha256"] == result["probes_artifact_sha256"]
    stored = json.loads(attempt.artifact_path(artifact["sha256"]).read_bytes())
    assert [probe["outcome"] for probe in stored["probes"]] == [probe["outcome"] for probe in probes]


def test_a_fitting_target_is_compared_with_the_prediction_and_reports_its_headroom(tmp_path):
    kv = ProxyShape.from_spec(TINY).kv_cache_bytes_per_request(512, "bf16")
    predicted = {"total_bytes": 10**9, "terms": [
        {"name": "weights", "size_bytes": 100_000}, {"name": "kv_cache", "size_bytes": 2 * kv},
        {"name": "activation_peak", "size_bytes": 50_000}, {"name": "cuda_runtime", "size_bytes": 2**31},
        {"name": "safety_margin", "size_bytes": 10**8},
    ]}
    spec = {**_spec(predicted=predicted), "search": {"max_probes": 1, "address_space_limit_bytes": 4 * 2**30}}
    context, attempt, events = _context(tmp_path)
    result = memory_fit.run(spec, context)
    assert result["fits_at_target"] is True and result["probe_count"] == 1
    rows = {row["component"]: row for row in result["comparison"]}
    assert set(rows) == {"weights", "kv_cache", "activation_peak", "cuda_runtime", "total_without_margin"}
    assert rows["kv_cache"]["predicted_bytes"] == 2 * kv and rows["kv_cache"]["measured_bytes"] > 0
    assert result["headroom_bytes"] == 4 * 2**30 - result["peak_bytes"]
    assert result["safety_margin"]["predicted_margin_bytes"] == 10**8
    assert result["largest_fitting"]["value"] == 2 and result["largest_fitting"]["exact"] is False
    _events(attempt, events)


# ----------------------------------------------------------------------------------------------------------------------
# The GPU side without a GPU: NVML through the fake pynvml, the device's usable memory, the runtime row
# ----------------------------------------------------------------------------------------------------------------------


def test_nvml_gives_this_process_its_entry_or_the_device_delta(monkeypatch):
    state = fake_pynvml.install(monkeypatch, [fake_pynvml.FakeGpu(memory_used=600 * MIB)])
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    nvml = NvmlProcessMemory()
    assert nvml.error is None and nvml.name == "NVIDIA H200"
    assert nvml.total_bytes == 143771 * MIB and nvml.device_used_before == 600 * MIB
    state.gpus[0].memory_used += 900 * MIB  # the probe's CUDA context and tensors, seen device-wide
    assert nvml.used() == 900 * MIB and nvml.source == "nvml-device-delta"
    processes = [SimpleNamespace(pid=1, usedGpuMemory=5 * MIB), SimpleNamespace(pid=os.getpid(), usedGpuMemory=7 * MIB)]
    monkeypatch.setattr(fake_pynvml, "nvmlDeviceGetComputeRunningProcesses", lambda handle: processes, raising=False)
    assert nvml.used() == 7 * MIB and nvml.source == "nvml-process"


def test_without_nvml_the_probe_keeps_the_reason(monkeypatch):
    fake_pynvml.install(monkeypatch, init_error=fake_pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    nvml = NvmlProcessMemory()
    assert not nvml.available and nvml.used() is None
    assert nvml.error == "NVMLError: NVML Shared Library Not Found"


def test_a_gpu_result_reports_the_nvml_total_and_the_runtime_beyond_torchs_tensors():
    plan = parse_spec(_spec(device="cuda", search={}, predicted={"total_bytes": 0, "terms": [
        {"name": "cuda_runtime", "size_bytes": 2 * 2**30}]}))
    probe = {"n": 2, "outcome": "ok", "components": {"weights": 1},
             "totals": {"footprint_bytes": 20 * 2**30, "torch_allocated_peak_bytes": 19 * 2**30},
             "device_info": {"nvml_total_bytes": 143771 * MIB, "nvml_used_by_others_bytes": 512 * MIB,
                             "nvml_name": "NVIDIA H200", "total_memory_bytes": 150_000_000_000}}
    usable = memory_fit.usable_memory(plan, [probe], {})
    assert usable["total_mib"] == 143771 and usable["source"].startswith("nvml")
    assert memory_fit.search_capacity(plan, probe) == (143771 - 512) * MIB
    rows = {row["component"]: row for row in compare(plan, probe, usable["total_bytes"])}
    assert rows["cuda_runtime"]["measured_bytes"] == 2**30 and rows["cuda_runtime"]["error_pct"] == -50.0
    inventory = {"gpus": [{"name": "NVIDIA H200", "memory_total_mib": 143771}]}
    assert memory_fit.usable_memory(plan, [], inventory)["source"] == "nvml: the agent's inventory (memory_total_mib)"
