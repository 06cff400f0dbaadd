"""The serving roofline (apps/workloads/memory/roofline.py): a PREDICTION from datasheet peaks, checked against
hand-computed figures."""

from __future__ import annotations

import pytest

from apps.workloads.memory.errors import ShapeError
from apps.workloads.memory.roofline import (
    ACHIEVABLE_BANDWIDTH_FRACTION,
    ACHIEVABLE_COMPUTE_FRACTION,
    PREDICTION_LABEL,
    GpuPeaks,
    RequestMix,
    RooflineError,
    predict_serving,
)
from apps.workloads.memory.shapes import ModelShape

# Llama-3-8B (config.json of meta-llama/Meta-Llama-3-8B): L=32, h=4096, a=32, n_kv=8, d=128, f=14336, V=128256,
# untied embeddings. P = 2·V·h + L·(2·h·a·d + 2·h·n_kv·d) + L·3·h·f + L·2h + h
#   = 1,050,673,152 + 1,342,177,280 + 5,637,144,576 + 266,240 = 8,030,261,248.
LLAMA3_8B = ModelShape(
    num_layers=32, hidden_size=4096, num_attention_heads=32, num_kv_heads=8, ffn_size=14336, vocab_size=128256
)
# H100 SXM datasheet: 3.35 TB/s HBM3, 989 TFLOPS dense BF16 (1,979 with sparsity), 1,979 TFLOPS dense FP8.
H100 = GpuPeaks(memory_bandwidth_tbps=3.35, bf16_dense_tflops=989, fp8_dense_tflops=1979)
EXACT = {"bandwidth_efficiency": 1.0, "compute_efficiency": 1.0}


def test_llama3_8b_on_h100_at_the_bare_roofline_matches_the_hand_arithmetic():
    """B=16, I=512, O=256, t=1, efficiencies 1 (the bare roofline):

    weights = 8,030,261,248 · 2 B = 16,060,522,496 B
    KV/token = 2·L·n_kv·d·2 B = 2·32·8·128·2 = 131,072 B; c̄ = 512 + 256/2 = 640;
    KV/step = 16 · 131,072 · 640 = 1,342,177,280 B
    t_mem = (16,060,522,496 + 1,342,177,280) / 3.35e12 = 17,402,699,776 / 3.35e12 = 5.19484e-3 s
    FLOPs/step = 16 · (2·8,030,261,248 + 4·32·32·128·640) = 16 · 16,396,066,816 = 262,337,069,056
    t_comp = 262,337,069,056 / 989e12 = 2.65255e-4 s → memory-bound, t_step = 5.19484e-3 s
    prefill = 2·P·512 + 2·32·32·128·512² = 8,222,987,517,952 + 68,719,476,736 = 8,291,706,994,688 FLOP
    t_prefill = 8.2917e12 / 989e12 = 8.38393e-3 s
    requests/s = 16 / (16·8.38393e-3 + 256·5.19484e-3) = 16 / 1.464022 = 10.9288; tokens/s = 10.9288·256 = 2797.8
    """
    prediction = predict_serving(LLAMA3_8B, RequestMix(512, 256, 16), H100, **EXACT)
    assert prediction.weight_bytes_read_per_gpu == 16_060_522_496
    assert prediction.kv_bytes_read_per_gpu == 1_342_177_280
    assert prediction.decode_flops_per_gpu == pytest.approx(262_337_069_056)
    assert prediction.decode_memory_s == pytest.approx(17_402_699_776 / 3.35e12)
    assert prediction.decode_compute_s == pytest.approx(262_337_069_056 / 989e12)
    assert prediction.bound == "memory"
    assert prediction.prefill_flops_per_gpu == pytest.approx(8_291_706_994_688)
    assert prediction.prefill_s == pytest.approx(8.38393e-3, rel=1e-5)
    assert prediction.requests_per_s_per_gpu == pytest.approx(10.9288, rel=1e-4)
    assert prediction.output_tokens_per_s_per_gpu == pytest.approx(2797.77, rel=1e-4)
    assert prediction.label == PREDICTION_LABEL
    assert "prediction" in prediction.formula and "B / (B·t_prefill + O·t_step)" in prediction.formula


def test_the_default_efficiencies_scale_each_roof_and_are_cited_in_the_derivation():
    """With η_β = 0.60 and η_π = 0.76: t_mem = 5.19484e-3 / 0.6 = 8.65806e-3 s, t_prefill = 8.38393e-3 / 0.76
    = 1.103149e-2 s; requests/s = 16 / (16·1.103149e-2 + 256·8.65806e-3) = 16 / 2.392987 = 6.68626."""
    prediction = predict_serving(LLAMA3_8B, RequestMix(512, 256, 16), H100)
    assert prediction.bandwidth_efficiency == ACHIEVABLE_BANDWIDTH_FRACTION == 0.60
    assert prediction.compute_efficiency == ACHIEVABLE_COMPUTE_FRACTION == 0.76
    assert prediction.decode_step_s == pytest.approx(8.65806e-3, rel=1e-5)
    assert prediction.requests_per_s_per_gpu == pytest.approx(6.68626, rel=1e-5)
    assert "Databricks" in prediction.formula and "arXiv:2211.05102" in prediction.formula


