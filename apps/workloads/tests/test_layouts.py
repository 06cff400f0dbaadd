"""Serving layouts: data-parallel replicas × tensor (× pipeline) parallel GPUs holding the peak sessions, the cheapest
by whole GPUs, on the workload's estimate, shortlist, page and API.

Figures: Llama-3-8B (32 layers, h 4096, 32 heads, 8 KV heads, d 128, f 14336, V 128256, bf16) has P = 8,030,261,248
parameters (weights 2P = 16,060,522,496 B) and a KV cache of 2·32·8·128·2 = 131,072 B per token: one session at
c = 8192 tokens holds 131,072 · 8192 = 1,073,741,824 B = 1 GiB, 200 sessions 200 GiB. Llama-3-70B (80 layers,
h 8192, 64 heads, 8 KV heads, f 28672, V 128256, bf16) has P = 70,553,706,496 (weights 141,107,412,992 B). Every
estimate adds the 2 GiB CUDA context + runtime (2,147,483,648 B) and a 10 % safety margin of the subtotal. The H100
80 GB reports 81,559 MiB to the driver: 81,559 · 2²⁰ = 85,520,809,984 B; its datasheet basis is 80·10⁹ B.
"""

import json

import pytest

from apps.workloads import estimates
from apps.workloads.memory.capacity import FitStatus, choose_capacity
from apps.workloads.memory.errors import ShapeError
from apps.workloads.memory.inference import InferenceRequest, estimate_inference
from apps.workloads.memory.layouts import (
    Layout,
    cheapest_layout,
    inference_layouts,
    layout_for,
)
from apps.workloads.memory.search import fewest_gpus_inference
from apps.workloads.memory.shapes import ModelShape
from apps.workloads.shortlist import FITS_WITH_MORE_GPUS, build_shortlist
from apps.workloads.tests.factories import ready_summary

LLAMA_3_8B = {
    "num_layers": 32,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_kv_heads": 8,
    "ffn_size": 14336,
    "vocab_size": 128256,
}
LLAMA_3_70B = {
    "num_layers": 80,
    "hidden_size": 8192,
    "num_attention_heads": 64,
    "num_kv_heads": 8,
    "ffn_size": 28672,
    "vocab_size": 128256,
}
H100_DRIVER = choose_capacity(measured_total_mib=81559)
H100_DATASHEET = choose_capacity(datasheet_gb=80)
GIB = 2**30


def shape(values) -> ModelShape:
    return ModelShape(precision="bf16", **values)


def test_200_chatbot_sessions_at_8k_take_four_replicas_of_one_h100():
    """Llama-3-8B, 200 sessions at 8192 tokens on an H100 (85,520,809,984 B).

    One GPU with all 200 sessions needs 16,060,522,496 + 214,748,364,800 (KV) + … ≈ 239.7 GiB: no single GPU fits.
    One replica of one GPU at 50 sessions: weights 16,060,522,496 + KV 50 GiB 53,687,091,200 + activation peak
    8192·(2·4096 + 3·14336)·2 + 8·50·128256 = 838,860,800 + 51,302,400 = 890,163,200 + runtime 2,147,483,648 =
    72,785,260,544; + 10 % → 80,063,786,599 B ≤ 85,520,809,984 (headroom 5,457,023,385 B). At 54 sessions it is
    84,792,765,236 B (fits), at 55 sessions 85,975,009,895 B (does not): 54 per replica, ⌈200/54⌉ = 4 replicas,
    ⌈200/4⌉ = 50 sessions each, 4 GPUs. TP 2 (2 replicas × 2) and TP 4 (1 × 4) also need 4 GPUs: the tie goes to
    fewer GPUs per replica."""
    request = InferenceRequest(p95_context_tokens=8192, concurrent_sessions=200)
    planned = estimate_inference(shape(LLAMA_3_8B), request)
    assert planned.term("kv_cache").size_bytes == 200 * GIB and planned.total_bytes > H100_DRIVER.total_bytes

    layouts = inference_layouts(shape(LLAMA_3_8B), request, H100_DRIVER)
    best = cheapest_layout(layouts)
    assert (best.replicas, best.tensor_parallel, best.pipeline_parallel) == (4, 1, 1)
    assert (best.sessions_per_replica, best.gpus_per_replica, best.gpus) == (50, 1, 4)
    assert best.breakdown.total_bytes == 80_063_786_599
    assert best.fit.headroom_bytes == 85_520_809_984 - 80_063_786_599 and best.fit.fits
    four_gpu = {(item.tensor_parallel, item.pipeline_parallel) for item in layouts if item.gpus == 4}
    assert {(1, 1), (2, 1), (4, 1)} <= four_gpu  # the ties the order settles


