"""The exact model for a memory probe: the node's own checkpoint (a local folder with `config.json` and
`*.safetensors`), loaded with transformers at the target precision, instead of a proxy of the same shape.

Nothing here ever reaches a model hub: the folder must exist on the node, transformers is imported with
`HF_HUB_OFFLINE=1` / `TRANSFORMERS_OFFLINE=1`, every `from_pretrained` gets `local_files_only=True` and
`trust_remote_code=False` (no code from the folder is run). transformers and torch are imported lazily, inside the
functions that need them, so the agent package imports without them.

Three parts:

- `checkpoint_summary(folder)`: parameter count and weight bytes per dtype from the safetensors headers (through
  `safetensors.safe_open`'s metadata when the library imports, else the header parsed as the format documents it:
  8-byte little-endian length, then a JSON table of dtype, shape and offsets). No tensor is loaded.
- `inspect(request)`: run in its own process by the job (`python -m dossier_agent.exact_model`) before any probe: the
  header summary, then whether this node's transformers can build the checkpoint's architecture (the config read
  locally, the model class resolved and built on the meta device, its parameters counted). Any failure is a reason
  for the proxy, never an error of the job.
- `load`, `run_inference`, `training_loss_function`: used inside a probe process (`dossier_agent.probe`), with the
  probe's meter and recorder, so the exact path reports the same components and totals as the proxy path.

Inference on the exact model: transformers' `StaticCache`, sized for the target before the first forward pass
(`early_initialization`: batch = the probe's concurrency n, length = the context rounded up to whole cache blocks;
sliding-window layers hold the window), so the KV cache is allocated up front as a serving engine does and measured as
its own component. Then one prefill step of the token budget spread over all n sequences — each row gets
max(1, min(prompt, budget // n)) tokens at the end of its prompt, so the step attends the longest key span — and the
decode steps (n rows, one token each). Training: forward, backward and the optimizer step (the probes' fp32-master
AdamW) on the model's own causal-LM loss, gradient checkpointing when the spec asks for full recomputation.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

RESULT_MARKER = "DOSSIER_EXACT_MODEL "
OFFLINE_ENVIRONMENT = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
}
# Bytes per element of the safetensors dtypes (the format's names).
SAFETENSORS_DTYPE_BYTES = {
    "F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U64": 8, "U32": 4, "U16": 2,
    "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1,
}
EXACT_PRECISIONS = ("fp32", "bf16", "fp16")
HEADER_LIMIT_BYTES = 100 * 2**20  # the format's own bound on a header


class ExactModelError(Exception):
    """Why the exact model cannot be used here; the message goes into the result as the proxy's reason."""


def go_offline() -> None:
    os.environ.update(OFFLINE_ENVIRONMENT)


# ----------------------------------------------------------------------------------------------------------------------
# The folder and its safetensors headers (no torch, no transformers)
# ----------------------------------------------------------------------------------------------------------------------


def folder_problem(path: str) -> str | None:
    """Why `path` is not a usable local checkpoint folder (None when it is one)."""
    folder = Path(os.path.expanduser(path))
    if not folder.is_absolute():
        return (f"model_path {path!r} is not an absolute path on this node (model ids are never downloaded): "
                "proxy used")
    if not folder.is_dir():
        return f"model_path {folder} does not exist on this node (nothing is downloaded): proxy used"
    if not (folder / "config.json").is_file():
        return f"model_path {folder} has no config.json: proxy used"
    if not any(folder.glob("*.safetensors")):
        return f"model_path {folder} holds no .safetensors files: proxy used"
    return None


def _read_header(path: Path) -> dict[str, Any]:
    with path.open("rb") as handle:
        raw = handle.read(8)
        if len(raw) != 8:
            raise ExactModelError(f"{path.name} is too short to be a safetensors file")
        (length,) = struct.unpack("<Q", raw)
        if length > HEADER_LIMIT_BYTES:
            raise ExactModelError(f"{path.name}: a header of {length} bytes is not a safetensors header")
        header = json.loads(handle.read(length))
    return {name: entry for name, entry in header.items() if name != "__metadata__"}