def test_a_large_batch_crosses_the_ridge_and_becomes_compute_bound():
    """B=2048, I=O=16 (c̄ = 24): bytes = 16,060,522,496 + 2048·131,072·24 = 16,060,522,496 + 6,442,450,944
    = 22,502,973,440 → 6.7173e-3 s at 3.35 TB/s; FLOPs = 2048·(16,060,522,496 + 4·32·32·128·24 = 12,582,912)
    = 2048 · 16,073,105,408 = 3.29177e13 → 3.32838e-2 s at 989 TFLOPS: compute-bound."""
    prediction = predict_serving(LLAMA3_8B, RequestMix(16, 16, 2048), H100, **EXACT)
    assert prediction.bound == "compute"
    assert prediction.decode_memory_s == pytest.approx(22_502_973_440 / 3.35e12)
    assert prediction.decode_compute_s == pytest.approx(2048 * 16_073_105_408 / 989e12)
    assert prediction.decode_step_s == prediction.decode_compute_s


def test_tensor_parallel_splits_weights_kv_and_flops_and_reports_per_gpu():
    """t=2: weights/2 = 8,030,261,248 B, KV/min(2, 8) = 671,088,640 B, so t_mem halves; per GPU = per replica / 2."""
    one = predict_serving(LLAMA3_8B, RequestMix(512, 256, 16), H100, **EXACT)
    two = predict_serving(LLAMA3_8B, RequestMix(512, 256, 16), H100, tensor_parallel=2, **EXACT)
    assert two.weight_bytes_read_per_gpu == 8_030_261_248
    assert two.kv_bytes_read_per_gpu == 671_088_640
    assert two.decode_memory_s == pytest.approx(one.decode_memory_s / 2)
    assert two.requests_per_s_per_gpu == pytest.approx(two.requests_per_s_per_replica / 2)
    # Both halves of the step and the prefill halve: the replica is twice as fast, the GPU-normalised rate the same.
    assert two.requests_per_s_per_replica == pytest.approx(2 * one.requests_per_s_per_replica)


def test_fp8_weights_use_the_fp8_tensor_rate_and_read_half_the_bytes():
    """FP8: 1 byte/param for quantised weights (embeddings and head stay 16-bit), compute at 1,979 TFLOPS."""
    shape = ModelShape(
        num_layers=32, hidden_size=4096, num_attention_heads=32, num_kv_heads=8, ffn_size=14336,
        vocab_size=128256, precision="fp8",
    )
    prediction = predict_serving(shape, RequestMix(512, 256, 16), H100, **EXACT)
    assert prediction.compute_tflops == 1979 and prediction.compute_basis == "FP8 dense"
    # P_16bit = embedding + head + norms = 1,050,673,152 + 266,240 = 1,050,939,392 (2 B each);
    # P_quantised = 8,030,261,248 − 1,050,939,392 = 6,979,321,856 (1 B each): 9,081,200,640 B.
    assert prediction.weight_bytes_read_per_gpu == 6_979_321_856 + 2_101_878_784


def test_moe_reads_only_the_experts_its_batch_routes_to():
    """Mixtral-8x7B stated: P = 46,702,792,704, P_active = 12,879,925,248, E=8, k=2.
    R = (P − P_active)·8/6 = 45,097,156,608; at B=1 touched = 1 − 0.75 = 0.25:
    read = (P − R + R/4)/P = (1,605,636,096 + 11,274,289,152)/P = 12,879,925,248/P (= the active share).
    At B=4 touched = 1 − 0.75⁴ = 0.68359375: read = 1,605,636,096 + 30,828,166,453 = 32,433,802,549 params."""
    shape = ModelShape(
        architecture="moe", num_layers=32, hidden_size=4096, num_attention_heads=32, num_kv_heads=8,
        ffn_size=14336, vocab_size=32000, num_experts=8, num_experts_per_token=2,
        params=46_702_792_704, active_params=12_879_925_248,
    )
    weight_bytes = 46_702_792_704 * 2
    one = predict_serving(shape, RequestMix(128, 128, 1), H100, **EXACT)
    assert one.weight_bytes_read_per_gpu == pytest.approx(12_879_925_248 * 2, rel=1e-9)
    four = predict_serving(shape, RequestMix(128, 128, 4), H100, **EXACT)
    assert four.weight_bytes_read_per_gpu == pytest.approx(weight_bytes * 32_433_802_549 / 46_702_792_704, rel=1e-6)
    # FLOPs follow the active parameters, not the total: 2·P_active per token.
    assert one.decode_flops_per_gpu == pytest.approx(2 * 12_879_925_248 + 4 * 32 * 32 * 128 * 192)


def test_models_without_generation_and_missing_peaks_are_refused():
    encoder = ModelShape(architecture="encoder", params=110_000_000)
    with pytest.raises(ShapeError):
        predict_serving(encoder, RequestMix(128, 1, 1), H100)
    with pytest.raises(RooflineError):
        GpuPeaks(memory_bandwidth_tbps=0, bf16_dense_tflops=989)
    with pytest.raises(RooflineError):
        predict_serving(LLAMA3_8B, RequestMix(1, 1, 1), H100, bandwidth_efficiency=1.5)
    with pytest.raises(ShapeError):
        predict_serving(LLAMA3_8B, RequestMix(1, 1, 1), H100, tensor_parallel=3)  # 3 does not divide 32 heads
