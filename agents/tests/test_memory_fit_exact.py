"""The memory_fit job on the node's own checkpoint (`model_path`): a tiny Llama saved by the test itself
(transformers' save_pretrained, safetensors), loaded for real in each probe process, an RLIMIT_AS OOM still recorded;
and the fallbacks to the proxy, each with its reason."""

import json
import math
import subprocess
import sys

import pytest
from dossier_agent.exact_model import checkpoint_summary, run_inspection
from dossier_agent.jobs import memory_fit
from dossier_agent.jobs.memory_fit import MemoryFitSpecError, parse_spec
from dossier_agent.probe import probe_environment, run_probe
from dossier_agent.proxies.shape import ProxyShape, total_parameters
from test_memory_fit import CPU_INVENTORY, _context, _events

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

MIB = 2**20
# Llama with 8 MiB of fp32 KV cache per request at 512 tokens (2 layers · 2 · 4 KV heads · 256 · 512 · 4 bytes).
HEAVY = {"num_layers": 2, "hidden_size": 256, "num_attention_heads": 4, "num_kv_heads": 4, "head_dim": 256,
         "ffn_size": 512, "vocab_size": 512, "precision": "fp32"}
TINY = {"num_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "num_kv_heads": 2, "ffn_size": 128,
        "vocab_size": 256, "precision": "bf16"}


def save_llama(folder, shape, dtype):
    config = transformers.LlamaConfig(
        num_hidden_layers=shape["num_layers"], hidden_size=shape["hidden_size"],
        num_attention_heads=shape["num_attention_heads"], num_key_value_heads=shape["num_kv_heads"],
        head_dim=shape.get("head_dim") or shape["hidden_size"] // shape["num_attention_heads"],
        intermediate_size=shape["ffn_size"], vocab_size=shape["vocab_size"], max_position_embeddings=2048,
    )
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(config).to(dtype).save_pretrained(folder, safe_serialization=True)
    return folder


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    return save_llama(tmp_path_factory.mktemp("tiny-llama"), TINY, torch.bfloat16)


@pytest.fixture(scope="module")
def heavy_checkpoint(tmp_path_factory):
    return save_llama(tmp_path_factory.mktemp("heavy-llama"), HEAVY, torch.float32)


def test_the_headers_give_the_checkpoints_parameters_and_bytes_without_loading_it(tiny_checkpoint):
    summary = checkpoint_summary(tiny_checkpoint)
    expected = total_parameters(ProxyShape.from_spec(TINY))  # the estimator's formula for this shape
    assert summary["parameter_count"] == expected
    assert summary["weight_bytes"] == 2 * expected and set(summary["by_dtype"]) == {"BF16"}
    assert summary["files"] == ["model.safetensors"] and "no tensor loaded" in summary["source"]
    # the file is the tensors plus its header
    assert 0 < summary["file_bytes"] - summary["weight_bytes"] < 64 * 1024


def test_inspection_runs_offline_in_its_own_process_and_names_the_model_class(tiny_checkpoint):
    report = run_inspection({"path": str(tiny_checkpoint), "shape": {**TINY, "num_layers": 3}}, timeout_s=120,
                            environment=probe_environment())
    assert report["usable"] is True, report
    assert report["model_class"] == "LlamaForCausalLM" and report["auto_class"] == "AutoModelForCausalLM"
    assert report["meta_parameters"] == report["checkpoint"]["parameter_count"]
    assert report["shape_mismatches"] == {"num_layers": {"spec": 3, "checkpoint": 2}}


def test_an_exact_probe_loads_the_real_weights_and_allocates_the_static_cache(heavy_checkpoint):
    spec = {"model": HEAVY, "device": "cpu", "workload": "inference", "n": 2,
            "exact_model": {"path": str(heavy_checkpoint), "auto_class": "AutoModelForCausalLM"},
            "inference": {"context_tokens": 512, "decode_steps": 2, "max_batched_tokens": 512}}
    record = run_probe(spec, timeout_s=180, address_space_limit=8 * 2**30)
    assert record["outcome"] == "ok", record
    details, components = record["details"], record["components"]
    params = total_parameters(ProxyShape.from_spec(HEAVY))
    assert details["exact_parameters"] == params and details["exact_weight_tensor_bytes"] == 4 * params
    assert details["labels"]["model_source"] == "exact"
    assert details["labels"]["exact_model_class"] == "LlamaForCausalLM"
    # Resident memory of the loaded weights: the tensors plus a few MiB of loader and allocator overhead.
    assert 4 * params <= components["weights"] < 4 * params * 1.1 + 8 * MIB
    kv = ProxyShape.from_spec(HEAVY).kv_cache_bytes_per_request(512, "fp32")
    assert details["kv_cache_tensor_bytes"] == 2 * kv
    assert details["prefill_tokens_per_row"] == 256 and details["prefill_start"] == 510 - 256
    assert components["activation_peak"] > 0


