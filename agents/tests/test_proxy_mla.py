"""The latent-attention (MLA, DeepSeek-V2/V3) proxy on the CPU with tiny shapes: what it holds (parameters, a latent
KV cache of r_kv + d_rope per token and layer), that its cached paths compute what a full forward computes (the
absorbed decode included), that it trains, and that a real probe process measures its KV cache as predicted."""

import math

import pytest
import torch
from dossier_agent.jobs import memory_fit
from dossier_agent.probe import run_probe
from dossier_agent.proxies.build import ProxyPlan, adapter_parameters, attach_adapters, build_proxy
from dossier_agent.proxies.modules import BuildOptions, LatentAttention, LayerCache
from dossier_agent.proxies.optim import MasterWeightAdamW
from dossier_agent.proxies.shape import ProxyShape, ProxyShapeError, lora_parameters, total_parameters
from dossier_agent.proxies.weights import logical_parameters
from test_memory_fit import _context, _events
from torch.nn import functional as F

MLA = {"num_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "ffn_size": 96, "vocab_size": 128,
       "kv_lora_rank": 32, "qk_rope_head_dim": 8}
MLA_Q_LORA = {**MLA, "q_lora_rank": 48, "qk_nope_head_dim": 24, "v_head_dim": 12}  # DeepSeek-V3-like query path
MLA_MOE = {**MLA_Q_LORA, "architecture": "moe", "num_experts": 4, "num_experts_per_token": 2, "expert_ffn_size": 32,
           "num_shared_experts": 1, "first_dense_layers": 1}
# A KV-heavy latent cache: (1024 + 64)·4 bytes·2 layers·512 tokens ≈ 4.25 MiB per request in fp32, above the probe's
# mmap threshold, so resident memory follows it.
MLA_KV_HEAVY = {"num_layers": 2, "hidden_size": 128, "num_attention_heads": 4, "ffn_size": 256, "vocab_size": 512,
                "kv_lora_rank": 1024, "qk_rope_head_dim": 64, "precision": "fp32"}


@pytest.fixture(autouse=True)
def _one_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    yield
    torch.set_num_threads(previous)


def _plan(model: dict, **changes) -> ProxyPlan:
    return ProxyPlan(shape=ProxyShape.from_spec(model), device="cpu", **changes)


def _latent_attention_formula(h, a, rank, rope, nope, v, q_rank=None):
    query = h * a * (nope + rope) if q_rank is None else h * q_rank + q_rank + q_rank * a * (nope + rope)
    return query + h * (rank + rope) + rank + rank * a * (nope + v) + a * v * h


@pytest.mark.parametrize("model", [MLA, MLA_Q_LORA, MLA_MOE], ids=["mla", "q-lora", "moe-mla"])
def test_an_mla_proxy_holds_exactly_the_parameters_of_its_formula(model):
    shape = ProxyShape.from_spec(model)
    proxy = build_proxy(ProxyPlan(shape=shape, device="meta"), "meta")
    assert sum(parameter.numel() for parameter in proxy.parameters()) == total_parameters(shape)
    attention = sum(parameter.numel() for parameter in proxy.layers[0].attention.parameters())
    expected = (_latent_attention_formula(64, 4, 32, 8, 16, 16) if model is MLA
                else _latent_attention_formula(64, 4, 32, 8, 24, 12, q_rank=48))
    assert attention == expected
    assert isinstance(proxy.layers[1].attention, LatentAttention)


def test_the_latent_cache_holds_r_kv_plus_rope_per_token_and_no_separate_values():
    shape = ProxyShape.from_spec(MLA)
    proxy = build_proxy(_plan(MLA), "cpu")
    cache = proxy.allocate_cache(3, 70, 16, torch.bfloat16)
    assert all(layer.v is None and tuple(layer.k.shape) == (3, 1, 80, 32 + 8) for layer in cache.layers)
    assert cache.nbytes == 3 * shape.kv_cache_bytes_per_request(70, "bf16") == 3 * 2 * 80 * (32 + 8) * 2
    # Multi-head attention of the same width would keep 2·a·d = 128 elements per token instead of 40.
    assert shape.kv_bytes_per_token_layer("bf16") == (32 + 8) * 2
    windowed = {**MLA, "num_layers": 3, "sliding_window": 20, "sliding_window_layers": 2}
    window_cache = build_proxy(_plan(windowed), "cpu").allocate_cache(2, 70, 16, torch.float32)
    assert [layer.capacity for layer in window_cache.layers] == [80, 32, 32]
    assert window_cache.nbytes == 2 * ProxyShape.from_spec(windowed).kv_cache_bytes_per_request(70, "fp32")


def _scaled_attention(model: dict) -> LatentAttention:
    """A latent attention block with unit-scale weights, so a wrong path shows as a large difference."""
    attention = LatentAttention(BuildOptions(device=torch.device("cpu"), compute_dtype=torch.float32),
                                ProxyShape.from_spec(model))
    with torch.no_grad():
        for name, parameter in attention.named_parameters():
            if not name.endswith("norm.weight"):
                parameter.normal_(0.0, 1 / math.sqrt(parameter.shape[-1]))
    return attention