def _tensor_table(path: Path) -> tuple[dict[str, tuple[str, list[int]]], str]:
    """name → (dtype, shape) for one file, and how it was read."""
    try:
        from safetensors import safe_open
    except ImportError:
        safe_open = None
    why = "safetensors not installed"
    if safe_open is not None:
        try:
            table = {}
            with safe_open(str(path), framework="numpy") as handle:
                for name in handle.keys():  # noqa: SIM118 - a safe_open handle is not iterable
                    piece = handle.get_slice(name)
                    table[name] = (str(piece.get_dtype()), list(piece.get_shape()))
            return table, "safetensors.safe_open metadata (get_slice dtype and shape; no tensor loaded)"
        except Exception as error:  # a dtype this safetensors cannot name: the header itself says the same
            why = f"safe_open failed: {type(error).__name__}"
    header = _read_header(path)
    return ({name: (str(entry["dtype"]), list(entry["shape"])) for name, entry in header.items()},
            f"safetensors header parsed (8-byte length + JSON table; no tensor loaded; {why})")


def _weight_files(folder: Path) -> list[Path]:
    """The safetensors files `from_pretrained` loads: the shards of `model.safetensors.index.json` when there is one
    (a folder may also ship a consolidated copy, which is not loaded), else every *.safetensors file."""
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text()).get("weight_map")
        except (OSError, ValueError, AttributeError):
            weight_map = None
        if isinstance(weight_map, dict) and weight_map:
            shards = sorted({str(name) for name in weight_map.values()})
            if all("/" not in name and (folder / name).is_file() for name in shards):
                return [folder / name for name in shards]
    return sorted(folder.glob("*.safetensors"))


def checkpoint_summary(folder: str | Path) -> dict[str, Any]:
    """Parameter count and weight bytes of every tensor in the folder's *.safetensors files, per dtype."""
    folder = Path(folder)
    files = _weight_files(folder)
    by_dtype: dict[str, dict[str, int]] = {}
    parameters = weight_bytes = tensors = 0
    sources = set()
    for path in files:
        table, source = _tensor_table(path)
        sources.add(source)
        for dtype, shape in table.values():
            count = 1
            for size in shape:
                count *= int(size)
            size_bytes = count * SAFETENSORS_DTYPE_BYTES.get(dtype.upper(), 0)
            entry = by_dtype.setdefault(dtype.upper(), {"tensors": 0, "parameters": 0, "bytes": 0})
            entry["tensors"] += 1
            entry["parameters"] += count
            entry["bytes"] += size_bytes
            parameters += count
            weight_bytes += size_bytes
            tensors += 1
    return {
        "path": str(folder),
        "files": [path.name for path in files],
        "file_bytes": sum(path.stat().st_size for path in files),
        "tensor_count": tensors,
        "parameter_count": parameters,
        "weight_bytes": weight_bytes,
        "by_dtype": by_dtype,
        "source": "; ".join(sorted(sources)),
    }


# ----------------------------------------------------------------------------------------------------------------------
# Inspection (its own process: imports transformers)
# ----------------------------------------------------------------------------------------------------------------------

CONFIG_FIELDS = {
    "num_layers": "num_hidden_layers", "hidden_size": "hidden_size", "num_attention_heads": "num_attention_heads",
    "num_kv_heads": "num_key_value_heads", "ffn_size": "intermediate_size", "vocab_size": "vocab_size",
}


def _auto_class(encoder: bool):
    from transformers import AutoModel, AutoModelForCausalLM

    return AutoModel if encoder else AutoModelForCausalLM


def _model_class(config, encoder: bool):
    auto = _auto_class(encoder)
    try:
        return auto._model_mapping[type(config)]
    except KeyError:
        kind = "a base model" if encoder else "a causal language model"
        raise ExactModelError(
            f"the checkpoint's architecture ({config.model_type}) cannot be loaded as {kind} by this node's "
            "transformers: proxy used") from None


def _load_config(folder: str):
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(folder, local_files_only=True, trust_remote_code=False)
    except Exception as error:
        raise ExactModelError(f"transformers cannot read {folder}/config.json ({type(error).__name__}: "
                              f"{str(error)[:300]}): proxy used") from None


