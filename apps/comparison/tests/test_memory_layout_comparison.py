"""The comparison sizes each self-hosted fleet with the memory estimator's layout (the one the workload page shows):
a GPU that holds the peak sessions in no layout is a `no_memory_fit` problem and is never priced; a fleet is at least
the layout's whole GPUs; an unstated GPUs-per-replica takes the layout's t·pp.

Figures (see apps/workloads/tests/test_layouts.py for the arithmetic): Llama-3-8B, 200 sessions at 8192 tokens on an
H100 reporting 81,559 MiB (85,520,809,984 B) → 4 replicas × 1 GPU of 50 sessions, 80,063,786,599 B per GPU;
Llama-3-70B, 1 session → 1 replica × 2 GPUs (TP 2), 82,519,219,201 B per GPU. The worked example's demand: peak
12 req/s × 1.01 (retries) = 12.12 req/s, always on (730 h), 20,000,000 accepted responses.
"""

import datetime
from decimal import Decimal

import pytest

from apps.catalog.models import SpecKey
from apps.catalog.services import gpu_spec_set
from apps.common.provenance import ProvenanceKind
from apps.comparison.selectors import comparison_for
from apps.comparison.tests.builders import gpu_candidate, measured, worked_example
from apps.quotes.tests.factories import GpuFactory

pytestmark = pytest.mark.django_db

D = Decimal
AS_OF = datetime.date(2026, 12, 2)
CHATBOT_200 = {"concurrent_sessions_peak": 200, "p95_input_tokens": 7000, "p95_output_tokens": 1192}
LLAMA_3_70B = {
    "model_name": "meta-llama/Meta-Llama-3-70B-Instruct",
    "num_layers": 80,
    "hidden_size": 8192,
    "num_attention_heads": 64,
    "num_kv_heads": 8,
    "ffn_size": 28672,
    "concurrent_sessions_peak": 1,
    "p95_input_tokens": 7000,
    "p95_output_tokens": 1192,
}


def _h100_driver_figure():
    gpu_spec_set(actor="test", gpu=GpuFactory(name="NVIDIA H100"), key=SpecKey.USABLE_MIB, value="81559",
                 source="nvidia-smi on an H100 SXM 80GB (driver-reported total)", as_of=AS_OF)


def test_a_candidate_whose_gpu_holds_the_workload_in_no_layout_is_not_priced(team, platform_user):
    """A 2 GB test GPU (datasheet 2·10⁹ B) cannot hold even the 2 GiB CUDA context and runtime plus the 10 % margin
    (2,147,483,648 × 1.1 = 2,362,232,013 B) in any layout. At 1.00 per GPU-hour it would be the cheapest row; it is a
    problem instead, naming the GPU, and the cheapest stays the worked example's B (0.0003515)."""
    gpu_spec_set(actor="test", gpu=GpuFactory(name="Test GPU 2 GB"), key=SpecKey.MEMORY_GB, value="2",
                 source="test datasheet", as_of=AS_OF)
    example = worked_example(team, platform_user)
    tiny = gpu_candidate(team, platform_user, example.summary, label="E tiny GPU", price="1.00", capacity="50",
                         gpu_name="Test GPU 2 GB")
    comparison = comparison_for(platform_user, example.summary)
    result = next(item for item in comparison.results if item.candidate.pk == tiny.pk)
    assert result.row is None and result.candidate_input is None
    assert result.problem.code == "no_memory_fit" and result.problem.field == "minimum_gpus_for_memory"
    assert "Test GPU 2 GB" in result.problem.message and "64 sessions" in result.problem.message
    assert result.predicted_memory_margin < 0  # shown as not fitting
    assert comparison.cheapest.candidate.pk == example.b.pk
    assert comparison.cheapest.row.effective_unit_cost == D("0.0003515")
    assert tiny.pk not in {item.candidate.pk for item in comparison.rows}


