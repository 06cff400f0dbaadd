"""Specification of the training estimator's parallelism and optimizer options (Korthikanti et al. 2022 Table 2,
pipeline stages, optimizer offload, 8-bit Adam) and of its inverse answers (largest micro-batch, smallest change)."""

from dataclasses import replace
from fractions import Fraction

import pytest

from apps.workloads.memory.capacity import Capacity, CapacitySource
from apps.workloads.memory.errors import ShapeError
from apps.workloads.memory.hf_config import parse_hf_config
from apps.workloads.memory.shapes import ModelShape
from apps.workloads.memory.training import (
    TrainingRequest,
    activation_bytes_per_layer,
    estimate_training,
    model_state_terms,
    optimizer_bytes_per_parameter,
)
from apps.workloads.memory.training_search import largest_micro_batch, smallest_change, training_answers
from apps.workloads.tests.test_memory import LLAMA_3_8B_CONFIG

LLAMA_3_8B_PARAMS = 8_030_261_248
LLAMA_3_8B_EMBEDDING = 128_256 * 4096  # V·h = 525,336,576


@pytest.fixture
def llama_3_8b() -> ModelShape:
    return parse_hf_config(LLAMA_3_8B_CONFIG)


def capacity(total_bytes: int) -> Capacity:
    return Capacity(total_bytes, CapacitySource.CATALOG, "test capacity")


# --------------------------------------------------------------------------------------------------------------------
# Korthikanti et al. 2022, Table 2, on their GPT-3 175B configuration
# --------------------------------------------------------------------------------------------------------------------

GPT3 = {"sequence_length": 2048, "micro_batch_size": 1, "hidden_size": 12288, "attention_heads": 96}
SBH = 2048 * 1 * 12288  # s·b·h = 25,165,824


# (arguments, bytes, formula, bytes / sbh) for a=96, h=12288, s=2048, b=1, t=8 (sbh = 25,165,824).
TABLE_2 = [
    # no parallelism: sbh·(34 + 5·96·2048/12288) = sbh·(34 + 80)
    ({}, 2_868_903_936, "s·b·h·(34 + 5·a·s/h)", 114),
    # tensor parallel t=8: sbh·(10 + 24/8 + 80/8)
    ({"tensor_parallel": 8}, 578_813_952, "s·b·h·(10 + 24/t + 5·a·s/(h·t))", 23),
    # tensor + sequence parallel: sbh·(34/8 + 80/8)
    ({"tensor_parallel": 8, "sequence_parallel": True}, 358_612_992, "s·b·h·(34/t + 5·a·s/(h·t))", Fraction(57, 4)),
    # tensor parallel + selective recompute: sbh·(10 + 3)
    ({"tensor_parallel": 8, "recompute": "selective"}, 327_155_712, "s·b·h·(10 + 24/t)", 13),
    # tensor + sequence parallel + selective recompute: sbh·34/8
    (
        {"tensor_parallel": 8, "sequence_parallel": True, "recompute": "selective"},
        106_954_752,
        "s·b·h·34/t",
        Fraction(17, 4),
    ),
    # full activation recompute: 2·sbh
    ({"tensor_parallel": 8, "recompute": "full"}, 50_331_648, "2·s·b·h", 2),
]


def test_table_2_rows_to_the_byte_for_gpt3_175b():
    """Every Table 2 row on the paper's GPT-3 175B layer, with flash_attention=False (the paper's GPT layer). The
    old estimator had no sequence parallelism, so the two sequence-parallel rows fail on it."""
    for arguments, expected_bytes, formula, per_sbh in TABLE_2:
        size, used_formula = activation_bytes_per_layer(**GPT3, **arguments)
        assert (size, used_formula) == (expected_bytes, formula), arguments
        assert Fraction(size, SBH) == per_sbh


def test_gpt3_figures_the_paper_states():
    """Paper, section 4.2.2: for GPT-3 5·a·s/h = 5·96·2048/12288 = 80, so selective recomputation drops 80 of the
    114 bytes per s·b·h (70 %). Abstract: activation memory reduced "by 5x": the tensor-parallel baseline over
    tensor + sequence parallel + selective is 23/4.25 = 5.41. Over GPT-3's 96 layers the last row stores
    96 · 4.25 · sbh = 10,267,656,192 bytes (9.56 GiB) per GPU."""
    assert 5 * 96 * 2048 // 12288 == 80
    baseline = activation_bytes_per_layer(**GPT3, tensor_parallel=8)[0]
    reduced = activation_bytes_per_layer(**GPT3, tensor_parallel=8, sequence_parallel=True, recompute="selective")[0]
    assert round(baseline / reduced, 2) == 5.41
    assert 1 - Fraction(activation_bytes_per_layer(**GPT3, recompute="selective")[0], SBH * 114) == Fraction(80, 114)
    assert 96 * reduced == 10_267_656_192


