"""Direct throughput of the phase-1 proxy, without a serving stack.

For a decoder shape (dense or MoE) at the target context: per batch size, one timed prefill of the prompt
(TTFT of the batch, prefill tokens/s) and `decode_steps` timed decode steps against the KV cache (TPOT per step,
decode tokens/s); for training workloads, timed optimiser steps (tokens/s and model FLOPs utilisation
6·P_active·tokens/s ÷ peak FLOP/s when the spec gives the device's peak). Steps are timed with CUDA events on a GPU
(perf_counter after a synchronise on the CPU). NVML's energy counter, when the GPU has one, gives tokens per joule.

The roofline beside each decode figure: a decode step must read every weight byte once and each request's KV
cache, so tokens/s ≤ batch × memory bandwidth ÷ (weight bytes + batch × KV bytes per request); given when the spec
carries the device's `memory_bandwidth_gb_s` (catalog datasheet figure, GB = 10⁹ bytes).

torch is imported inside the functions: the module itself imports with the standard library only.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

DEFAULTS = {"context_tokens": 2048, "batch_sizes": [1, 8, 32], "decode_steps": 32, "warmup_steps": 2,
            "device": "auto", "workload": "inference", "seed": 0}
MAX_BATCH_SIZES = 16
MAX_DECODE_STEPS = 4096


class DirectSpecError(ValueError):
    pass


def parse_direct(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Check `spec["direct"]` without torch: returns the settings with defaults filled in."""
    from dossier_agent.proxies.shape import ProxyShape, ProxyShapeError

    if not isinstance(spec, Mapping):
        raise DirectSpecError("direct must be an object")
    settings = DEFAULTS | dict(spec)
    try:
        shape = ProxyShape.from_spec(settings.get("model") or {})
    except ProxyShapeError as error:
        raise DirectSpecError(f"model.{error}") from None
    if shape.architecture not in ("dense", "moe"):
        raise DirectSpecError(f"direct throughput runs decoder proxies (dense, moe), not {shape.architecture}")
    batches = settings["batch_sizes"]
    if (not isinstance(batches, list) or not batches or len(batches) > MAX_BATCH_SIZES
            or not all(isinstance(b, int) and b >= 1 for b in batches)):
        raise DirectSpecError(f"batch_sizes must be 1 to {MAX_BATCH_SIZES} positive integers")
    for name, top in (("context_tokens", 1 << 21), ("decode_steps", MAX_DECODE_STEPS), ("warmup_steps", 100)):
        value = settings[name]
        if not isinstance(value, int) or not (0 if name == "warmup_steps" else 1) <= value <= top:
            raise DirectSpecError(f"{name} must be an integer up to {top}")
    if settings["decode_steps"] >= settings["context_tokens"]:
        raise DirectSpecError("decode_steps must be smaller than context_tokens (the prompt is the rest)")
    if settings["workload"] not in ("inference", "training"):
        raise DirectSpecError("workload must be inference or training")
    if settings["device"] not in ("auto", "cuda", "cpu"):
        raise DirectSpecError("device must be auto, cuda or cpu")
    training = dict(settings.get("training") or {})
    if settings["workload"] == "training":
        training = {"batch": 1, "sequence": min(settings["context_tokens"], 2048), "steps": 5, "recompute": False,
                    "method": "full"} | training
        if not all(isinstance(training[k], int) and training[k] >= 1 for k in ("batch", "sequence", "steps")):
            raise DirectSpecError("training.batch, training.sequence and training.steps must be positive integers")
    settings["training"] = training
    settings["shape"] = shape
    return settings


class _Timer:
    """Elapsed seconds of a region: CUDA events on a GPU, perf_counter after synchronising otherwise."""

    def __init__(self, torch, device):
        self.torch, self.cuda = torch, device.type == "cuda"

    def start(self):
        if self.cuda:
            event = self.torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def stop(self, began) -> float:
        if self.cuda:
            end = self.torch.cuda.Event(enable_timing=True)
            end.record()
            end.synchronize()
            return began.elapsed_time(end) / 1000.0
        return time.perf_counter() - began