def test_an_exact_training_probe_runs_forward_backward_and_the_optimizer_step(heavy_checkpoint):
    spec = {"model": {**HEAVY, "precision": "bf16"}, "device": "cpu", "workload": "training", "n": 2,
            "exact_model": {"path": str(heavy_checkpoint), "auto_class": "AutoModelForCausalLM"},
            "training": {"sequence_length": 32, "steps": 1}}
    record = run_probe(spec, timeout_s=180, address_space_limit=8 * 2**30)
    assert record["outcome"] == "ok", record
    params = record["details"]["exact_parameters"]
    # fp32 checkpoint loaded at bf16: fp32 master + two fp32 moments
    assert record["details"]["optimizer_state_tensor_bytes"] == 12 * params
    assert record["components"]["gradients"] > 0 and record["components"]["activations"] > 0


def test_rlimit_as_ooms_of_exact_probes_are_recorded_and_the_search_finds_the_extrapolated_concurrency(
        heavy_checkpoint, tmp_path):
    base_spec = {"model": HEAVY, "device": "cpu", "workload": "inference",
                 "exact_model": {"path": str(heavy_checkpoint), "auto_class": "AutoModelForCausalLM"},
                 "inference": {"context_tokens": 512, "decode_steps": 4, "max_batched_tokens": 512}}
    footprints = {}
    for n in (1, 2):
        record = run_probe({**base_spec, "n": n}, timeout_s=180, address_space_limit=8 * 2**30)
        assert record["outcome"] == "ok", record
        footprints[n] = record["totals"]["address_space_peak_bytes"]
    per_request = footprints[2] - footprints[1]
    base = footprints[1] - per_request
    kv = ProxyShape.from_spec(HEAVY).kv_cache_bytes_per_request(512, "fp32")
    assert abs(per_request - kv) < 0.1 * kv  # the increase is the request's StaticCache
    limit = base + per_request * 6 + per_request // 2
    expected = math.floor((limit - base) / per_request)
    assert expected == 6

    spec = {"model": HEAVY, "device": "cpu", "model_path": str(heavy_checkpoint),
            "inference": {"p95_context_tokens": 512, "concurrent_sessions": 12, "decode_steps": 4,
                          "max_batched_tokens": 512},
            "search": {"max_probes": 5, "maximum": 32, "probe_timeout_s": 180, "address_space_limit_bytes": limit}}
    context, attempt, events = _context(tmp_path)
    result = memory_fit.run(spec, context)
    probes = result["probes"]
    assert result["model_source"] == "exact" and result["proxy_reason"] is None
    assert result["labels"]["model_source"] == "exact"
    assert result["exact_model"]["model_class"] == "LlamaForCausalLM"
    assert result["checkpoint"]["parameter_count"] == total_parameters(ProxyShape.from_spec(HEAVY))
    assert probes[0]["n"] == 12 and probes[0]["outcome"] == "oom"
    assert any(probe["outcome"] == "ok" for probe in probes[1:])
    assert result["oom_count"] >= 1
    assert abs(result["largest_fitting"]["value"] - expected) <= 1, (result["largest_fitting"], footprints)
    _events(attempt, events)


@pytest.mark.parametrize("case", ["missing", "relative", "no-safetensors"])
def test_a_path_that_is_not_a_checkpoint_on_this_node_falls_back_to_the_proxy(tmp_path, case):
    folder = {"missing": str(tmp_path / "nowhere"), "relative": "meta-llama/Llama-3.1-8B",
              "no-safetensors": str(tmp_path)}[case]
    (tmp_path / "config.json").write_text("{}")
    spec = {"model": TINY, "device": "cpu", "model_path": folder,
            "inference": {"p95_context_tokens": 128, "concurrent_sessions": 1, "decode_steps": 2},
            "search": {"max_probes": 1, "address_space_limit_bytes": 4 * 2**30}}
    context, attempt, events = _context(tmp_path / "job")
    result = memory_fit.run(spec, context)
    assert result["model_source"] == "proxy" and result["fits_at_target"] is True
    fragment = {"missing": "does not exist on this node", "relative": "not an absolute path",
                "no-safetensors": "no .safetensors"}[case]
    assert fragment in result["proxy_reason"] and result["labels"]["proxy_reason"] == result["proxy_reason"]
    _events(attempt, events)