def test_flash_attention_maps_onto_the_selective_rows_and_full_recompute_with_sp_keeps_the_shard():
    """FlashAttention stores no s×s scores: TP + FlashAttention = the TP + selective row (13·sbh); TP + SP +
    FlashAttention = 34/t. With sequence parallelism the stored layer input is sharded: 2·sbh/8 = 6,291,456."""
    assert activation_bytes_per_layer(**GPT3, tensor_parallel=8, flash_attention=True)[0] == 13 * SBH
    assert (
        activation_bytes_per_layer(**GPT3, tensor_parallel=8, sequence_parallel=True, flash_attention=True)[0]
        == 106_954_752
    )
    assert activation_bytes_per_layer(**GPT3, tensor_parallel=8, sequence_parallel=True, recompute="full") == (
        6_291_456,
        "2·s·b·h/t",
    )


def test_sequence_parallelism_reaches_the_whole_estimate(llama_3_8b):
    """Llama 3 8B, s=2048, t=4, FlashAttention: 32 layers · sbh·34/4 = 32 · 71,303,168 with SP, against
    32 · sbh·(10 + 6) = 32 · 134,217,728 without."""
    request = TrainingRequest(sequence_length=2048, tensor_parallel=4)
    plain = estimate_training(llama_3_8b, request).term("activations")
    parallel = estimate_training(llama_3_8b, replace(request, sequence_parallel=True)).term("activations")
    assert plain.size_bytes == 32 * 134_217_728
    assert parallel.size_bytes == 32 * 71_303_168
    assert parallel.inputs["sequence parallel"] is True


# --------------------------------------------------------------------------------------------------------------------
# Pipeline stages
# --------------------------------------------------------------------------------------------------------------------


def test_first_pipeline_stage_holds_the_embedding_a_quarter_of_the_body_and_l_layers_of_activations(llama_3_8b):
    """Llama 3 8B, p=4, t=4, SP, s=2048, b=1. Body = P − 2·V·h = 8,030,261,248 − 1,050,673,152 = 6,979,588,096; the
    first stage holds V·h + 8/32 of it = 525,336,576 + 1,744,897,024 = 2,270,233,600 parameters: weights
    2·P/t = 1,135,116,800, optimizer 12·P/t = 6,810,700,800. Activations: p micro-batches × 8 layers × sbh·34/4 =
    32 · 71,303,168 = 2,281,701,376, no output layer. The last stage (same parameters with the head, 8 layers of one
    micro-batch = 570,425,344 + output 2048·(4096 + 128,256) = 271,056,896) is lighter."""
    request = TrainingRequest(sequence_length=2048, tensor_parallel=4, sequence_parallel=True, pipeline_parallel=4)
    breakdown = estimate_training(llama_3_8b, request)
    assert breakdown.gpus == 16
    assert breakdown.term("weights").size_bytes == 1_135_116_800
    assert breakdown.term("gradients").size_bytes == 1_135_116_800
    assert breakdown.term("optimizer_states").size_bytes == 6_810_700_800
    assert breakdown.term("activations").size_bytes == 2_281_701_376
    assert breakdown.term("activations").inputs["pipeline stage"] == "first"
    assert "output_activations" not in {term.name for term in breakdown.terms}
    # The first stage stores L layers' worth whatever p divides L: the same as without pipeline parallelism.
    whole = estimate_training(llama_3_8b, replace(request, pipeline_parallel=1))
    assert whole.term("activations").size_bytes == breakdown.term("activations").size_bytes


def test_the_last_stage_is_the_estimate_when_the_output_layer_outweighs_the_first_stages_activations():
    """L=2, p=2, h=64, a=4, V=50,000, s=128, FlashAttention. First stage: 2 micro-batches × 1 layer × sbh·34 =
    2 · 278,528 = 557,056. Last: 278,528 + output 4·128·(64 + 50,000) = 25,632,768. Both hold V·h + half the body."""
    shape = ModelShape(params=10_000_000, num_layers=2, hidden_size=64, num_attention_heads=4, vocab_size=50_000)
    breakdown = estimate_training(shape, TrainingRequest(sequence_length=128, pipeline_parallel=2))
    assert breakdown.term("activations").size_bytes == 278_528
    assert breakdown.term("activations").inputs["pipeline stage"] == "last"
    assert breakdown.term("output_activations").size_bytes == 25_632_768
    stage_params = 50_000 * 64 + (10_000_000 - 2 * 50_000 * 64) // 2  # 3,200,000 + 1,800,000
    assert breakdown.term("weights").size_bytes == 2 * stage_params