def test_one_replica_holds_the_most_sessions_the_bisection_finds():
    """The per-replica load is the largest concurrency: 54 fits (84,792,765,236 B), 55 does not (85,975,009,895 B)."""
    request = InferenceRequest(p95_context_tokens=8192, concurrent_sessions=54)
    assert estimate_inference(shape(LLAMA_3_8B), request).total_bytes == 84_792_765_236
    one = layout_for(shape(LLAMA_3_8B), request, H100_DRIVER, 1, 1)
    assert (one.replicas, one.sessions_per_replica) == (1, 54)
    over = layout_for(shape(LLAMA_3_8B), InferenceRequest(8192, 55), H100_DRIVER, 1, 1)
    assert (over.replicas, over.sessions_per_replica) == (2, 28)  # ⌈55/54⌉ = 2 replicas of ⌈55/2⌉ = 28


def test_llama_70b_one_session_takes_tp2_on_the_driver_figure_and_tp4_on_the_datasheet():
    """Llama-3-70B, 1 session at 8192 tokens. TP 2: weights 141,107,412,992/2 = 70,553,706,496 + KV
    2·80·8·128·2·8192/2 = 1,342,177,280 + activation 8192·(2·8192 + 3·28672/2)·2 + 8·128256 = 974,104,576 + runtime
    2,147,483,648 = 75,017,472,000; + 10 % → 82,519,219,201 B (the margin rounds up). Against 85,520,809,984 B
    (81,559 MiB) it fits, tight (3,001,590,783 B left, 3.5 % < 10 %): 1 replica × 2 GPUs. PP 2 (83,294,326,580 B, the
    unsplit activation peak) also fits on 2 GPUs; tensor parallelism wins the tie. Against the datasheet's
    80,000,000,000 B neither 2-GPU layout fits: the cheapest is TP 4 (42,588,929,434 B per GPU), 4 GPUs."""
    request = InferenceRequest(p95_context_tokens=8192, concurrent_sessions=1)
    best = cheapest_layout(inference_layouts(shape(LLAMA_3_70B), request, H100_DRIVER))
    assert (best.replicas, best.tensor_parallel, best.pipeline_parallel, best.gpus) == (1, 2, 1, 2)
    assert best.breakdown.total_bytes == 82_519_219_201 and best.fit.status is FitStatus.TIGHT

    datasheet = cheapest_layout(inference_layouts(shape(LLAMA_3_70B), request, H100_DATASHEET))
    assert (datasheet.replicas, datasheet.tensor_parallel, datasheet.pipeline_parallel) == (1, 4, 1)
    assert datasheet.gpus == 4 and datasheet.breakdown.total_bytes == 42_588_929_434


def test_a_pipeline_stage_holds_its_share_of_the_layers_and_one_vocabulary_matrix():
    """Llama-3-8B, pp = 3: L_s = ⌈32/3⌉ = 11. V·h = 128256·4096 = 525,336,576 parameters = 1,050,673,152 B (bf16);
    W_layers = 16,060,522,496 − 2·1,050,673,152 (embedding and untied head) = 13,959,176,192; the fullest stage holds
    13,959,176,192·11/32 + 1,050,673,152 = 4,798,466,816 + 1,050,673,152 = 5,849,139,968 B of weights and
    11 layers' KV: 11·2·8·128·2·8192 = 369,098,752 B per session."""
    request = InferenceRequest(p95_context_tokens=8192, concurrent_sessions=1, pipeline_parallel=3)
    breakdown = estimate_inference(shape(LLAMA_3_8B), request)
    assert breakdown.term("weights").size_bytes == 5_849_139_968
    assert breakdown.term("kv_cache").size_bytes == 369_098_752
    assert breakdown.gpus == 3
    with pytest.raises(ShapeError) as error:
        estimate_inference(shape(LLAMA_3_8B), InferenceRequest(8192, 1, pipeline_parallel=33))
    assert error.value.field == "pipeline_parallel"


