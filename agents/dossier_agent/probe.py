"""One memory probe in its own process: `python -m dossier_agent.probe [--address-space-limit BYTES] < spec.json`.

The probe builds the proxy, or loads the node's own checkpoint when the spec holds `exact_model`
(`dossier_agent.exact_model`: transformers, local files only), runs one inference pass (KV cache for every
request at the full context, the engine's peak prefill step, a few decode steps) or a few training steps (forward,
backward, AdamW with fp32 master weights) at the spec's concurrency or micro-batch `n`, and prints one line
`DOSSIER_PROBE_RESULT {json}` on stdout. It never raises: an allocation failure (torch OOM, MemoryError, an
ENOMEM from the allocator or from mapping a library) is reported as `"outcome": "oom"` with the phase it hit.

Each probe is its own process so an OOM cannot poison the next one (a CUDA OOM can leave the caching allocator
fragmented; a CPU process that hit its address-space limit keeps its mappings) and the CUDA context is measured fresh.

Memory accounting:
- on a GPU: torch's allocated and reserved bytes per phase (peaks reset per phase), the CUDA context (NVML's figure
  for this process after CUDA initialisation minus what torch reserved), an NVML sampler for the process's peak,
  and `torch.cuda.memory_stats()` fragmentation signals;
- on the CPU: the process's resident memory (`VmRSS`, with `VmHWM` reset per phase through /proc/self/clear_refs)
  labelled `cpu-process-rss`, and its address space (`VmPeak`), which is what RLIMIT_AS limits.

The runner side (`run_probe`) starts the process with the allocator and thread settings that make its footprint
repeatable (one malloc arena, a fixed mmap threshold, one BLAS/OpenMP thread by default), enforces a timeout by
killing the process group, and classifies what came back. The address-space limit is applied by the probe process
itself with `resource.setrlimit` as its first statement, before torch is imported: the agent's job process has
threads (event flusher, telemetry), and a `preexec_fn` between fork and exec is not safe in a threaded parent.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dossier_agent.exact_model import OFFLINE_ENVIRONMENT

RESULT_MARKER = "DOSSIER_PROBE_RESULT "
MIB = 2**20
OOM_MESSAGES = (
    "out of memory",
    "can't allocate memory",
    "cannot allocate memory",
    "failed to map segment",
    "std::bad_alloc",
    "memoryerror",
    "outofmemoryerror",
)


def is_oom_text(text: str) -> bool:
    lowered = text.lower()
    return any(message in lowered for message in OOM_MESSAGES)


def is_oom_error(error: BaseException) -> bool:
    if isinstance(error, MemoryError):
        return True
    if isinstance(error, OSError) and error.errno == errno.ENOMEM:
        return True
    name = type(error).__name__
    if name in ("OutOfMemoryError", "OOMError"):
        return True
    return is_oom_text(f"{name}: {error}")


# ----------------------------------------------------------------------------------------------------------------------
# Process memory (CPU)
# ----------------------------------------------------------------------------------------------------------------------


def read_proc_status() -> dict[str, int]:
    """VmRSS, VmHWM, VmSize, VmPeak of this process in bytes (empty where /proc is missing)."""
    values: dict[str, int] = {}
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "VmHWM", "VmSize", "VmPeak"):
                    values[key] = int(rest.split()[0]) * 1024
    except OSError:
        pass
    return values


def reset_resident_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux ≥ 4.0: write 5 to /proc/self/clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


class CpuMeter:
    kind = "cpu"

    def __init__(self, address_space_limit: int | None):
        self.address_space_limit = address_space_limit
        self.accounting = "cpu-process-rss"
        self.window_resets = True

    def start(self) -> None:
        self.window_resets = reset_resident_peak()

    def current(self) -> int:
        return read_proc_status().get("VmRSS", 0)

    def begin_window(self) -> None:
        if not reset_resident_peak():
            self.window_resets = False

    def window_peak(self) -> int:
        status = read_proc_status()
        if self.window_resets:
            return status.get("VmHWM", 0)
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    def snapshot(self) -> dict[str, Any]:
        status = read_proc_status()
        return {
            "rss_bytes": status.get("VmRSS"),
            "rss_window_peak_bytes": status.get("VmHWM"),
            "address_space_bytes": status.get("VmSize"),
            "address_space_peak_bytes": status.get("VmPeak"),
        }

    def totals(self) -> dict[str, Any]:
        status = read_proc_status()
        rss_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        limited = self.address_space_limit is not None
        return {
            "rss_peak_bytes": rss_peak,
            "address_space_peak_bytes": status.get("VmPeak"),
            "address_space_limit_bytes": self.address_space_limit,
            # What the capacity limits: the address space under RLIMIT_AS, else resident memory.
            "footprint_bytes": status.get("VmPeak") if limited else rss_peak,
            "footprint_source": "cpu-process-address-space (VmPeak)" if limited else "cpu-process-rss (ru_maxrss)",
        }

    def finish(self) -> None:
        return None


# ----------------------------------------------------------------------------------------------------------------------
# Device memory (CUDA + NVML)
# ----------------------------------------------------------------------------------------------------------------------


class NvmlProcessMemory:
    """This process's memory on one GPU through NVML: its entry in the running-process list, else (containers with
    their own PID namespace) the device's used memory minus what was used before this process touched CUDA."""

    def __init__(self) -> None:
        self.nvml = None
        self.handle = None
        self.error: str | None = None
        self.device_used_before: int | None = None
        self.source: str | None = None
        self.total_bytes: int | None = None
        self.name: str | None = None
        self.uuid: str | None = None
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handle = self._handle()
            memory = pynvml.nvmlDeviceGetMemoryInfo(self.handle)
            self.total_bytes, self.device_used_before = int(memory.total), int(memory.used)
            self.name = _text(pynvml.nvmlDeviceGetName(self.handle))
            self.uuid = _text(pynvml.nvmlDeviceGetUUID(self.handle))
        except Exception as error:  # no NVML means torch figures only, with the reason kept
            self.error = f"{type(error).__name__}: {error}"
            self.nvml = self.handle = None

    def _handle(self):
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
        if visible.startswith(("GPU-", "MIG-")):
            return self.nvml.nvmlDeviceGetHandleByUUID(visible)
        index = int(visible) if visible.isdigit() else 0
        return self.nvml.nvmlDeviceGetHandleByIndex(index)  # CUDA_DEVICE_ORDER=PCI_BUS_ID makes the orders agree

    @property
    def available(self) -> bool:
        return self.handle is not None

    def used(self) -> int | None:
        if self.handle is None:
            return None
        pid = os.getpid()
        for function_name in ("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses"):
            function = getattr(self.nvml, function_name, None)
            if function is None:
                continue
            try:
                processes = function(self.handle)
            except self.nvml.NVMLError:
                continue
            for process in processes:
                if process.pid == pid and process.usedGpuMemory is not None:
                    self.source = "nvml-process"
                    return int(process.usedGpuMemory)
            break
        try:
            used = int(self.nvml.nvmlDeviceGetMemoryInfo(self.handle).used)
        except self.nvml.NVMLError:
            return None
        self.source = "nvml-device-delta"
        return used - (self.device_used_before or 0)


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