def _energy_reader(device) -> Callable[[], float | None]:
    """Joules since the driver loaded (NVML), or a reader that returns None."""
    if device.type != "cuda":
        return lambda: None
    try:
        import pynvml

        pynvml.nvmlInit()
        index = device.index if device.index is not None else 0
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    except Exception:
        return lambda: None

    def read() -> float | None:
        try:
            return pynvml.nvmlDeviceGetTotalEnergyConsumption(handle) / 1000.0  # mJ → J
        except Exception:
            return None

    return read


def _per_joule(tokens: float, before: float | None, after: float | None) -> float | None:
    if before is None or after is None or after <= before:
        return None
    return tokens / (after - before)


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def roofline(shape, settings: Mapping[str, Any], batch: int, weight_bytes: int, kv_bytes_per_request: int
             ) -> dict[str, Any] | None:
    bandwidth = settings.get("memory_bandwidth_gb_s")
    if not bandwidth:
        return None
    step_bytes = weight_bytes + batch * kv_bytes_per_request
    tokens_per_s = batch * float(bandwidth) * 1e9 / step_bytes
    return {"bytes_per_step": step_bytes, "bytes_per_token": step_bytes / batch,
            "memory_bandwidth_gb_s": float(bandwidth), "decode_tokens_per_s_bound": tokens_per_s,
            "tpot_bound_s": 1.0 / (tokens_per_s / batch)}


def run_direct(settings: Mapping[str, Any], *, device_name: str, progress: Callable[[float, str], None] | None = None,
               cancelled: Callable[[], bool] | None = None) -> dict[str, Any]:
    import torch

    from dossier_agent.proxies.build import ProxyPlan, build_proxy
    from dossier_agent.proxies.shape import VLLM_BLOCK_SIZE_TOKENS, default_kv_precision
    from dossier_agent.proxies.weights import DTYPES, storage_bytes

    report = progress or (lambda fraction, message: None)
    cancelled = cancelled or (lambda: False)
    shape = settings["shape"]
    device = torch.device(device_name)
    torch.manual_seed(settings["seed"])
    plan = ProxyPlan(shape=shape, device=device_name, workload=settings["workload"],
                     method=settings["training"].get("method", "full"), seed=settings["seed"])
    model = build_proxy(plan, device)
    weight_bytes = storage_bytes(model)
    timer = _Timer(torch, device)
    energy = _energy_reader(device)
    result: dict[str, Any] = {
        "device": device_name, "torch": torch.__version__, "architecture": shape.architecture,
        "precision": shape.precision, "weight_bytes": weight_bytes, "context_tokens": settings["context_tokens"],
        "timing": "CUDA events" if device.type == "cuda" else "perf_counter after synchronise",
        "energy": "NVML total energy counter" if energy() is not None else None,
        "points": [],
    }
    if device.type == "cuda":
        result["gpu"] = torch.cuda.get_device_name(device)
    if settings["workload"] == "training":
        result["training"] = _training(torch, model, settings, timer, energy, device)
        return result
    model.eval()
    kv_precision = default_kv_precision(shape.precision)
    kv_dtype = DTYPES.get(kv_precision, torch.bfloat16)
    context = settings["context_tokens"]
    steps = settings["decode_steps"]
    prompt = context - steps
    kv_per_request = shape.kv_cache_bytes_per_request(context, kv_precision)
    batches = list(settings["batch_sizes"])
    for position, batch in enumerate(batches):
        if cancelled():
            result["stopped"] = "cancelled"
            break
        report(position / len(batches), f"batch {batch}: prefill {prompt} tokens, {steps} decode steps")
        point: dict[str, Any] = {"batch": batch, "prompt_tokens": prompt, "decode_steps": steps}
        try:
            with torch.inference_mode():
                cache = model.allocate_cache(batch, context, VLLM_BLOCK_SIZE_TOKENS, kv_dtype)
                generator = torch.Generator(device=device).manual_seed(settings["seed"] + batch)
                tokens = torch.randint(shape.vocab_size, (batch, prompt), device=device, generator=generator)
                for _ in range(settings["warmup_steps"]):  # kernels chosen and caches warm before timing
                    model.prefill(tokens[:, : min(prompt, 64)], cache, slice(0, batch), 0)
                began_j = energy()
                began = timer.start()
                logits = model.prefill(tokens, cache, slice(0, batch), 0)
                prefill_s = timer.stop(began)
                after_prefill_j = energy()
                next_tokens = logits.argmax(-1, keepdim=True)
                step_times = []
                for step in range(steps):
                    began = timer.start()
                    logits = model.decode(next_tokens, cache, prompt + step)
                    step_times.append(timer.stop(began))
                    next_tokens = logits.argmax(-1, keepdim=True)
                after_decode_j = energy()
                decode_s = sum(step_times)
                point.update({
                    "prefill_s": prefill_s, "ttft_s": prefill_s,
                    "prefill_tokens_per_s": batch * prompt / prefill_s if prefill_s > 0 else None,
                    "decode_s": decode_s, "tpot_p50_s": _median(step_times),
                    "tpot_mean_s": decode_s / steps, "tpot_max_s": max(step_times),
                    "decode_tokens_per_s": batch * steps / decode_s if decode_s > 0 else None,
                    "kv_cache_bytes": cache.nbytes,
                    "prefill_tokens_per_joule": _per_joule(batch * prompt, began_j, after_prefill_j),
                    "decode_tokens_per_joule": _per_joule(batch * steps, after_prefill_j, after_decode_j),
                })
                point["roofline"] = roofline(shape, settings, batch, weight_bytes, kv_per_request)
                if point["roofline"] and point["decode_tokens_per_s"]:
                    point["decode_fraction_of_roofline"] = (point["decode_tokens_per_s"]
                                                            / point["roofline"]["decode_tokens_per_s_bound"])
                del cache, tokens, logits
        except torch.cuda.OutOfMemoryError as error:
            point["error"] = "out_of_memory"
            point["detail"] = str(error).splitlines()[0][:300]
            result["points"].append(point)
            torch.cuda.empty_cache()
            break
        result["points"].append(point)
        if device.type == "cuda":
            torch.cuda.empty_cache()
    report(1.0, "direct throughput done")
    return result


