"""The memory-fit proxies (agent package) hold what the estimator (apps/workloads/memory/) counts: parameters per
architecture, quantised weight bytes, LoRA adapters and KV-cache bytes. Built on torch's meta device: real shapes,
no memory."""

import pytest
import torch
from dossier_agent.proxies.build import ProxyPlan, adapter_parameters, build_proxy
from dossier_agent.proxies.shape import DiffusionGeometry, ProxyShape, lora_parameters
from dossier_agent.proxies.weights import ScaledStore, logical_parameters, storage_bytes

from apps.workloads.memory import inference, shapes, training

LLAMA_2_7B = {  # multi-head attention
    "num_layers": 32, "hidden_size": 4096, "num_attention_heads": 32, "ffn_size": 11008, "vocab_size": 32000,
}
LLAMA_3_8B = {  # grouped-query attention, 8 KV heads
    "num_layers": 32, "hidden_size": 4096, "num_attention_heads": 32, "num_kv_heads": 8, "ffn_size": 14336,
    "vocab_size": 128256,
}
MIXTRAL_8X7B = {
    "architecture": "moe", "num_layers": 32, "hidden_size": 4096, "num_attention_heads": 32, "num_kv_heads": 8,
    "ffn_size": 14336, "vocab_size": 32000, "num_experts": 8, "num_experts_per_token": 2,
}
SHARED_EXPERT_MOE = {  # Qwen-MoE / DeepSeek style: shared experts, a leading dense layer, q/k/v biases
    "architecture": "moe", "num_layers": 6, "hidden_size": 512, "num_attention_heads": 8, "num_kv_heads": 2,
    "ffn_size": 1408, "expert_ffn_size": 256, "vocab_size": 4096, "num_experts": 16, "num_experts_per_token": 4,
    "num_shared_experts": 2, "shared_expert_ffn_size": 384, "first_dense_layers": 1, "qkv_bias": True,
    "tied_embeddings": True,
}
BERT_BASE = {
    "architecture": "encoder", "num_layers": 12, "hidden_size": 768, "num_attention_heads": 12, "ffn_size": 3072,
    "vocab_size": 30522, "position_embeddings": 512, "token_type_vocab_size": 2, "pooler": True,
}
DEEPSEEK_V2_LITE = {  # latent attention (no query latent) + MoE with shared experts and one leading dense layer
    "architecture": "moe", "num_layers": 27, "hidden_size": 2048, "num_attention_heads": 16, "kv_lora_rank": 512,
    "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "ffn_size": 10944, "expert_ffn_size": 1408,
    "num_experts": 64, "num_experts_per_token": 6, "num_shared_experts": 2, "first_dense_layers": 1,
    "vocab_size": 102400,
}
DEEPSEEK_V2_LITE_CHECKPOINT_PARAMETERS = 15_706_484_224  # the safetensors total of deepseek-ai/DeepSeek-V2-Lite
SMALL_MLA = {  # dense, with a query latent (DeepSeek-V3's query path) and d_nope, d_v apart from the head dim
    "num_layers": 4, "hidden_size": 512, "num_attention_heads": 8, "kv_lora_rank": 128, "qk_rope_head_dim": 32,
    "q_lora_rank": 192, "qk_nope_head_dim": 48, "v_head_dim": 40, "ffn_size": 1024, "vocab_size": 4096,
}
SMALL_MLA_DEFAULT_DIMS = {  # d_nope and d_v left out: the head dim, hidden / heads = 64
    "num_layers": 2, "hidden_size": 256, "num_attention_heads": 4, "kv_lora_rank": 64, "qk_rope_head_dim": 16,
    "ffn_size": 512, "vocab_size": 1000, "tied_embeddings": True,
}
MLA_SHAPES = [DEEPSEEK_V2_LITE, SMALL_MLA, SMALL_MLA_DEFAULT_DIMS]
MLA_IDS = ["deepseek-v2-lite", "small-q-lora", "default-dims"]
DIT_XL_2 = {"architecture": "diffusion", "num_layers": 28, "hidden_size": 1152, "num_attention_heads": 16,
            "ffn_size": 4608}
# DiT-XL/2 on 256×256 images: 32×32 latents in patches of 2 = 256 tokens, learned σ (8 output channels), 1000 classes.
DIT_XL_2_GEOMETRY = DiffusionGeometry(patch_size=2, in_channels=4, out_channels=8, num_classes=1000)
DIT_XL_2_PUBLISHED_PARAMETERS = 675_129_632  # facebookresearch/DiT models.py, counted by PyTorch