class CudaMeter:
    kind = "cuda"
    accounting = "torch-cuda-allocator+nvml"

    def __init__(self, sample_interval_s: float = 0.005):
        self.nvml = NvmlProcessMemory()  # before CUDA is initialised: the device's used memory without us
        self.sample_interval_s = sample_interval_s
        self.nvml_peak = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.context_bytes: int | None = None
        self.window_maxima = {"allocated": 0, "reserved": 0}
        self.torch = None
        self.device_properties: dict[str, Any] = {}

    def start(self) -> None:
        import torch

        self.torch = torch
        torch.cuda.init()
        torch.cuda.set_device(0)
        torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
        properties = torch.cuda.get_device_properties(0)
        self.device_properties = {
            "name": properties.name,
            "total_memory_bytes": int(properties.total_memory),
            "uuid": str(getattr(properties, "uuid", "")) or None,
        }
        used = self.nvml.used()
        if used is not None:
            self.context_bytes = used - torch.cuda.memory_reserved()
            self.nvml_peak = used
        if self.nvml.available:
            self._thread = threading.Thread(target=self._sample, name="nvml-peak", daemon=True)
            self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(self.sample_interval_s):
            used = self.nvml.used()
            if used is not None and used > self.nvml_peak:
                self.nvml_peak = used

    def current(self) -> int:
        self.torch.cuda.synchronize()
        return self.torch.cuda.memory_allocated()

    def begin_window(self) -> None:
        self.torch.cuda.synchronize()
        self._fold_window()
        self.torch.cuda.reset_peak_memory_stats()

    def _fold_window(self) -> None:
        self.window_maxima["allocated"] = max(self.window_maxima["allocated"], self.torch.cuda.max_memory_allocated())
        self.window_maxima["reserved"] = max(self.window_maxima["reserved"], self.torch.cuda.max_memory_reserved())

    def window_peak(self) -> int:
        self.torch.cuda.synchronize()
        return self.torch.cuda.max_memory_allocated()

    def snapshot(self) -> dict[str, Any]:
        cuda = self.torch.cuda
        cuda.synchronize()
        used = self.nvml.used()
        if used is not None:
            self.nvml_peak = max(self.nvml_peak, used)
        return {
            "allocated_bytes": cuda.memory_allocated(),
            "reserved_bytes": cuda.memory_reserved(),
            "window_peak_allocated_bytes": cuda.max_memory_allocated(),
            "window_peak_reserved_bytes": cuda.max_memory_reserved(),
            "nvml_process_bytes": used,
        }

    def finish(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1)
        if self.torch is not None:
            self.torch.cuda.synchronize()
            self._fold_window()

    def fragmentation(self) -> dict[str, Any]:
        stats = self.torch.cuda.memory_stats()
        keys = (
            "num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free",
            "allocated_bytes.all.peak", "reserved_bytes.all.peak", "active_bytes.all.peak",
            "inactive_split_bytes.all.peak", "inactive_split_bytes.all.current", "requested_bytes.all.peak",
            "num_sync_all_streams", "max_split_size",
        )
        signals = {key: stats.get(key) for key in keys if key in stats}
        signals["reserved_minus_allocated_at_peaks_bytes"] = (
            self.window_maxima["reserved"] - self.window_maxima["allocated"]
        )
        return signals

    def totals(self) -> dict[str, Any]:
        reserved_peak = self.window_maxima["reserved"]
        context = self.context_bytes or 0
        from_torch = reserved_peak + context
        nvml_peak = self.nvml_peak if self.nvml.available else None
        footprint = max(from_torch, nvml_peak or 0)
        return {
            "torch_allocated_peak_bytes": self.window_maxima["allocated"],
            "torch_reserved_peak_bytes": reserved_peak,
            "cuda_context_bytes": self.context_bytes,
            "nvml_process_peak_bytes": nvml_peak,
            "nvml_source": self.nvml.source,
            "nvml_error": self.nvml.error,
            "nvml_total_bytes": self.nvml.total_bytes,
            "footprint_bytes": footprint,
            "footprint_source": "nvml process peak (sampled)" if nvml_peak and nvml_peak >= from_torch
            else "torch reserved peak + CUDA context",
        }