def _training(torch, model, settings, timer, energy, device) -> dict[str, Any]:
    training = settings["training"]
    batch, sequence, steps = training["batch"], training["sequence"], training["steps"]
    parameters = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(parameters, lr=1e-5, foreach=device.type == "cuda")
    generator = torch.Generator(device=device).manual_seed(settings["seed"])
    times = []
    began_j = None
    for step in range(settings["warmup_steps"] + steps):
        if step == settings["warmup_steps"]:
            began_j = energy()
        began = timer.start()
        loss = model.training_loss(batch, sequence, recompute=bool(training.get("recompute")), generator=generator)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        elapsed = timer.stop(began)
        if step >= settings["warmup_steps"]:
            times.append(elapsed)
    total = sum(times)
    tokens = batch * sequence * steps
    tokens_per_s = tokens / total if total > 0 else None
    shape = settings["shape"]
    active = shape.active_params or shape.params or sum(p.numel() for p in model.parameters())
    peak = settings.get("peak_tflops")
    mfu = 6.0 * active * tokens_per_s / (float(peak) * 1e12) if peak and tokens_per_s else None
    return {"batch": batch, "sequence": sequence, "steps": steps, "step_p50_s": _median(times),
            "tokens_per_s": tokens_per_s, "active_parameters": int(active), "peak_tflops": peak,
            "mfu": mfu, "mfu_formula": "6 · active parameters · tokens/s ÷ peak FLOP/s (no attention FLOPs)",
            "tokens_per_joule": _per_joule(tokens, began_j, energy()), "loss_finite": bool(math.isfinite(
                float(loss.detach().float().cpu())))}