def test_a_fleet_the_rate_sizes_at_2_gpus_is_priced_with_the_4_its_memory_needs(team, platform_user):
    """200 sessions at 8192 tokens on H100s: the rate needs ⌈12.12 ÷ 7⌉ = 2 GPUs, the memory layout 4 (4 replicas ×
    1 GPU, 50 sessions each) → 4 GPUs × 730 h × 3.00 = 8,760.00, + 120.00 storage + 1,800.00 labor = 10,680.00,
    ÷ 20,000,000 = 0.000534 per response. The margin is taken at the layout's 50 sessions per GPU:
    1 − 80,063,786,599 ÷ 85,520,809,984 = 0.063809304 → 0.0638093 (6 significant digits; the old, one-GPU margin was
    1 − 257,400,485,479 ÷ 85,520,809,984 = −2.01)."""
    _h100_driver_figure()
    example = worked_example(team, platform_user, **CHATBOT_200)
    chat = gpu_candidate(team, platform_user, example.summary, label="F H100 chat", price="3.00", capacity="7")
    comparison = comparison_for(platform_user, example.summary)
    result = next(item for item in comparison.results if item.candidate.pk == chat.pk)
    assert result.problem is None
    assert result.memory.layout.replicas == 4 and result.memory.layout.sessions_per_replica == 50
    given = result.candidate_input
    assert given.minimum_gpus_for_memory == 4 and given.gpus_per_replica == 1
    source = given.provenance["minimum_gpus_for_memory"]
    assert source.kind is ProvenanceKind.ESTIMATED and source.by == "memory layout"
    assert "4 replicas × 1 GPUs per replica (TP 1, PP 1), 50 sessions per replica = 4 GPUs" in source.why
    row = result.row
    assert row.gpus == 4 and row.billed_compute == D("8760.00") and row.total_cost == D("10680.00")
    assert row.effective_unit_cost == D("0.000534")
    assert result.predicted_memory_margin == D("0.0638093")
    # worked example A (same H100, 5 req/s): the rate's 3 GPUs are below the memory floor of 4
    a = next(item for item in comparison.results if item.candidate.pk == example.a.pk)
    assert a.row.gpus == 4 and {note.code for note in a.row.notes} >= {"memory_floor"}


def test_an_unstated_gpus_per_replica_takes_the_layouts_tensor_parallel_degree(team, platform_user):
    """Llama-3-70B, 1 session: one H100 replica is TP 2. With 5 req/s per GPU the rate needs
    ⌈12.12 ÷ (5 × 2)⌉ = 2 replicas of 2 = 4 GPUs (one-GPU replicas would have been ⌈12.12 ÷ 5⌉ = 3 GPUs, each unable to
    hold the 131 GiB of weights). A candidate that states 4 GPUs per replica keeps them: ⌈12.12 ÷ 20⌉ = 1 replica =
    4 GPUs, above the floor of 2."""
    _h100_driver_figure()
    example = worked_example(team, platform_user, **LLAMA_3_70B)
    stated = gpu_candidate(team, platform_user, example.summary, label="G H100 TP4", price="3.00", capacity="5")
    measured(stated, platform_user, "gpus_per_replica", "4", f"job:{stated.pk}77")
    comparison = comparison_for(platform_user, example.summary)
    by_id = {item.candidate.pk: item for item in comparison.results}
    a = by_id[example.a.pk]
    assert (a.memory.layout.tensor_parallel, a.memory.layout.gpus) == (2, 2)
    assert a.candidate_input.gpus_per_replica == 2 and a.candidate_input.minimum_gpus_for_memory == 2
    assert a.row.gpus == 4
    g = by_id[stated.pk]
    assert g.candidate_input.gpus_per_replica == 4 and g.row.gpus == 4
    assert by_id[example.b.pk].problem is None  # the H200 has no memory figure here: no floor, no problem
    assert by_id[example.b.pk].candidate_input.minimum_gpus_for_memory is None