def inspect(request: dict[str, Any]) -> dict[str, Any]:
    """Can this node's transformers build the checkpoint? Returns usable, reason, checkpoint summary, model class."""
    folder = request["path"]
    report: dict[str, Any] = {"usable": False, "reason": None}
    try:
        report["checkpoint"] = checkpoint_summary(folder)
    except (OSError, ValueError, ExactModelError) as error:
        report["reason"] = f"the safetensors headers of {folder} cannot be read ({error}): proxy used"
        return report
    go_offline()
    try:
        import transformers
    except ImportError:
        report["reason"] = "transformers is not installed on this node: proxy of the same shape used"
        return report
    try:
        import safetensors  # noqa: F401 - from_pretrained reads the weights through it
    except ImportError:
        report["reason"] = "safetensors is not installed on this node: proxy of the same shape used"
        return report
    report["transformers_version"] = transformers.__version__
    try:
        import torch

        config = _load_config(folder)
        encoder = bool(request.get("encoder"))
        model_class = _model_class(config, encoder)
        with torch.device("meta"):
            model = model_class._from_config(config)
    except ExactModelError as error:
        report["reason"] = str(error)
        return report
    except Exception as error:
        report["reason"] = (f"transformers cannot build the checkpoint's model ({type(error).__name__}: "
                            f"{str(error)[:300]}): proxy used")
        return report
    text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    config_shape = {name: getattr(text, attribute, None) for name, attribute in CONFIG_FIELDS.items()}
    stated = request.get("shape") or {}
    mismatches = {
        name: {"spec": stated.get(name), "checkpoint": value}
        for name, value in config_shape.items()
        if stated.get(name) is not None and value is not None and stated.get(name) != value
    }
    report.update(
        usable=True,
        model_class=model_class.__name__,
        model_type=config.model_type,
        auto_class="AutoModel" if encoder else "AutoModelForCausalLM",
        meta_parameters=sum(parameter.numel() for parameter in model.parameters()),
        config_shape=config_shape,
        shape_mismatches=mismatches,
    )
    return report


def run_inspection(request: dict[str, Any], *, timeout_s: float, environment: dict[str, str] | None = None,
                   python: str | None = None) -> dict[str, Any]:
    """`inspect` in its own process (the job process imports neither torch nor transformers)."""
    env = {**(environment or os.environ), **OFFLINE_ENVIRONMENT}
    try:
        completed = subprocess.run(  # noqa: S603 - this interpreter and our own module, no shell
            [python or sys.executable, "-m", "dossier_agent.exact_model"], input=json.dumps(request),
            capture_output=True, text=True, timeout=timeout_s, env=env, check=False,
        )
    except subprocess.TimeoutExpired:
        return {"usable": False, "reason": f"inspecting the checkpoint took over {timeout_s:.0f} s: proxy used"}
    for line in reversed(completed.stdout.splitlines()):
        if line.startswith(RESULT_MARKER):
            return json.loads(line[len(RESULT_MARKER):])
    return {"usable": False, "reason": f"inspecting the checkpoint failed (exit {completed.returncode}: "
                                       f"{completed.stderr[-300:].strip()}): proxy used"}


# ----------------------------------------------------------------------------------------------------------------------
# Inside a probe process
# ----------------------------------------------------------------------------------------------------------------------


def prepare(torch, spec: dict[str, Any]):
    """The config and model class, with the model built once on the meta device: every module the load imports is
    imported here, before the weights are measured (else the weights phase would count transformers' code)."""
    go_offline()
    exact = spec["exact_model"]
    config = _load_config(exact["path"])
    model_class = _model_class(config, exact.get("auto_class") == "AutoModel")
    with torch.device("meta"):
        model_class._from_config(config)
    import transformers.modeling_utils  # noqa: F401 - the loading path

    return config, model_class


def load(torch, spec: dict[str, Any], device, dtype, model_class):
    """The checkpoint on `device` at `dtype`, in eval or train mode for the workload."""
    exact = spec["exact_model"]
    options: dict[str, Any] = {"local_files_only": True, "trust_remote_code": False, "dtype": dtype,
                               "use_safetensors": True}  # never a pickle file (pytorch_model.bin) from the folder
    if device.type == "cpu":
        # Read the files into process memory (as a GPU load copies them into device memory) instead of mapping
        # them: what is resident is then the weights, not whichever file pages were touched.
        options["disable_mmap"] = True
    else:
        options["device_map"] = {"": device.index or 0}
    model = model_class.from_pretrained(exact["path"], **options)
    model.train(spec.get("workload") == "training")
    return model


def unique_parameters(model) -> tuple[int, int]:
    """(parameter count, tensor bytes) with tied weights counted once."""
    seen = set()
    count = size = 0
    for parameter in model.parameters():
        key = parameter.data_ptr()
        if key in seen:
            continue
        seen.add(key)
        count += parameter.numel()
        size += parameter.numel() * parameter.element_size()
    return count, size


def _text_config(model):
    config = model.config
    return config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config


def allocate_static_cache(torch, model, requests: int, tokens: int, dtype, device):
    """transformers' StaticCache for `requests` sequences of `tokens`, allocated now (not at the first forward)."""
    from transformers import StaticCache

    text = _text_config(model)
    heads = text.num_attention_heads
    kv_heads = getattr(text, "num_key_value_heads", None) or heads
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // heads
    cache = StaticCache(config=model.config, max_cache_len=tokens)
    cache.early_initialization(batch_size=requests, num_heads=kv_heads, head_dim=head_dim, dtype=dtype,
                               device=device)
    size = 0
    for layer in cache.layers:
        for tensor in (getattr(layer, "keys", None), getattr(layer, "values", None)):
            if tensor is not None:
                size += tensor.numel() * tensor.element_size()
    return cache, size