def test_more_pipeline_stages_than_layers_is_refused():
    shape = ModelShape(params=10_000_000, num_layers=2, hidden_size=64, num_attention_heads=4)
    with pytest.raises(ShapeError) as excinfo:
        estimate_training(shape, TrainingRequest(sequence_length=128, pipeline_parallel=3))
    assert excinfo.value.field == "pipeline_parallel"


# --------------------------------------------------------------------------------------------------------------------
# Optimizer: offload and 8-bit Adam
# --------------------------------------------------------------------------------------------------------------------


def test_cpu_offload_leaves_16_bit_weights_and_gradients_on_the_gpu():
    """P=1,000,000, ZeRO-2, N=4: weights 2·P = 2,000,000, gradients 2·P/N = 500,000 stay; the 12·P/N = 3,000,000
    bytes of fp32 master weights and moments go to host memory (0 on the GPU)."""
    weights, gradients, optimizer = model_state_terms(1_000_000, 2, 4, optimizer_offload="cpu")
    assert (weights.size_bytes, gradients.size_bytes, optimizer.size_bytes) == (2_000_000, 500_000, 0)
    assert optimizer.inputs["offloaded bytes"] == 3_000_000
    assert "CPU memory" in optimizer.formula
    _, _, on_nvme = model_state_terms(1_000_000, 3, 4, optimizer_offload="nvme")
    assert (on_nvme.size_bytes, on_nvme.inputs["offloaded bytes"]) == (0, 3_000_000)
    assert "NVMe" in on_nvme.formula


def test_8_bit_adam_keeps_fp32_master_weights_and_two_block_quantised_moments():
    """4 (fp32 master) + 2·(1 + 4/256) = 6.03125 bytes per parameter: 6,031,250 for a million parameters."""
    assert optimizer_bytes_per_parameter(8) == Fraction(193, 32)
    assert optimizer_bytes_per_parameter(32) == 12
    _, _, optimizer = model_state_terms(1_000_000, 0, 1, optimizer_bits=8)
    assert (optimizer.size_bytes, optimizer.formula) == (6_031_250, "6.03125·P/t")


def test_8_bit_adam_in_a_full_estimate(llama_3_8b):
    """Llama 3 8B without ZeRO: optimizer states 6.03125 · 8,030,261,248 = 48,432,513,152 bytes (12·P: 96.4 GB)."""
    breakdown = estimate_training(llama_3_8b, TrainingRequest(sequence_length=1024, optimizer_bits=8))
    assert breakdown.term("optimizer_states").size_bytes == 48_432_513_152


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"sequence_parallel": True}, "sequence_parallel"),  # needs t > 1
        ({"sequence_parallel": "yes", "tensor_parallel": 2}, "sequence_parallel"),
        ({"pipeline_parallel": 0}, "pipeline_parallel"),
        ({"optimizer_bits": 16}, "optimizer_bits"),
        ({"optimizer_bits": True}, "optimizer_bits"),
        ({"optimizer_offload": "disk"}, "optimizer_offload"),
        ({"optimizer_offload": "cpu"}, "optimizer_offload"),  # ZeRO stage 0
        ({"optimizer_offload": "nvme", "zero_stage": 2}, "optimizer_offload"),
        ({"optimizer_offload": "cpu", "zero_stage": 2, "optimizer_bits": 8}, "optimizer_bits"),
    ],
)
def test_bad_parallelism_and_optimizer_settings_name_the_field(changes, field):
    with pytest.raises(ShapeError) as excinfo:
        TrainingRequest(**{"sequence_length": 2048, **changes})
    assert excinfo.value.field == field


# --------------------------------------------------------------------------------------------------------------------
# Inverse answers
# --------------------------------------------------------------------------------------------------------------------

# One million parameters, 2 layers, h=64, a=4, no CUDA context, runtime or margin: every byte is a formula term.
SMALL = ModelShape(params=1_000_000, num_layers=2, hidden_size=64, num_attention_heads=4)
BARE = {"cuda_context_bytes": 0, "runtime_overhead_bytes": 0, "safety_margin_fraction": 0}