# ----------------------------------------------------------------------------------------------------------------------
# The probe body
# ----------------------------------------------------------------------------------------------------------------------


class Recorder:
    """Phases with their snapshots, the component sizes and where the probe got to."""

    def __init__(self, meter):
        self.meter = meter
        self.began = time.monotonic()
        self.phases: list[dict[str, Any]] = []
        self.components: dict[str, int] = {}
        self.details: dict[str, Any] = {}
        self.phase = "start"

    def enter(self, phase: str) -> None:
        self.phase = phase

    def mark(self, phase: str, **extra: Any) -> None:
        self.phases.append({"phase": phase, "t_s": round(time.monotonic() - self.began, 3),
                            **self.meter.snapshot(), **extra})


def _setup_torch(spec: dict[str, Any]):
    import torch

    threads = int(spec.get("threads") or 1)
    torch.set_num_threads(threads)
    return torch


def _inference(torch, model, spec: dict[str, Any], n: int, recorder: Recorder) -> None:
    from dossier_agent.proxies.shape import default_kv_precision
    from dossier_agent.proxies.weights import DTYPES

    meter = recorder.meter
    settings = spec.get("inference") or {}
    context = int(settings["context_tokens"])
    shape = model.shape
    generator = torch.Generator(device=model.embedding.device if hasattr(model, "embedding")
                                else model.position_table.device)
    generator.manual_seed(int(spec.get("seed", 0)) + 1)
    if model.kind == "decoder":
        kv_precision = settings.get("kv_cache_precision") or default_kv_precision(shape.precision)
        kv_dtype = {**DTYPES, "fp8": torch.float8_e4m3fn, "int8": torch.int8}[kv_precision]
        block = int(settings.get("block_size_tokens") or 16)
        decode_steps = max(0, min(int(settings.get("decode_steps", 4)), context - 1))
        prompt = context - decode_steps
        budget = int(settings.get("max_batched_tokens") or 8192)
        before = meter.current()
        recorder.enter("kv_cache")
        cache = model.allocate_cache(n, context, block, kv_dtype)
        recorder.components["kv_cache"] = meter.current() - before
        recorder.details.update(kv_cache_tensor_bytes=cache.nbytes, kv_cache_precision=kv_precision,
                                block_size_tokens=block)
        recorder.mark("kv_cache")
        # The engine's peak prefill step: whole prompts while they fit the token budget, else the last chunk of one
        # prompt (the longest key span); the cache's other positions stand for tokens prefilled in earlier steps.
        if prompt <= budget:
            rows, chunk, start = min(n, max(1, budget // prompt)), prompt, 0
        else:
            rows, chunk, start = 1, budget, prompt - budget
        recorder.details.update(prefill_rows=rows, prefill_tokens_per_row=chunk, prefill_start=start,
                                decode_steps=decode_steps, decode_batch=n)
        base = meter.current()
        meter.begin_window()
        recorder.enter("prefill")
        with torch.inference_mode():
            tokens = torch.randint(model.vocab_size, (rows, chunk), device=cache.layers[0].k.device,
                                   generator=generator)
            logits = model.prefill(tokens, cache, slice(0, rows), start)
            next_tokens = torch.softmax(logits, dim=-1).argmax(dim=-1)
            del logits
            recorder.enter("decode")
            for step in range(decode_steps):
                tokens = torch.randint(model.vocab_size, (n, 1), device=next_tokens.device, generator=generator)
                logits = model.decode(tokens, cache, prompt + step)
                next_tokens = torch.softmax(logits, dim=-1).argmax(dim=-1)
                del logits
        recorder.components["activation_peak"] = meter.window_peak() - base
        recorder.mark("run")
        del cache
        return
    before = meter.current()
    meter.begin_window()
    with torch.inference_mode():
        if model.kind == "encoder":
            budget = int(settings.get("max_batched_tokens") or 8192)
            rows = min(n, max(1, budget // context))
            recorder.details.update(batch_rows=rows, context_tokens=context)
            recorder.enter("encode")
            tokens = torch.randint(model.vocab_size, (rows, context), device=model.embedding.device,
                                   generator=generator)
            model.encode(tokens)
        else:
            steps = max(1, int((spec.get("diffusion") or {}).get("denoise_steps", 2)))
            recorder.details.update(batch=n, denoise_steps=steps, tokens=model.tokens)
            recorder.enter("denoise")
            patches, timesteps, labels = model.random_inputs(n, generator)
            for _ in range(steps):
                patches = patches - 0.1 * model(patches, timesteps, labels)[..., : patches.shape[-1]]
    recorder.components["kv_cache"] = 0
    recorder.components["activation_peak"] = meter.window_peak() - before
    recorder.mark("run")


def _training(torch, model, spec: dict[str, Any], n: int, recorder: Recorder, loss_function=None) -> None:
    from dossier_agent.proxies.optim import MasterWeightAdamW

    meter = recorder.meter
    settings = spec.get("training") or {}
    sequence = int(settings["sequence_length"])
    steps = max(1, int(settings.get("steps", 2)))
    recompute = settings.get("recompute", "none") == "full"
    before = meter.current()
    recorder.enter("optimizer_states")
    optimizer = MasterWeightAdamW(model.parameters())
    recorder.components["optimizer_states"] = meter.current() - before
    recorder.details.update(optimizer_state_tensor_bytes=optimizer.state_bytes, micro_batch_size=n,
                            sequence_length=sequence, steps=steps, recompute=settings.get("recompute", "none"))
    recorder.mark("optimizer_states")
    device = next(model.parameters()).device
    generator = torch.Generator(device=device)
    generator.manual_seed(int(spec.get("seed", 0)) + 2)
    activations = 0
    for step in range(steps):
        base = meter.current()
        meter.begin_window()
        recorder.enter(f"forward_backward_{step}")
        if loss_function is not None:
            loss = loss_function(n, sequence, generator)
        else:
            loss = model.training_loss(n, sequence, recompute=recompute, generator=generator)
        loss.backward()
        activations = max(activations, meter.window_peak() - base)
        if step == 0:
            recorder.components["gradients"] = meter.current() - base
            recorder.mark("backward", loss=float(loss.detach()))
        del loss
        recorder.enter(f"optimizer_step_{step}")
        optimizer.step()
        optimizer.zero_grad()
    recorder.components["activations"] = activations
    recorder.mark("run")


def _build(torch, spec: dict[str, Any], device, recorder: Recorder):
    from dossier_agent.proxies.build import ProxyPlan, adapter_parameters, attach_adapters, build_proxy
    from dossier_agent.proxies.shape import DiffusionGeometry, ProxyShape
    from dossier_agent.proxies.weights import logical_parameters, storage_bytes

    shape = ProxyShape.from_spec(spec["model"])
    training = spec.get("training") or {}
    workload = spec.get("workload", "inference")
    tokens = int((spec.get("inference") or {}).get("context_tokens") or training.get("sequence_length") or 256)
    plan = ProxyPlan(
        shape=shape,
        device=str(device),
        workload=workload,
        method=training.get("method", "full") if workload == "training" else "full",
        lora_rank=int(training.get("lora_rank", 16)),
        lora_targets=tuple(training.get("lora_targets") or ("q", "k", "v", "o", "gate", "up", "down")),
        double_quantisation=bool(training.get("double_quantisation", True)),
        geometry=DiffusionGeometry.from_spec(spec.get("diffusion")),
        tokens=tokens,
        seed=int(spec.get("seed", 0)),
    )
    meter = recorder.meter
    before = meter.current()
    recorder.enter("weights")
    model = build_proxy(plan, device, build_adapters=False)
    recorder.components["weights"] = meter.current() - before
    recorder.details.update(proxy_parameters=logical_parameters(model), proxy_weight_tensor_bytes=storage_bytes(model))
    recorder.mark("weights")
    if plan.uses_adapters:
        before = meter.current()
        recorder.enter("adapters")
        attach_adapters(model, plan, device)
        recorder.components["adapters"] = meter.current() - before
        recorder.details["adapter_parameters"] = adapter_parameters(model)
        recorder.mark("adapters")
    recorder.details["labels"] = {**plan.labels(), "model_source": "proxy", "architecture": shape.architecture,
                                  "proxy": type(model).__name__}
    return model


def _build_exact(torch, spec: dict[str, Any], device, recorder: Recorder):
    """The node's own checkpoint (`dossier_agent.exact_model`), loaded at the target precision and measured as the
    proxy's weights are."""
    from dossier_agent import exact_model
    from dossier_agent.proxies.shape import ProxyShape, compute_precision
    from dossier_agent.proxies.weights import DTYPES

    shape = ProxyShape.from_spec(spec["model"])
    dtype_name = compute_precision(shape.precision)
    meter = recorder.meter
    recorder.enter("import_transformers")
    exact_model.go_offline()
    import transformers

    _config, model_class = exact_model.prepare(torch, spec)
    before = meter.current()
    recorder.enter("weights")
    model = exact_model.load(torch, spec, device, DTYPES[dtype_name], model_class)
    recorder.components["weights"] = meter.current() - before
    parameters, tensor_bytes = exact_model.unique_parameters(model)
    recorder.details.update(exact_parameters=parameters, exact_weight_tensor_bytes=tensor_bytes,
                            exact_model_class=type(model).__name__, transformers_version=transformers.__version__)
    recorder.mark("weights")
    recorder.details["labels"] = {
        "model_source": "exact", "architecture": shape.architecture, "exact_model_class": type(model).__name__,
        "weights_storage": f"{dtype_name} tensors loaded from the checkpoint's safetensors (transformers "
                           f"{transformers.__version__}, local files only)",
        "compute_dtype": dtype_name, "layer_storage": "dense", "packed_4bit": False,
    }
    return model, DTYPES[dtype_name]


def run_probe_body(spec: dict[str, Any], recorder_holder: list) -> dict[str, Any]:
    """Everything that may run out of memory; the recorder survives in `recorder_holder` for the report."""
    device_kind = spec.get("device", "cpu")
    address_space_limit = spec.get("_address_space_limit")
    if device_kind == "cuda":
        meter = CudaMeter(float(spec.get("nvml_sample_interval_s", 0.005)))
    else:
        meter = CpuMeter(address_space_limit)
    recorder = Recorder(meter)
    recorder_holder.append(recorder)
    recorder.enter("import_torch")
    torch = _setup_torch(spec)
    recorder.enter("device_init")
    meter.start()
    recorder.mark("runtime")
    if device_kind == "cuda":
        recorder.components["cuda_context"] = meter.context_bytes
    else:
        recorder.components["runtime_baseline"] = meter.current()
    device = torch.device("cuda", 0) if device_kind == "cuda" else torch.device("cpu")
    n = int(spec["n"])
    training = spec.get("workload", "inference") == "training"
    if spec.get("exact_model"):
        from dossier_agent import exact_model

        model, dtype = _build_exact(torch, spec, device, recorder)
        if training:
            _training(torch, model, spec, n, recorder,
                      loss_function=exact_model.training_loss_function(torch, model, spec))
        else:
            exact_model.run_inference(torch, model, spec, n, recorder, _kv_dtype(torch, spec, dtype))
        return {"outcome": "ok"}
    model = _build(torch, spec, device, recorder)
    if training:
        _training(torch, model, spec, n, recorder)
    else:
        _inference(torch, model, spec, n, recorder)
    return {"outcome": "ok"}


def _kv_dtype(torch, spec: dict[str, Any], default):
    from dossier_agent.proxies.weights import DTYPES

    name = (spec.get("inference") or {}).get("kv_cache_precision")
    return DTYPES.get(name, default) if name else default


def execute(spec: dict[str, Any]) -> dict[str, Any]:
    began = time.monotonic()
    holder: list[Recorder] = []
    error_info = None
    try:
        outcome = run_probe_body(spec, holder)
    except BaseException as error:  # the probe reports every failure instead of dying with it
        phase = holder[0].phase if holder else "start"
        error_info = {"type": type(error).__name__, "message": str(error)[:2000], "phase": phase}
        outcome = {"outcome": "oom" if is_oom_error(error) else "error"}
        del error
    recorder = holder[0] if holder else None
    report: dict[str, Any] = {**outcome, "n": spec.get("n"), "device": spec.get("device", "cpu"), "error": error_info}
    if recorder is not None:
        meter = recorder.meter
        try:
            if "torch" in sys.modules and meter.kind == "cuda" and meter.torch is not None:
                sys.modules["torch"].cuda.empty_cache()
            meter.finish()
            report.update(accounting=meter.accounting, totals=meter.totals())
            if meter.kind == "cuda":
                report["fragmentation"] = meter.fragmentation()
                report["device_info"] = {
                    **meter.device_properties, "nvml_name": meter.nvml.name, "nvml_uuid": meter.nvml.uuid,
                    "nvml_total_bytes": meter.nvml.total_bytes,
                    "nvml_used_by_others_bytes": meter.nvml.device_used_before,
                }
        except BaseException as error:  # a broken device after an OOM still gets a report
            report["totals_error"] = f"{type(error).__name__}: {error}"
        report.update(components=recorder.components, details=recorder.details, phases=recorder.phases)
    report["duration_s"] = round(time.monotonic() - began, 3)
    return report


def _die_with_parent() -> None:
    from dossier_agent.job_worker import die_with_parent

    die_with_parent()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dossier_agent.probe")
    parser.add_argument("--address-space-limit", type=int, default=None, help="RLIMIT_AS for this process, bytes")
    arguments = parser.parse_args(argv)
    if arguments.address_space_limit:
        limit = arguments.address_space_limit
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    spec = json.loads(sys.stdin.read())
    spec["_address_space_limit"] = arguments.address_space_limit
    _die_with_parent()
    report = execute(spec)
    sys.stdout.write(RESULT_MARKER + json.dumps(report, default=str) + "\n")
    sys.stdout.flush()
    return 0


# ----------------------------------------------------------------------------------------------------------------------
# The runner (job process side: never imports torch)
# ----------------------------------------------------------------------------------------------------------------------


def probe_environment(threads: int = 1, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The probe's environment: the agent's source on PYTHONPATH (also when run from a source folder), one malloc
    arena and a fixed mmap threshold (large blocks map and unmap: repeatable address space and RSS), and the
    OpenMP/BLAS thread count."""
    import dossier_agent

    environment = dict(os.environ)
    package_parent = str(Path(dossier_agent.__file__).resolve().parent.parent)
    existing = environment.get("PYTHONPATH")
    environment["PYTHONPATH"] = package_parent + (os.pathsep + existing if existing else "")
    environment.update({
        "MALLOC_ARENA_MAX": "1",
        "MALLOC_MMAP_THRESHOLD_": "131072",
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "OPENBLAS_NUM_THREADS": str(threads),
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "PYTHONUNBUFFERED": "1",
    })
    environment.update(OFFLINE_ENVIRONMENT)  # an exact-model probe never reaches a model hub
    environment.update(extra or {})
    return environment


def _parse_report(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_MARKER):
            try:
                return json.loads(line[len(RESULT_MARKER):])
            except ValueError:
                return None
    return None


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()


def run_probe(
    spec: dict[str, Any],
    *,
    timeout_s: float,
    address_space_limit: int | None = None,
    threads: int = 1,
    cancelled: Callable[[], bool] | None = None,
    python: str | None = None,
    environment: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run one probe process and classify its end: ok | oom | timeout | cancelled | error | crashed."""
    command = [python or sys.executable, "-m", "dossier_agent.probe"]
    if address_space_limit:
        command += ["--address-space-limit", str(int(address_space_limit))]
    began = time.monotonic()
    process = subprocess.Popen(  # noqa: S603 - this interpreter and our own module, no shell
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=environment or probe_environment(threads), start_new_session=True,
    )
    pending_input: str | None = json.dumps(spec)
    stopped = None
    deadline = began + timeout_s
    while True:
        try:
            stdout, stderr = process.communicate(pending_input, timeout=0.25)
            break
        except subprocess.TimeoutExpired:
            pending_input = None
            if time.monotonic() >= deadline:
                stopped = "timeout"
            elif cancelled is not None and cancelled():
                stopped = "cancelled"
            if stopped:
                _kill_group(process)
                stdout, stderr = process.communicate()
                break
    wall_s = round(time.monotonic() - began, 3)
    report = _parse_report(stdout or "")
    stderr_tail = (stderr or "")[-4000:]
    if stopped:
        record = report or {"n": spec.get("n")}
        record.update(outcome=stopped, error={"type": stopped, "message": f"probe stopped: {stopped} after "
                                                                         f"{wall_s} s", "phase": None})
    elif report is not None:
        record = report
    else:
        code = process.returncode
        how = f"killed by {signal.Signals(-code).name}" if code < 0 and -code in signal.Signals._value2member_map_ \
            else f"exited with code {code}"
        # No report: the process died. SIGKILL from outside (the kernel's OOM killer) or allocator messages on
        # stderr mean memory; anything else is a crash.
        memory = code == -signal.SIGKILL or is_oom_text(stderr_tail)
        record = {"n": spec.get("n"), "outcome": "oom" if memory else "crashed",
                  "error": {"type": "ProbeDied", "message": f"the probe process {how} without a report",
                            "phase": None}}
    record.update(wall_s=wall_s, returncode=process.returncode, stderr_tail=stderr_tail or None,
                  address_space_limit_bytes=address_space_limit)
    return record


if __name__ == "__main__":
    sys.exit(main())