def run_inference(torch, model, spec: dict[str, Any], n: int, recorder, dtype) -> None:
    """KV cache up front, the peak prefill step, the decode steps: the proxy's phases on the real model."""
    from dossier_agent.proxies.shape import round_up

    meter = recorder.meter
    settings = spec.get("inference") or {}
    context = int(settings["context_tokens"])
    device = next(model.parameters()).device
    generator = torch.Generator(device=device)
    generator.manual_seed(int(spec.get("seed", 0)) + 1)
    vocab = _text_config(model).vocab_size
    if spec["exact_model"].get("auto_class") == "AutoModel":
        budget = int(settings.get("max_batched_tokens") or 8192)
        rows = min(n, max(1, budget // context))
        recorder.details.update(batch_rows=rows, context_tokens=context)
        before = meter.current()
        meter.begin_window()
        recorder.enter("encode")
        with torch.inference_mode():
            tokens = torch.randint(vocab, (rows, context), device=device, generator=generator)
            model(input_ids=tokens)
        recorder.components["kv_cache"] = 0
        recorder.components["activation_peak"] = meter.window_peak() - before
        recorder.mark("run")
        return
    block = int(settings.get("block_size_tokens") or 16)
    decode_steps = max(0, min(int(settings.get("decode_steps", 4)), context - 1))
    prompt = context - decode_steps
    budget = int(settings.get("max_batched_tokens") or 8192)
    before = meter.current()
    recorder.enter("kv_cache")
    cache, cache_bytes = allocate_static_cache(torch, model, n, round_up(context, block), dtype, device)
    recorder.components["kv_cache"] = meter.current() - before
    recorder.details.update(kv_cache_tensor_bytes=cache_bytes, kv_cache_kind="transformers.StaticCache (allocated "
                            "before the first forward pass)", block_size_tokens=block)
    recorder.mark("kv_cache")
    chunk = max(1, min(prompt, budget // n))
    start = prompt - chunk
    recorder.details.update(prefill_rows=n, prefill_tokens_per_row=chunk, prefill_start=start,
                            decode_steps=decode_steps, decode_batch=n)
    base = meter.current()
    meter.begin_window()
    recorder.enter("prefill")
    with torch.inference_mode():
        tokens = torch.randint(vocab, (n, chunk), device=device, generator=generator)
        output = model(input_ids=tokens, past_key_values=cache, use_cache=True, logits_to_keep=1,
                       cache_position=torch.arange(start, prompt, device=device))
        next_tokens = torch.softmax(output.logits[:, -1].float(), dim=-1).argmax(dim=-1)
        del output
        recorder.enter("decode")
        for step in range(decode_steps):
            tokens = torch.randint(vocab, (n, 1), device=device, generator=generator)
            output = model(input_ids=tokens, past_key_values=cache, use_cache=True, logits_to_keep=1,
                           cache_position=torch.tensor([prompt + step], device=device))
            next_tokens = torch.softmax(output.logits[:, -1].float(), dim=-1).argmax(dim=-1)
            del output
    del next_tokens
    recorder.components["activation_peak"] = meter.window_peak() - base
    recorder.mark("run")
    del cache


def training_loss_function(torch, model, spec: dict[str, Any]):
    """(n, sequence, generator) → the model's causal-LM loss on random tokens (gradient checkpointing when the spec
    recomputes everything)."""
    settings = spec.get("training") or {}
    if settings.get("recompute", "none") == "full":
        model.gradient_checkpointing_enable()
    device = next(model.parameters()).device
    vocab = _text_config(model).vocab_size

    def loss(n: int, sequence: int, generator) -> Any:
        tokens = torch.randint(vocab, (n, sequence), device=device, generator=generator)
        return model(input_ids=tokens, labels=tokens, use_cache=False).loss

    return loss


def main() -> int:
    request = json.loads(sys.stdin.read())
    try:
        report = inspect(request)
    except Exception as error:  # the job reads a reason, never a traceback
        report = {"usable": False, "reason": f"inspecting the checkpoint failed ({type(error).__name__}: "
                                             f"{str(error)[:300]}): proxy used"}
    sys.stdout.write(RESULT_MARKER + json.dumps(report, default=str) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