def test_an_architecture_transformers_cannot_load_falls_back_with_the_reason_and_the_header_figures(
        tiny_checkpoint, tmp_path):
    folder = tmp_path / "unknown"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes((tiny_checkpoint / "model.safetensors").read_bytes())
    config = json.loads((tiny_checkpoint / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "no-such-architecture",
                                                    "architectures": ["NoSuchForCausalLM"]}))
    spec = {"model": TINY, "device": "cpu", "model_path": str(folder),
            "inference": {"p95_context_tokens": 128, "concurrent_sessions": 1, "decode_steps": 2},
            "search": {"max_probes": 1, "address_space_limit_bytes": 4 * 2**30}}
    context, attempt, events = _context(tmp_path / "job")
    result = memory_fit.run(spec, context)
    assert result["model_source"] == "proxy" and "proxy used" in result["proxy_reason"]
    assert "config.json" in result["proxy_reason"] or "cannot be loaded" in result["proxy_reason"]
    assert result["checkpoint"]["parameter_count"] == total_parameters(ProxyShape.from_spec(TINY))
    assert result["exact_model"] is None
    _events(attempt, events)


def test_a_quantised_precision_uses_the_proxy_and_says_why(tiny_checkpoint):
    plan = parse_spec({"model": {**TINY, "precision": "int4"}, "device": "cpu", "model_path": str(tiny_checkpoint),
                       "inference": {"p95_context_tokens": 64}}, CPU_INVENTORY)
    memory_fit.choose_model(plan, lambda request: {"usable": True, "checkpoint": checkpoint_summary(request["path"])})
    assert memory_fit.model_source(plan) == "proxy" and "int4" in plan.proxy_reason
    assert plan.exact["checkpoint"]["parameter_count"] > 0  # the header figures are still reported


def test_a_url_is_never_a_model_path():
    with pytest.raises(MemoryFitSpecError, match="never a URL"):
        parse_spec({"model": TINY, "device": "cpu", "model_path": "https://huggingface.co/x/y",
                    "inference": {"p95_context_tokens": 64}}, CPU_INVENTORY)


def test_the_agent_imports_without_transformers():
    blocked = ("import sys; sys.modules['transformers'] = None; sys.modules['safetensors'] = None; "
               "import dossier_agent.exact_model, dossier_agent.probe, dossier_agent.jobs.memory_fit; print('ok')")
    completed = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, timeout=60,
                               check=False, env=probe_environment())
    assert completed.returncode == 0 and completed.stdout.strip() == "ok", completed.stderr


def test_without_transformers_the_inspection_gives_the_reason_and_still_reads_the_headers(tiny_checkpoint,
                                                                                           monkeypatch):
    from dossier_agent import exact_model

    monkeypatch.setitem(sys.modules, "transformers", None)
    report = exact_model.inspect({"path": str(tiny_checkpoint)})
    assert report["usable"] is False and "transformers is not installed" in report["reason"]
    assert report["checkpoint"]["parameter_count"] == total_parameters(ProxyShape.from_spec(TINY))


def test_a_sharded_checkpoint_counts_its_indexed_shards_not_a_consolidated_copy(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file

    first, second = {"a": torch.zeros(4, 8)}, {"b": torch.zeros(16, dtype=torch.bfloat16)}
    save_file(first, str(tmp_path / "model-00001-of-00002.safetensors"))
    save_file(second, str(tmp_path / "model-00002-of-00002.safetensors"))
    save_file({**first, **second}, str(tmp_path / "consolidated.safetensors"))  # shipped beside, never loaded
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {
        "a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}))
    summary = checkpoint_summary(tmp_path)
    assert summary["parameter_count"] == 32 + 16
    assert summary["weight_bytes"] == 32 * 4 + 16 * 2
