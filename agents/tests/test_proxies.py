"""Proxy models on the CPU with tiny shapes: what they hold, how they store quantised weights, and that their
inference and training paths compute what they claim (cache-based decode equals a full forward, and so on)."""

import pytest
import torch
from dossier_agent.proxies.build import ProxyPlan, adapter_parameters, attach_adapters, build_proxy
from dossier_agent.proxies.modules import Attention, BuildOptions, DecoderProxy
from dossier_agent.proxies.optim import MasterWeightAdamW
from dossier_agent.proxies.shape import (
    DiffusionGeometry,
    ProxyShape,
    ProxyShapeError,
    dit_structure_breakdown,
    lora_parameters,
    total_parameters,
)
from dossier_agent.proxies.weights import (
    NF4_LEVELS,
    PackedInt4Store,
    PackedNF4Store,
    apply_weight,
    logical_parameters,
    storage_bytes,
)
from torch.nn import functional as F

DENSE = {"num_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "ffn_size": 96, "vocab_size": 128}
GQA = {**DENSE, "num_kv_heads": 2}
MOE = {**GQA, "architecture": "moe", "num_experts": 4, "num_experts_per_token": 2, "expert_ffn_size": 32,
       "num_shared_experts": 1, "first_dense_layers": 1, "qkv_bias": True}
ENCODER = {**DENSE, "architecture": "encoder", "position_embeddings": 32, "token_type_vocab_size": 2, "pooler": True}
DIT = {"architecture": "diffusion", "num_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "ffn_size": 128}


@pytest.fixture(autouse=True)
def _one_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    yield
    torch.set_num_threads(previous)


def _plan(model: dict, **changes) -> ProxyPlan:
    return ProxyPlan(shape=ProxyShape.from_spec(model), device="cpu", **changes)


@pytest.mark.parametrize("model", [DENSE, GQA, MOE, ENCODER], ids=["dense", "gqa", "moe", "encoder"])
def test_a_proxy_holds_exactly_the_parameters_of_its_formula(model):
    shape = ProxyShape.from_spec(model)
    proxy = build_proxy(ProxyPlan(shape=shape, device="meta"), "meta")
    assert sum(parameter.numel() for parameter in proxy.parameters()) == total_parameters(shape)


def test_a_dit_holds_its_structure_and_a_stated_count_exactly():
    geometry = DiffusionGeometry(patch_size=2, in_channels=4, out_channels=8, num_classes=10)
    structural = sum(dit_structure_breakdown(ProxyShape.from_spec(DIT), geometry, 16).values())
    bare = build_proxy(_plan(DIT, geometry=geometry, tokens=16), "meta")
    assert sum(parameter.numel() for parameter in bare.parameters()) == structural
    stated = build_proxy(_plan({**DIT, "params": structural + 1000}, geometry=geometry, tokens=16), "meta")
    assert sum(parameter.numel() for parameter in stated.parameters()) == structural + 1000
    assert stated.conditioning_fill.numel() == 1000
    with pytest.raises(ProxyShapeError) as excinfo:
        build_proxy(_plan({**DIT, "params": structural - 1}, geometry=geometry, tokens=16), "meta")
    assert excinfo.value.field == "params"


@pytest.mark.parametrize("precision", ["bf16", "fp32"])
def test_weights_are_made_on_the_device_at_the_target_dtype(precision):
    proxy = build_proxy(_plan({**GQA, "precision": precision}), "cpu")
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    assert {parameter.dtype for parameter in proxy.parameters()} == {dtype}
    assert {parameter.device.type for parameter in proxy.parameters()} == {"cpu"}
    assert storage_bytes(proxy) == total_parameters(ProxyShape.from_spec(GQA)) * dtype.itemsize
    assert float(proxy.embedding.float().std()) == pytest.approx(0.02, rel=0.1)  # random, not zeros


def test_nf4_store_packs_two_codes_per_byte_with_a_scale_per_block_of_64():
    store = PackedNF4Store((2, 64), device=torch.device("cpu"), compute_dtype=torch.float32,
                           double_quantisation=False)
    assert store.packed.dtype == torch.uint8 and store.packed.numel() == 64  # 128 values, two per byte
    assert store.absmax.numel() == 2 and store.absmax.dtype == torch.float32
    store.packed.fill_(0x7F)  # high nibble 7 → level 0.0, low nibble 15 → level 1.0
    store.absmax.copy_(torch.tensor([2.0, 3.0]))
    weight = store.materialise()
    assert weight.shape == (2, 64)
    assert weight[0, :4].tolist() == [0.0, 2.0, 0.0, 2.0]
    assert weight[1, :2].tolist() == [0.0, 3.0]
    store.packed.fill_(0x0E)  # levels 0 and 14
    assert store.materialise()[0, :2].tolist() == pytest.approx([2 * NF4_LEVELS[0], 2 * NF4_LEVELS[14]])


def test_nf4_double_quantisation_stores_byte_constants_and_one_fp32_per_256_blocks():
    store = PackedNF4Store((64, 512), device=torch.device("cpu"), compute_dtype=torch.float32,
                           double_quantisation=True)
    blocks = 64 * 512 // 64
    assert store.absmax.dtype == torch.uint8 and store.absmax.numel() == blocks
    assert store.absmax_scale.numel() == blocks // 256
    assert storage_bytes(store) == 64 * 512 // 2 + blocks + 4 * (blocks // 256)
    store.packed.fill_(0xFF)
    store.absmax.fill_(4)
    store.absmax_scale.fill_(0.5)
    assert torch.all(store.materialise() == 2.0)


def test_int4_store_subtracts_the_zero_point_and_scales_per_group_of_128():
    store = PackedInt4Store((2, 256), device=torch.device("cpu"), compute_dtype=torch.float32)
    assert store.group == 128 and store.scales.shape == (2, 2) and store.zero_points.shape == (2, 1)
    store.packed.fill_(0x52)  # values 5 and 2
    store.zero_points.fill_(0x13)  # group 0: zero point 1, group 1: zero point 3
    store.scales.copy_(torch.tensor([[0.5, 2.0], [1.0, 1.0]]))
    weight = store.materialise()
    assert weight[0, :2].tolist() == [2.0, 0.5]  # (5-1)·0.5, (2-1)·0.5
    assert weight[0, 128:130].tolist() == [4.0, -2.0]  # (5-3)·2, (2-3)·2


def test_a_frozen_quantised_weight_backpropagates_to_its_input_only():
    store = PackedNF4Store((32, 64), device=torch.device("cpu"), compute_dtype=torch.float32,
                           double_quantisation=False)
    x = torch.randn(3, 64, requires_grad=True)
    reference_x = x.detach().clone().requires_grad_(True)
    apply_weight(x, store).square().sum().backward()
    F.linear(reference_x, store.materialise()).square().sum().backward()
    assert torch.allclose(x.grad, reference_x.grad, atol=1e-5)
    assert not any(buffer.requires_grad for buffer in store.buffers())


def _reference_logits(model: DecoderProxy, tokens: torch.Tensor) -> torch.Tensor:
    x = F.embedding(tokens, model.embedding)
    for layer in model.layers:
        x = layer(x)
    return model._logits(x).float()


@pytest.mark.parametrize("model", [GQA, MOE], ids=["gqa", "moe"])
def test_decode_from_the_kv_cache_equals_a_full_forward(model):
    proxy = build_proxy(_plan({**model, "precision": "fp32"}), "cpu")
    tokens = torch.randint(128, (2, 9))
    with torch.inference_mode():
        cache = proxy.allocate_cache(2, 16, 16, torch.float32)
        prefill = proxy.prefill(tokens[:, :8], cache, slice(0, 2), 0)
        decoded = proxy.decode(tokens[:, 8:9], cache, 8)
        reference = _reference_logits(proxy, tokens)
    assert torch.allclose(prefill, reference[:, 7], atol=1e-4)
    assert torch.allclose(decoded, reference[:, 8], atol=1e-4)


def test_a_prefill_in_two_chunks_equals_one_chunk():
    proxy = build_proxy(_plan({**GQA, "precision": "fp32"}), "cpu")
    tokens = torch.randint(128, (1, 12))
    with torch.inference_mode():
        whole = proxy.prefill(tokens, proxy.allocate_cache(1, 16, 16, torch.float32), slice(0, 1), 0)
        cache = proxy.allocate_cache(1, 16, 16, torch.float32)
        proxy.prefill(tokens[:, :5], cache, slice(0, 1), 0)
        chunked = proxy.prefill(tokens[:, 5:], cache, slice(0, 1), 5)
    assert torch.allclose(whole, chunked, atol=1e-4)


def test_grouped_decode_attention_equals_expanded_heads():
    options = BuildOptions(device=torch.device("cpu"), compute_dtype=torch.float32)
    attention = Attention(options, ProxyShape.from_spec(GQA), encoder=False)
    proxy_cache = build_proxy(_plan({**GQA, "precision": "fp32"}), "cpu").allocate_cache(3, 32, 16, torch.float32)
    layer = proxy_cache.layers[0]
    layer.k.normal_()
    layer.v.normal_()
    x = torch.randn(3, 1, 64)
    with torch.inference_mode():
        out = attention.decode(x, layer, 20)
        q = attention.q(x).view(3, 1, 4, 16).transpose(1, 2)
        keys = layer.k[:, :, :21].repeat_interleave(2, dim=1)
        values = layer.v[:, :, :21].repeat_interleave(2, dim=1)
        expected = attention.o(F.scaled_dot_product_attention(q, keys, values).transpose(1, 2).reshape(3, 1, 64))
    assert torch.allclose(out, expected, atol=1e-5)


def test_the_kv_cache_holds_every_request_rounded_to_blocks_and_window_layers_hold_the_window():
    windowed = {**GQA, "num_layers": 3, "sliding_window": 20, "sliding_window_layers": 2}
    shape = ProxyShape.from_spec(windowed)
    proxy = build_proxy(_plan(windowed), "cpu")
    cache = proxy.allocate_cache(3, 70, 16, torch.bfloat16)
    assert [layer.capacity for layer in cache.layers] == [80, 32, 32]
    assert cache.nbytes == 3 * shape.kv_cache_bytes_per_request(70, "bf16") == 3 * 2 * 2 * 16 * 2 * (80 + 32 + 32)
    with torch.inference_mode():
        proxy.prefill(torch.randint(128, (3, 66)), cache, slice(0, 3), 0)
        for step in range(4):
            proxy.decode(torch.randint(128, (3, 1)), cache, 66 + step)
    fp8 = proxy.allocate_cache(1, 70, 16, torch.float8_e4m3fn)
    assert fp8.nbytes == shape.kv_cache_bytes_per_request(70, "fp8")


def test_lora_trains_the_adapters_only_and_qlora_keeps_a_packed_base():
    plan = _plan(GQA, workload="training", method="qlora", lora_rank=4)
    proxy = build_proxy(plan, "cpu", build_adapters=False)
    assert adapter_parameters(proxy) == 0
    attach_adapters(proxy, plan, "cpu")
    shape = ProxyShape.from_spec(GQA)
    assert adapter_parameters(proxy) == lora_parameters(shape, 4)
    assert logical_parameters(proxy) == total_parameters(shape) + lora_parameters(shape, 4)
    trainable = {name for name, parameter in proxy.named_parameters() if parameter.requires_grad}
    assert trainable and all(".lora." in f".{name}" for name in trainable)
    packed = [buffer for name, buffer in proxy.named_buffers() if name.endswith("packed")]
    assert packed and all(buffer.dtype == torch.uint8 for buffer in packed)
    assert plan.labels()["packed_4bit"] is True and "packed uint8" in plan.labels()["weights_storage"]
    before = [buffer.clone() for buffer in packed]
    optimizer = MasterWeightAdamW(proxy.parameters(), lr=1e-2)
    loss = proxy.training_loss(2, 8, recompute=False)
    loss.backward()
    optimizer.step()
    assert torch.isfinite(loss)
    assert all(torch.equal(old, new) for old, new in zip(before, packed, strict=True))
    adapters = [module for name, module in proxy.named_modules() if name.endswith("lora")]
    assert any(float(module.b.detach().abs().sum()) > 0 for module in adapters)


def test_full_training_of_quantised_weights_is_refused():
    with pytest.raises(ProxyShapeError):
        build_proxy(_plan({**GQA, "precision": "nf4"}, workload="training", method="full"), "meta")


def test_master_weight_adamw_is_torch_adamw_on_the_fp32_copy():
    torch.manual_seed(1)
    start = torch.randn(40, 7)
    gradients = [torch.randn(40, 7) for _ in range(3)]
    half = torch.nn.Parameter(start.to(torch.bfloat16))
    ours = MasterWeightAdamW([half], lr=1e-2, weight_decay=0.1)
    reference = torch.nn.Parameter(half.detach().float())
    theirs = torch.optim.AdamW([reference], lr=1e-2, weight_decay=0.1)
    for gradient in gradients:
        half.grad = gradient.to(torch.bfloat16)
        reference.grad = half.grad.float()
        ours.step()
        theirs.step()
    assert torch.allclose(ours.state[0]["master"], reference.detach(), atol=1e-6)
    assert torch.equal(half.detach(), reference.detach().to(torch.bfloat16))
    assert ours.state_bytes == 40 * 7 * 12  # fp32 master + two fp32 moments
    full = torch.nn.Parameter(torch.randn(5))
    assert MasterWeightAdamW([full]).state[0]["master"] is None  # fp32 parameters are their own master


@pytest.mark.parametrize("recompute", [False, True])
def test_encoder_and_dit_run_inference_and_a_training_step(recompute):
    encoder = build_proxy(_plan(ENCODER, workload="training"), "cpu")
    with torch.inference_mode():
        pooled = encoder.encode(torch.randint(128, (2, 40)))  # longer than the 32 learned positions
    assert pooled.shape == (2, 64)
    encoder.training_loss(2, 16, recompute=recompute).backward()
    assert all(parameter.grad is not None for parameter in encoder.parameters())

    geometry = DiffusionGeometry(num_classes=10)
    dit = build_proxy(_plan({**DIT, "params": 10**6}, workload="training", geometry=geometry, tokens=16), "cpu")
    dit.training_loss(2, 16, recompute=recompute).backward()
    assert dit.conditioning_fill.grad is not None and dit.position_table.grad is None
    with torch.inference_mode():
        patches, steps, labels = dit.random_inputs(3)
        assert dit(patches, steps, labels).shape == (3, 16, geometry.output_patch_dim)


@pytest.mark.parametrize(
    ("model", "field"),
    [
        ({**GQA, "kv_lora_rank": 64}, "qk_rope_head_dim"),  # latent attention needs both (test_proxy_mla.py)
        ({**GQA, "num_kv_heads": 3}, "num_kv_heads"),
        ({**GQA, "architecture": "other"}, "architecture"),
        ({**GQA, "vocab_size": None}, "vocab_size"),
        ({**GQA, "num_experts": 4}, "architecture"),
        ({**GQA, "precision": "int3"}, "precision"),
        ({**GQA, "pooler": "yes"}, "pooler"),
    ],
)
def test_shapes_without_a_proxy_name_the_field(model, field):
    with pytest.raises(ProxyShapeError) as excinfo:
        ProxyShape.from_spec(model)
    assert excinfo.value.field == field