def _proxy_parameters(model: dict, **plan) -> int:
    proxy = build_proxy(ProxyPlan(shape=ProxyShape.from_spec(model), device="meta", **plan), "meta")
    return sum(parameter.numel() for parameter in proxy.parameters())


def test_dense_multi_head_proxy_has_the_estimators_parameter_count():
    expected = shapes.parameter_count(shapes.ModelShape(**LLAMA_2_7B)).total
    assert expected == 6_738_415_616  # Llama-2-7B
    assert _proxy_parameters(LLAMA_2_7B) == expected


def test_gqa_proxy_has_the_estimators_parameter_count():
    expected = shapes.parameter_count(shapes.ModelShape(**LLAMA_3_8B)).total
    assert expected == 8_030_261_248  # Llama-3-8B
    assert _proxy_parameters(LLAMA_3_8B) == expected


@pytest.mark.parametrize("model", [MIXTRAL_8X7B, SHARED_EXPERT_MOE], ids=["mixtral-8x7b", "shared-experts"])
def test_moe_proxy_has_the_estimators_parameter_count(model):
    count = shapes.parameter_count(shapes.ModelShape(**model))
    assert _proxy_parameters(model) == count.total
    if model is MIXTRAL_8X7B:
        assert count.total == 46_702_792_704


def test_encoder_proxy_has_the_estimators_parameter_count():
    expected = shapes.parameter_count(shapes.ModelShape(**BERT_BASE)).total
    assert expected == 109_482_240  # bert-base-uncased
    assert _proxy_parameters(BERT_BASE) == expected


def test_diffusion_proxy_holds_the_stated_count_the_estimator_uses():
    stated = 2_000_000_000
    shape = shapes.ModelShape(**DIT_XL_2, params=stated)
    params, _, origin = shapes.effective_parameters(shape)
    assert (params, origin) == (stated, "stated")  # the estimator has no formula for diffusion: it takes the count
    assert _proxy_parameters({**DIT_XL_2, "params": stated}, geometry=DIT_XL_2_GEOMETRY, tokens=256) == params
    # Without a stated count the proxy is a plain DiT: DiT-XL/2 has its published parameter count.
    assert _proxy_parameters(DIT_XL_2, geometry=DIT_XL_2_GEOMETRY, tokens=256) == DIT_XL_2_PUBLISHED_PARAMETERS


@pytest.mark.parametrize("precision", ["bf16", "fp16", "fp32", "int4", "nf4", "fp8", "int8"])
def test_proxy_weight_bytes_equal_the_estimators_weights_term(precision):
    proxy = build_proxy(ProxyPlan(shape=ProxyShape.from_spec({**LLAMA_3_8B, "precision": precision}),
                                  device="meta"), "meta")
    expected = inference.weights_term(shapes.ModelShape(**LLAMA_3_8B, precision=precision)).size_bytes
    assert logical_parameters(proxy) == 8_030_261_248
    # fp8 and int8 keep one fp32 scale per matrix, which the estimator leaves out (4 bytes × 224 matrices).
    scales = 4 * sum(1 for module in proxy.modules() if isinstance(module, ScaledStore))
    assert storage_bytes(proxy) == expected + scales


def test_qlora_base_bytes_equal_the_estimators_frozen_base_term():
    request = training.TrainingRequest(sequence_length=2048, method="qlora", lora_rank=16)
    breakdown = training.estimate_training(shapes.ModelShape(**LLAMA_3_8B), request)
    plan = ProxyPlan(shape=ProxyShape.from_spec(LLAMA_3_8B), device="meta", workload="training", method="qlora",
                     lora_rank=16)
    proxy = build_proxy(plan, "meta", build_adapters=False)
    assert storage_bytes(proxy) == breakdown.term("frozen_base_weights").size_bytes


@pytest.mark.parametrize("model", [LLAMA_3_8B, SHARED_EXPERT_MOE], ids=["gqa", "shared-experts"])
def test_lora_adapters_have_the_estimators_trainable_count(model):
    expected = training.lora_trainable_parameters(shapes.ModelShape(**model), 16)
    plan = ProxyPlan(shape=ProxyShape.from_spec(model), device="meta", workload="training", method="lora",
                     lora_rank=16)
    assert adapter_parameters(build_proxy(plan, "meta")) == expected
    assert lora_parameters(ProxyShape.from_spec(model), 16) == expected