@pytest.mark.parametrize("model", [MLA, MLA_Q_LORA], ids=["mla", "q-lora"])
def test_chunked_prefill_and_absorbed_decode_equal_the_full_attention(model):
    attention = _scaled_attention(model)
    x = torch.randn(2, 11, 64)
    cache = LayerCache(torch.zeros(2, 1, 16, 40), None, window=False)
    with torch.inference_mode():
        reference = attention(x, causal=True)
        first = attention.prefill(x[:, :6], cache, slice(0, 2), 0)
        second = attention.prefill(x[:, 6:9], cache, slice(0, 2), 6)
        decoded = [attention.decode(x[:, step:step + 1], cache, step) for step in (9, 10)]
    assert float(reference.abs().mean()) > 0.1  # a real signal, not the zeros of an untrained block
    assert torch.allclose(first, reference[:, :6], atol=1e-5)
    assert torch.allclose(second, reference[:, 6:9], atol=1e-5)
    assert torch.allclose(torch.cat(decoded, dim=1), reference[:, 9:11], atol=1e-5)
    assert torch.count_nonzero(cache.k[:, :, 11:]) == 0  # nothing written beyond the tokens seen


def test_a_windowed_latent_cache_attends_over_the_last_window_tokens():
    attention = _scaled_attention(MLA)
    x = torch.randn(1, 12, 64)
    cache = LayerCache(torch.zeros(1, 1, 4, 40), None, window=True)
    with torch.inference_mode():
        attention.prefill(x[:, :10], cache, slice(0, 1), 0)
        decoded = attention.decode(x[:, 10:11], cache, 10)
        recent = attention(x[:, 7:11], causal=True)[:, -1:]  # the token and the 3 before it
    assert torch.allclose(decoded, recent, atol=1e-5)


@pytest.mark.parametrize("model", [MLA_Q_LORA, MLA_MOE], ids=["q-lora", "moe-mla"])
def test_proxy_decode_from_the_latent_cache_equals_a_full_forward(model):
    proxy = build_proxy(_plan({**model, "precision": "fp32"}), "cpu")
    tokens = torch.randint(128, (2, 9))
    with torch.inference_mode():
        cache = proxy.allocate_cache(2, 16, 16, torch.float32)
        prefill = proxy.prefill(tokens[:, :8], cache, slice(0, 2), 0)
        decoded = proxy.decode(tokens[:, 8:9], cache, 8)
        x = F.embedding(tokens, proxy.embedding)
        for layer in proxy.layers:
            x = layer(x)
        reference = proxy._logits(x).float()
    assert torch.allclose(prefill, reference[:, 7], atol=1e-5)
    assert torch.allclose(decoded, reference[:, 8], atol=1e-5)


@pytest.mark.parametrize("recompute", [False, True])
def test_full_training_of_an_mla_proxy_reaches_every_parameter(recompute):
    proxy = build_proxy(_plan(MLA_MOE, workload="training"), "cpu")
    optimizer = MasterWeightAdamW(proxy.parameters(), lr=1e-2)
    loss = proxy.training_loss(2, 12, recompute=recompute)
    loss.backward()
    latent = proxy.layers[0].attention
    assert all(parameter.grad is not None for parameter in latent.parameters())
    before = latent.kv_up.store.weight.detach().clone()
    optimizer.step()
    assert torch.isfinite(loss) and not torch.equal(before, latent.kv_up.store.weight.detach())


@pytest.mark.parametrize(
    ("targets", "adapted"),
    [
        (("q", "k", "v", "o", "gate", "up", "down"), {"q_down", "q", "kv_down", "kv_up", "o"}),
        (("v",), {"kv_down", "kv_up"}),  # keys and values share the latent projections
        (("q", "o"), {"q_down", "q", "o"}),
    ],
)
def test_lora_on_latent_attention_adapts_the_matrices_the_estimator_counts(targets, adapted):
    shape = ProxyShape.from_spec(MLA_MOE)
    plan = _plan(MLA_MOE, workload="training", method="lora", lora_rank=4, lora_targets=targets)
    proxy = build_proxy(plan, "cpu")
    assert adapter_parameters(proxy) == lora_parameters(shape, 4, targets)
    attention = proxy.layers[1].attention
    names = {name for name in ("q_down", "q", "kv_down", "kv_up", "o") if getattr(attention, name).lora is not None}
    assert names == adapted


