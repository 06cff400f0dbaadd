"""Factories and complete field sets for the workloads tests."""

from __future__ import annotations

from decimal import Decimal

import factory
from django.utils import timezone

from apps.workloads.models import Status, Workload, WorkloadSummary
from tests.factories import TeamFactory

# Meta-Llama-3-8B (config.json): the model shape every test starts from.
LLAMA_3_8B_SHAPE = {
    "model_name": "meta-llama/Meta-Llama-3-8B-Instruct",
    "architecture": "dense",
    "num_layers": 32,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_kv_heads": 8,
    "ffn_size": 14336,
    "vocab_size": 128256,
    "tied_embeddings": False,
    "precision": "bf16",
    "max_context_tokens": 8192,
    "modality": "text",
    "tokenizer": "Llama 3 tiktoken (128K)",
    "model_change_cadence": "quarterly",
}

# Everything a real-time LLM inference summary needs before it can be marked ready.
REALTIME_READY_FIELDS = {
    "name": "Support chat",
    "workload_type": "realtime_inference",
    **LLAMA_3_8B_SHAPE,
    "mean_input_tokens": 1200,
    "p95_input_tokens": 3000,
    "mean_output_tokens": 250,
    "p95_output_tokens": 700,
    "concurrent_sessions_mean": 20,
    "concurrent_sessions_peak": 64,
    "arrival_rate_mean": Decimal("2.5"),
    "arrival_rate_peak": Decimal("9"),
    "demand_per_month": Decimal("4000000"),
    "hours_per_day": Decimal("24"),
    "days_per_month": Decimal("30"),
    "unit_of_success": "accepted_response",
    "quality_acceptance_rate": Decimal("0.95"),
    "quality_acceptance_source": "offline eval of 500 transcripts, 2026-11",
    "latency_class": "sub_second",
    "p95_ttft_ms": 800,
    "p99_ttft_ms": 1500,
    "p95_tpot_ms": 50,
    "p95_e2e_ms": 20000,
    "p99_e2e_ms": 30000,
    "streaming": True,
    "operating_mode": "always_on",
    "operating_boundary": "public_cloud",
    "tools": ["vllm", "kubernetes"],
}


# Everything a code-agent summary needs before it can be marked ready: Llama 3.1 8B (the Llama 3 8B shape with a
# 128K window) reading 24K–64K tokens of repository context per call, many calls per task, judged by accepted tasks.
CODE_AGENT_READY_FIELDS = {
    "name": "Issue-to-patch agent",
    "workload_type": "code_agent",
    **LLAMA_3_8B_SHAPE,
    "model_name": "meta-llama/Llama-3.1-8B-Instruct",
    "max_context_tokens": 131072,
    "mean_input_tokens": 24000,
    "p95_input_tokens": 64000,
    "mean_output_tokens": 1500,
    "p95_output_tokens": 4000,
    "concurrent_sessions_mean": 3,
    "concurrent_sessions_peak": 8,
    "arrival_rate_mean": Decimal("0.5"),
    "arrival_rate_peak": Decimal("3"),
    "demand_per_month": Decimal("20000"),
    "hours_per_day": Decimal("24"),
    "days_per_month": Decimal("30"),
    "unit_of_success": "accepted_task",
    "quality_acceptance_rate": Decimal("0.6"),
    "quality_acceptance_source": "replay of 200 closed issues: tests pass and the reviewer accepts the patch",
    "latency_class": "seconds",
    "p95_e2e_ms": 30000,
    "p99_e2e_ms": 90000,
    "operating_mode": "always_on",
    "operating_boundary": "public_cloud",
    "tools": ["vllm", "kubernetes"],
}


class WorkloadFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Workload

    team = factory.SubFactory(TeamFactory)


class WorkloadSummaryFactory(factory.django.DjangoModelFactory):
    """A draft version 1 of a new workload (pass `workload=` for another version of an existing one)."""

    class Meta:
        model = WorkloadSummary

    team = factory.SubFactory(TeamFactory)
    workload = factory.LazyAttribute(lambda summary: WorkloadFactory(team=summary.team))
    version = 1
    name = factory.Sequence(lambda n: f"Workload {n}")
    workload_type = "realtime_inference"


def ready_summary(team, **changes) -> WorkloadSummary:
    """A complete real-time summary of Llama 3 8B, marked ready (version 1)."""
    fields = {**REALTIME_READY_FIELDS, **changes}
    return WorkloadSummaryFactory(team=team, status=Status.READY, ready_at=timezone.now(), **fields)


def draft_summary(team, **changes) -> WorkloadSummary:
    return WorkloadSummaryFactory(team=team, **{**REALTIME_READY_FIELDS, **changes})