def test_largest_micro_batch_by_bisection_hand_checked():
    """s=128, FlashAttention: 16·P = 16,000,000 + b · 2 layers · 128·64·34 = b · 557,056. A capacity of
    16,000,000 + 10·557,056 + 100 fits b=10 and not b=11; one byte under the model states fits nothing."""
    request = TrainingRequest(sequence_length=128, **BARE)
    assert largest_micro_batch(SMALL, request, capacity(16_000_000 + 10 * 557_056 + 100)) == 10
    assert largest_micro_batch(SMALL, request, capacity(16_000_000 + 557_056)) == 1
    assert largest_micro_batch(SMALL, request, capacity(15_999_999)) == 0
    assert largest_micro_batch(SMALL, request, capacity(2**40)) == 65_536


# s=1024, N=4: sbh = 65,536; without FlashAttention a layer stores sbh·(34 + 5·4·1024/64) = 354·sbh = 23,199,744.
WIDE = {"sequence_length": 1024, "data_parallel_gpus": 4, **BARE}


def test_smallest_change_is_selective_recomputation_where_it_suffices():
    """Planned: 16,000,000 + 2 · 23,199,744 = 62,399,488. Selective: 16,000,000 + 2 · 34·sbh = 20,456,448."""
    request = TrainingRequest(flash_attention=False, **WIDE)
    change = smallest_change(SMALL, request, capacity(30_000_000))
    assert change is not None
    assert [step.code for step in change.steps] == ["recompute=selective"]
    assert change.request == replace(request, recompute="selective")
    assert change.breakdown.total_bytes == 20_456_448
    assert "selective" in change.reason


def test_smallest_change_is_zero_3_where_selective_recomputation_does_not_suffice():
    """FlashAttention: 2 · 34·sbh = 4,456,448 of activations, which selective recomputation cannot lower. At 8,500,000
    bytes ZeRO-1 (4 + 12/4 = 7 bytes/param: 11,456,448) and ZeRO-2 (2 + 14/4: 9,956,448) do not fit; ZeRO-3 (16/4:
    4,000,000 + 4,456,448 = 8,456,448) does."""
    request = TrainingRequest(**WIDE)
    change = smallest_change(SMALL, request, capacity(8_500_000))
    assert change is not None
    assert [step.code for step in change.steps] == ["zero_stage=3"]
    assert change.breakdown.total_bytes == 8_456_448
    assert change.steps[0].params == {"stage": 3, "gpus": 4}


def test_smallest_change_combines_rungs_then_adds_gpus():
    """FlashAttention, capacity 5,000,000. Full recomputation stores 2 · 2·sbh + one layer 34·sbh = 2,490,368.
    Nothing alone fits; ZeRO-3 + full recomputation + CPU offload does: weights and gradients 4·P/4 = 1,000,000
    + 2,490,368 = 3,490,368. At 3,000,000 that is still too much, so GPUs are added at ZeRO-3: 4,000,000/N +
    2,490,368 ≤ 3,000,000 needs N ≥ 7.85, so N = 8 (2,990,368)."""
    request = TrainingRequest(**WIDE)
    change = smallest_change(SMALL, request, capacity(5_000_000))
    assert change is not None
    assert [step.code for step in change.steps] == ["recompute=full", "zero_stage=3", "optimizer_offload=cpu"]
    assert change.breakdown.total_bytes == 3_490_368
    more = smallest_change(SMALL, request, capacity(3_000_000))
    assert more is not None
    assert [step.code for step in more.steps][-1] == "data_parallel_gpus=8"
    assert more.breakdown.total_bytes == 2_990_368
    assert more.steps[-1].message == "Train on 8 data-parallel GPUs instead of 4."


def test_smallest_change_without_a_fitting_rung_and_when_nothing_is_needed():
    """Full recomputation's one live layer (2,228,224 bytes) alone exceeds 2,000,000: nothing fits. At 2**40 bytes the
    plan fits as planned: a change without steps."""
    request = TrainingRequest(**WIDE)
    assert smallest_change(SMALL, request, capacity(2_000_000)) is None
    unchanged = smallest_change(SMALL, request, capacity(2**40))
    assert unchanged is not None
    assert (unchanged.needed, unchanged.request, unchanged.reason) == (False, request, "It fits as planned.")


def test_training_answers_for_a_page():
    """The plan of the selective test: 62,399,488 bytes against 30,000,000 does not fit; at b=1 nothing smaller."""
    request = TrainingRequest(flash_attention=False, **WIDE)
    answers = training_answers(SMALL, request, capacity(30_000_000))
    assert not answers.fit.fits
    assert answers.largest_micro_batch == 0
    assert answers.smallest_change is not None
    assert answers.smallest_change.steps[0].code == "recompute=selective"