def test_qlora_on_an_mla_proxy_trains_the_adapters_and_decodes_with_them():
    plan = _plan(MLA_Q_LORA, workload="training", method="qlora", lora_rank=4)
    proxy = build_proxy(plan, "cpu", build_adapters=False)
    attach_adapters(proxy, plan, "cpu")
    shape = ProxyShape.from_spec(MLA_Q_LORA)
    assert logical_parameters(proxy) == total_parameters(shape) + lora_parameters(shape, 4)
    optimizer = MasterWeightAdamW(proxy.parameters(), lr=1e-1)
    proxy.training_loss(2, 8, recompute=False).backward()
    optimizer.step()
    kv_up = proxy.layers[0].attention.kv_up
    assert kv_up.store.storage == "nf4" and float(kv_up.lora.b.detach().abs().sum()) > 0
    # The absorbed decode folds the trained adapter into W_UK and W_UV: it still equals the full forward.
    tokens = torch.randint(128, (1, 7))
    with torch.inference_mode():
        cache = proxy.allocate_cache(1, 16, 16, torch.bfloat16)
        proxy.prefill(tokens[:, :6], cache, slice(0, 1), 0)
        decoded = proxy.decode(tokens[:, 6:7], cache, 6)
        x = F.embedding(tokens, proxy.embedding)
        for layer in proxy.layers:
            x = layer(x)
        reference = proxy._logits(x[:, -1]).float()
    assert torch.allclose(decoded, reference, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize(
    ("model", "field"),
    [
        ({**MLA, "qk_rope_head_dim": None}, "qk_rope_head_dim"),
        ({**MLA, "kv_lora_rank": None}, "kv_lora_rank"),
        ({**MLA, "kv_lora_rank": 0}, "kv_lora_rank"),
        ({**MLA, "architecture": "encoder"}, "kv_lora_rank"),
    ],
)
def test_incomplete_latent_attention_names_the_field(model, field):
    with pytest.raises(ProxyShapeError) as excinfo:
        ProxyShape.from_spec(model)
    assert excinfo.value.field == field


def test_latent_fields_without_kv_lora_rank_are_ignored_as_the_estimator_ignores_them():
    plain = {key: value for key, value in MLA.items() if key not in ("kv_lora_rank", "qk_rope_head_dim")}
    shape = ProxyShape.from_spec({**plain, "q_lora_rank": 16, "v_head_dim": 8, "kv_lora_rank": None,
                                  "qk_rope_head_dim": None})
    assert not shape.is_latent_attention
    assert total_parameters(shape) == total_parameters(ProxyShape.from_spec(plain))


# ----------------------------------------------------------------------------------------------------------------------
# The real probe path: a probe process per n, then the job with the prediction
# ----------------------------------------------------------------------------------------------------------------------


def test_a_probe_measures_the_latent_kv_cache_the_estimator_predicts(tmp_path):
    shape = ProxyShape.from_spec(MLA_KV_HEAVY)
    per_request = shape.kv_cache_bytes_per_request(512, "fp32")
    assert per_request == 2 * 512 * (1024 + 64) * 4
    inference = {"context_tokens": 512, "decode_steps": 4, "max_batched_tokens": 512}
    measured = {}
    for n in (1, 3):
        record = run_probe({"model": MLA_KV_HEAVY, "device": "cpu", "workload": "inference", "n": n,
                            "inference": inference}, timeout_s=120, address_space_limit=8 * 2**30)
        assert record["outcome"] == "ok", record
        assert record["details"]["kv_cache_tensor_bytes"] == n * per_request
        assert record["details"]["proxy_parameters"] == total_parameters(shape)
        measured[n] = record["components"]["kv_cache"], record["totals"]["address_space_peak_bytes"]
    # Measured (resident memory across the cache's allocation): each request adds its latent cache, within 1 %; what
    # the first allocation adds beyond the tensors (allocator and page overhead) stays under 1 MiB.
    slope = (measured[3][0] - measured[1][0]) / 2
    assert abs(slope - per_request) < 0.01 * per_request
    assert 0 <= measured[1][0] - per_request < 2**20
    # The address space the RLIMIT_AS search limits grows the same way, give or take what the two probe processes'
    # allocators map beyond the tensors: glibc maps in steps of up to 1 MiB, so one step more in one process is noise.
    growth = measured[3][1] - measured[1][1]
    assert abs(growth - 2 * per_request) <= max(0.05 * 2 * per_request, 2**20 + 2**18)

    predicted = {"total_bytes": 10**9, "terms": [
        {"name": "weights", "size_bytes": total_parameters(shape) * 4},
        {"name": "kv_cache", "size_bytes": 4 * per_request},
        {"name": "safety_margin", "size_bytes": 10**8},
    ]}
    spec = {"model": MLA_KV_HEAVY, "device": "cpu", "predicted": predicted,
            "inference": {"p95_context_tokens": 512, "concurrent_sessions": 4, "decode_steps": 4,
                          "max_batched_tokens": 512},
            "search": {"max_probes": 1, "probe_timeout_s": 120, "address_space_limit_bytes": 4 * 2**30}}
    context, attempt, events = _context(tmp_path)
    result = memory_fit.run(spec, context)
    _events(attempt, events)
    assert result["fits_at_target"] is True and result["labels"]["model_source"] == "proxy"
    rows = {row["component"]: row for row in result["comparison"]}
    assert rows["kv_cache"]["predicted_bytes"] == 4 * per_request
    assert 0 <= rows["kv_cache"]["error_pct"] < 5.0, rows["kv_cache"]  # 17.0 MiB predicted, its overhead measured