def test_tensor_degrees_that_do_not_divide_the_heads_are_no_layout():
    """t = 3 divides neither the 32 heads nor the 8 KV heads: inference_layouts skips it (no error)."""
    layouts = inference_layouts(
        shape(LLAMA_3_8B),
        InferenceRequest(8192, 4),
        H100_DRIVER,
        tensor_parallel_degrees=(1, 3),
        pipeline_parallel_degrees=(1,),
    )
    assert [item.tensor_parallel for item in layouts] == [1]


def test_cheapest_layout_prefers_fewer_gpus_then_smaller_replicas_then_tensor_parallel():
    request = InferenceRequest(8192, 1)
    base = estimate_inference(shape(LLAMA_3_8B), request)
    result = layout_for(shape(LLAMA_3_8B), request, H100_DRIVER, 1, 1).fit

    def layout(replicas, tp, pp):
        return Layout(replicas, tp, pp, 1, base, result)

    assert cheapest_layout([layout(1, 4, 1), layout(2, 2, 1), layout(4, 1, 1)]) == layout(4, 1, 1)
    assert cheapest_layout([layout(1, 1, 2), layout(1, 2, 1)]) == layout(1, 2, 1)
    assert cheapest_layout([layout(3, 1, 1), layout(1, 2, 1)]) == layout(1, 2, 1)  # 2 GPUs beat 3
    assert cheapest_layout([]) is None


def test_a_layout_needs_fewer_gpus_than_tensor_parallelism_alone():
    """300 sessions: one H100 holds 54, so 6 replicas × 1 GPU (50 each) = 6 GPUs; tensor parallelism alone needs
    TP 8 (the old answer, 8 GPUs): the layout saves two GPUs."""
    request = InferenceRequest(8192, 300)
    assert fewest_gpus_inference(shape(LLAMA_3_8B), request, H100_DRIVER)[0] == 8
    best = cheapest_layout(inference_layouts(shape(LLAMA_3_8B), request, H100_DRIVER))
    assert (best.replicas, best.tensor_parallel, best.sessions_per_replica, best.gpus) == (6, 1, 50, 6)


def _h100(**margin) -> estimates.GpuCapacity:
    return estimates.GpuCapacity(key=1, name="NVIDIA H100 SXM", capacity=H100_DRIVER, **margin)


def test_the_analysis_and_shortlist_count_the_layout_gpus():
    """The shortlist ranks the H100 as fitting with more GPUs: 6 (the layout's), not 8 (TP alone)."""
    plan = estimates.plan_from_inputs(
        "inference", {**LLAMA_3_8B, "precision": "bf16"}, {"p95_context_tokens": 8192, "concurrent_sessions": 300}
    )
    analysis = estimates.analyse(plan, [_h100()])
    (item,) = analysis.fits
    assert item.fit.status is FitStatus.DOES_NOT_FIT and item.fewest_gpus == 8
    assert item.layout.gpus == 6 and item.fits_somehow
    (entry,) = build_shortlist("realtime_inference", analysis).entries
    assert entry.fit_class == FITS_WITH_MORE_GPUS and entry.gpus_needed == 6 and entry.layout == item.layout