@pytest.mark.parametrize(
    ("model", "context"),
    [
        (LLAMA_3_8B, 8192),
        (LLAMA_3_8B, 1000),
        ({**LLAMA_3_8B, "sliding_window": 512, "sliding_window_layers": 16}, 3000),
    ],
    ids=["8k", "unaligned", "sliding-window"],
)
def test_kv_cache_bytes_per_request_equal_the_estimators(model, context):
    expected = inference.kv_cache_bytes_per_request(shapes.ModelShape(**model), context)
    proxy = build_proxy(ProxyPlan(shape=ProxyShape.from_spec(model), device="meta"), "meta")
    cache = proxy.allocate_cache(3, context, 16, torch.bfloat16)
    assert cache.nbytes == 3 * expected
    assert ProxyShape.from_spec(model).kv_cache_bytes_per_request(context, "bf16") == expected


@pytest.mark.parametrize("model", MLA_SHAPES, ids=MLA_IDS)
def test_latent_attention_proxy_has_the_estimators_parameter_count(model):
    count = shapes.parameter_count(shapes.ModelShape(**model))
    assert _proxy_parameters(model) == count.total
    attention = next(term for term in count.terms if term.name == "attention")
    proxy = build_proxy(ProxyPlan(shape=ProxyShape.from_spec(model), device="meta"), "meta")
    assert model["num_layers"] * sum(p.numel() for p in proxy.layers[0].attention.parameters()) == attention.count
    if model is DEEPSEEK_V2_LITE:
        assert count.total == DEEPSEEK_V2_LITE_CHECKPOINT_PARAMETERS


@pytest.mark.parametrize("model", MLA_SHAPES, ids=MLA_IDS)
@pytest.mark.parametrize(("context", "requests"), [(4096, 1), (1000, 7)], ids=["4k", "unaligned-x7"])
def test_latent_kv_cache_bytes_equal_the_estimators(model, context, requests):
    """Per token and layer r_kv + d_rope elements (DeepSeek-V2-Lite: 27·576·2 = 31,104 bytes in bf16)."""
    shape = shapes.ModelShape(**model)
    expected = inference.kv_cache_bytes_per_request(shape, context)
    proxy = build_proxy(ProxyPlan(shape=ProxyShape.from_spec(model), device="meta"), "meta")
    cache = proxy.allocate_cache(requests, context, 16, torch.bfloat16)
    assert cache.nbytes == requests * expected
    assert ProxyShape.from_spec(model).kv_cache_bytes_per_request(context, "bf16") == expected
    per_token = model["num_layers"] * (model["kv_lora_rank"] + model["qk_rope_head_dim"]) * 2
    assert inference.kv_cache_bytes_per_token(shape) == per_token
    if model is DEEPSEEK_V2_LITE:
        assert per_token == 31_104
    fp8 = proxy.allocate_cache(requests, context, 16, torch.float8_e4m3fn)
    assert fp8.nbytes == requests * inference.kv_cache_bytes_per_request(shape, context, "fp8")


@pytest.mark.parametrize("model", MLA_SHAPES, ids=MLA_IDS)
@pytest.mark.parametrize("targets", [training.LORA_TARGETS, ("q", "v"), ("k", "o", "up")], ids=["all", "q-v", "k-o-up"])
def test_latent_attention_lora_adapters_have_the_estimators_trainable_count(model, targets):
    expected = training.lora_trainable_parameters(shapes.ModelShape(**model), 16, targets)
    plan = ProxyPlan(shape=ProxyShape.from_spec(model), device="meta", workload="training", method="lora",
                     lora_rank=16, lora_targets=tuple(targets))
    assert adapter_parameters(build_proxy(plan, "meta")) == expected
    assert lora_parameters(ProxyShape.from_spec(model), 16, tuple(targets)) == expected


@pytest.mark.parametrize("precision", ["bf16", "fp32", "fp8", "int8"])
def test_latent_attention_weight_bytes_against_the_estimators_weights_term(precision):
    model = {**DEEPSEEK_V2_LITE, "precision": precision}
    proxy = build_proxy(ProxyPlan(shape=ProxyShape.from_spec(model), device="meta"), "meta")
    expected = inference.weights_term(shapes.ModelShape(**model)).size_bytes
    assert logical_parameters(proxy) == DEEPSEEK_V2_LITE_CHECKPOINT_PARAMETERS
    if precision in ("bf16", "fp32"):
        assert storage_bytes(proxy) == expected
        return
    # The proxy keeps the latent KV norm (r_kv per layer, like every other norm) in 16-bit where the estimator counts
    # it with the quantised attention: 27·512 parameters at 2 bytes instead of 1; and one fp32 scale per matrix (per
    # expert matrix), which the estimator leaves out.
    latent_norms = 27 * 512
    scales = sum(4 * module.scale.numel() for module in proxy.modules() if isinstance(module, ScaledStore))
    assert storage_bytes(proxy) == expected + latent_norms * (2 - 1) + scales