def test_a_calibrated_safety_margin_on_the_gpu_changes_its_layout():
    """With a 20 % margin calibrated for the GPU one H100 holds 48 sessions (84,762,869,761 B; 49 need
    86,052,591,207 B): TP 1 needs ⌈200/48⌉ = 5 GPUs, so TP 2 wins with 2 replicas × 2 GPUs of 100 sessions:
    8,030,261,248 + 53,687,091,200 + (8192·(8192 + 3·14336/2)·2 + 8·100·128256 = 589,144,064) + 2,147,483,648 =
    64,453,980,160; × 1.2 → 77,344,776,193 B per GPU. Without it: 4 replicas × 1 GPU."""
    plan = estimates.plan_from_inputs(
        "inference", {**LLAMA_3_8B, "precision": "bf16"}, {"p95_context_tokens": 8192, "concurrent_sessions": 200}
    )
    calibrated = _h100(safety_margin_fraction=0.2, safety_margin_source="agent run 17, 2026-12-01")
    plain, tuned = estimates.analyse(plan, [_h100(), calibrated]).fits
    assert (plain.layout.replicas, plain.layout.tensor_parallel) == (4, 1)
    assert (tuned.layout.replicas, tuned.layout.tensor_parallel, tuned.layout.sessions_per_replica) == (2, 2, 100)
    assert tuned.layout.breakdown.total_bytes == 77_344_776_193
    assert tuned.layout.breakdown.term("safety_margin").inputs["margin"] == 0.2
    assert estimates.gpu_layout(plan, calibrated) == tuned.layout  # the comparison's answer is the page's


def test_training_keeps_its_data_parallel_answer_as_a_layout():
    plan = estimates.plan_from_inputs(
        "training",
        {**LLAMA_3_8B, "precision": "bf16"},
        {"sequence_length": 4096, "zero_stage": 3, "recompute": "full"},
    )
    (item,) = estimates.analyse(plan, [_h100()]).fits
    assert item.layout is not None and item.layout.gpus == item.fewest_gpus
    assert item.layout.tensor_parallel == 1 and item.layout.pipeline_parallel == 1


# --------------------------------------------------------------------------------------------------------------------
# Page and API
# --------------------------------------------------------------------------------------------------------------------

CHATBOT_200 = {"concurrent_sessions_peak": 200, "p95_input_tokens": 7000, "p95_output_tokens": 1192}


@pytest.mark.django_db
def test_the_page_shows_each_gpus_layout_and_the_ranking_basis(client_for, finance_user, team, loaded_catalog):
    """The catalog's H100 SXM has only its datasheet 80·10⁹ B: one GPU holds 49 sessions (80,000,000,000 B ÷ 1.1 −
    the rest), so TP 1 needs ⌈200/49⌉ = 5 GPUs and TP 2 2 replicas × 2 = 4. The H200 SXM (143,771 MiB) holds 200
    sessions in 2 replicas of 1 GPU."""
    summary = ready_summary(team, **CHATBOT_200)
    page = client_for(finance_user).get(summary.get_absolute_url()).content.decode()
    assert "2 replicas × 2 GPUs (TP 2, PP 1), 100 sessions each — 4 GPUs" in page
    assert "2 replicas × 1 GPU (TP 1, PP 1), 100 sessions each — 2 GPUs" in page
    assert 'id="ranking-basis"' in page and "the cheapest fitting layout" in page


@pytest.mark.django_db
def test_the_estimate_api_returns_the_layout(client_for, finance_user, loaded_catalog):
    body = {
        "kind": "inference",
        "shape": LLAMA_3_70B,
        "request": {"p95_context_tokens": 8192, "concurrent_sessions": 1},
    }
    response = client_for(finance_user).post(
        "/api/v1/workloads/estimate/", data=json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 200, response.json()
    gpus = {gpu["name"]: gpu for gpu in response.json()["gpus"]}
    # The bundled catalog's H100 SXM carries the driver-reported 81,559 MiB (sourced): 2 GPUs at TP 2.
    h100 = gpus["NVIDIA H100 SXM"]
    assert h100["capacity_bytes"] == 81_559 * 2**20
    assert h100["layout"]["gpus"] == 2 and h100["layout"]["tensor_parallel"] == 2
    assert h100["layout"]["replicas"] == 1 and h100["layout"]["sessions_per_replica"] == 1
    assert h100["safety_margin_fraction"] is None and h100["safety_margin_source"] == ""
    # The H100 PCIe has no sourced driver figure: on the datasheet's 80·10⁹ B, TP 2 does not fit and TP 4 does.
    pcie = gpus["NVIDIA H100 PCIe"]
    assert pcie["capacity_bytes"] == 80 * 10**9
    assert pcie["layout"]["gpus"] == 4 and pcie["layout"]["tensor_parallel"] == 4
