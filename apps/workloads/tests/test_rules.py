"""The guide's tables as data: codes in step with the models, every text in English with its French and Indonesian in
the catalogs."""

from collections.abc import Mapping

import pytest
from django.utils import translation
from django.utils.translation import gettext

from apps.common.work_units import WorkUnit, unit_of_success
from apps.workloads import estimates, readiness, rules
from apps.workloads.models import (
    ChangeCadence,
    DecisionMetric,
    OperatingBoundary,
    OperatingMode,
    Tool,
    UnitOfSuccess,
    WorkloadSummary,
    WorkloadType,
)


def all_texts():
    for requirement in rules.READINESS:
        yield f"readiness {requirement.code}", requirement.why
    for code, text in rules.METRICS.items():
        yield f"metric {code}", text
    for family in rules.GPU_FAMILIES:
        for name in ("role", "best_fit", "watch"):
            yield f"family {family.code} {name}", getattr(family, name)
    for row in rules.QUICK_ANSWERS:
        for name in ("workload", "prioritises", "directions", "watch"):
            yield f"quick answer {row.code} {name}", getattr(row, name)
    for code, text in rules.NEED_TEXTS.items():
        yield f"need {code}", text
    for rule in rules.CAPACITY_RULES:
        yield f"capacity {rule.code} situation", rule.situation
        yield f"capacity {rule.code} starting point", rule.starting_point


def in_language(language, text):
    with translation.override(language):
        return gettext(text)


@pytest.mark.parametrize(("where", "text"), list(all_texts()), ids=[where for where, _text in all_texts()])
@pytest.mark.parametrize("language", ["fr", "id"])
def test_every_rule_text_is_translated_in_french_and_indonesian(language, where, text):
    assert text.strip(), where
    translated = in_language(language, text)
    assert translated.strip() and translated != text, f"{where}: no {language} translation"


def test_rule_texts_read_in_french_and_indonesian():
    why = next(requirement.why for requirement in rules.READINESS if requirement.code == "tokenizer")
    assert in_language("fr", why) == "Le nombre de tokens, donc tout coût par token, dépend du tokenizer."
    assert in_language("id", why) == "Jumlah token, dan karenanya setiap biaya per token, bergantung pada tokenizer."
    assert in_language("fr-ca", why) == in_language("fr", why)
    assert in_language("de", why) == why
    family = rules.GPU_FAMILIES_BY_CODE["h200"]
    assert in_language("fr", family.role) == "Variante Hopper à plus grande capacité mémoire"
    assert in_language("id", family.role) == "Varian Hopper dengan kapasitas memori yang lebih besar"


def test_the_step_2_text_and_the_metric_label_keep_their_own_indonesian():
    # The same English is the model's choice label and the guide's step-2 text; each keeps its wording.
    text = rules.METRICS["cost_per_checkpoint"]
    assert text == DecisionMetric.CHECKPOINT.label
    assert in_language("id", text) == "Biaya satu checkpoint hasil fine-tuning yang diterima"
    with translation.override("id"):
        assert str(DecisionMetric.CHECKPOINT.label) == "Biaya per checkpoint hasil fine-tuning yang diterima"
    lora = rules.QUICK_ANSWERS_BY_CODE["lora"].workload
    assert in_language("id", lora) == "Fine-tuning LoRA/QLoRA"
    with translation.override("id"):
        assert str(WorkloadType.LORA_FINE_TUNING.label) == "Fine-tuning LoRA/QLoRA (adapter)"


def test_workload_types_of_the_rules_are_the_model_choices():
    assert set(rules.WORKLOAD_TYPES) == set(WorkloadType.values)
    assert set(rules.ESTIMATE_KIND) == set(WorkloadType.values)
    assert set(rules.PROPOSED_METRIC) == set(WorkloadType.values)
    assert set(rules.QUICK_ANSWER_FOR_TYPE) == set(WorkloadType.values)


def per_type_tables():
    """Every table of rules.py keyed by workload type (found by looking, so a table added later is checked too)."""
    for name, value in vars(rules).items():
        if isinstance(value, Mapping) and value and set(value) <= rules.ALL:
            yield name, value


def test_every_per_type_table_of_the_rules_covers_every_workload_type():
    tables = dict(per_type_tables())
    assert {"ESTIMATE_KIND", "PROPOSED_METRIC", "QUICK_ANSWER_FOR_TYPE"} <= set(tables)
    for name, table in tables.items():
        assert set(table) == set(WorkloadType.values), name
    # Every type that serves a model says where its concurrent sequences come from.
    serving = {code for code, kind in rules.ESTIMATE_KIND.items() if kind != "training"}
    assert set(estimates.SESSION_FIELDS) == serving


def test_a_code_agent_is_judged_by_the_cost_of_an_accepted_task():
    assert WorkloadType.CODE_AGENT == rules.CODE_AGENT == "code_agent"
    assert rules.CODE_AGENT in rules.SERVES_LLM and rules.CODE_AGENT in rules.PRODUCTION
    assert rules.ESTIMATE_KIND[rules.CODE_AGENT] == "inference"
    assert rules.PROPOSED_METRIC[rules.CODE_AGENT] == DecisionMetric.TASK == "cost_per_task"
    assert rules.METRICS["cost_per_task"] == "Cost per accepted task, accepted patch, or resolved issue"
    summary = WorkloadSummary(workload_type=WorkloadType.CODE_AGENT, unit_of_success=UnitOfSuccess.TASK)
    assert summary.proposed_metric == summary.effective_metric == "cost_per_task"
    assert summary.get_effective_metric_display() == "Cost per accepted task or patch"
    assert summary.unit_of_success == "accepted_task" and unit_of_success(summary.unit_of_success) is WorkUnit.TASK
    assert str(WorkloadType.CODE_AGENT.label) == "Code agent / coding assistant"


def test_a_code_agent_ranks_gpus_like_long_context_real_time_serving():
    row = rules.QUICK_ANSWERS_BY_CODE[rules.QUICK_ANSWER_FOR_TYPE[rules.CODE_AGENT]]
    assert row.code == "code_agent" and row.need == rules.NEED_TAIL_LATENCY
    assert {"h100", "h200", "b200"} <= set(row.families)
    assert "model/API route" in row.directions and "128k" in row.prioritises
    fields = readiness.applicable_fields(rules.CODE_AGENT)
    assert {"arrival_rate_peak", "p95_e2e_ms", "p99_e2e_ms", "mean_input_tokens", "p95_output_tokens"} <= fields


def test_every_step_2_metric_is_a_model_choice_and_every_proposal_a_step_2_row():
    assert set(rules.METRICS) == set(DecisionMetric.values)
    assert set(rules.PROPOSED_METRIC.values()) <= set(rules.METRICS)


def test_readiness_names_only_summary_fields_and_known_checks():
    field_names = {field.name for field in WorkloadSummary._meta.get_fields()}
    for requirement in rules.READINESS:
        assert set(requirement.fields) <= field_names, requirement.code
        assert requirement.applies_to <= rules.ALL, requirement.code
        assert requirement.check == "present" or requirement.check in readiness.CHECKS, requirement.code


def test_quick_answers_name_cheat_sheet_rows_and_known_needs():
    for row in rules.QUICK_ANSWERS:
        assert set(row.families) <= set(rules.GPU_FAMILIES_BY_CODE), row.code
        assert row.need in rules.NEEDS, row.code
    assert set(rules.QUICK_ANSWER_FOR_TYPE.values()) <= set(rules.QUICK_ANSWERS_BY_CODE)


def test_capacity_rules_test_fields_with_their_real_values():
    values = {
        "workload_type": set(WorkloadType.values),
        "operating_mode": set(OperatingMode.values),
        "operating_boundary": set(OperatingBoundary.values),
        "model_change_cadence": set(ChangeCadence.values),
        "tools": set(Tool.values),
    }
    for rule in rules.CAPACITY_RULES:
        for condition in rule.conditions:
            for name, accepted in condition.items():
                assert set(accepted) <= values[name], (rule.code, name)


@pytest.mark.parametrize(
    ("gpu_name", "family"),
    [
        ("NVIDIA H200", "h200"),
        ("NVIDIA H100", "h100"),
        ("NVIDIA B200", "b200"),
        ("NVIDIA GB200", "gb200"),
        ("NVIDIA A100", "a100"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA RTX 4090", "rtx"),
        ("NVIDIA RTX PRO 6000 Blackwell", "rtx"),
        ("AMD MI300X", None),
    ],
)
def test_catalog_gpus_map_to_their_cheat_sheet_row(gpu_name, family):
    found = rules.family_of(gpu_name)
    assert (found.code if found else None) == family


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"workload_type": "training", "operating_mode": "scheduled_batch"}, {"multi_node_training"}),
        ({"workload_type": "evaluation", "operating_mode": "seasonal_burst"}, {"irregular_experiments"}),
        (
            {"workload_type": "realtime_inference", "operating_mode": "always_on", "model_change_cadence": "yearly"},
            {"steady_inference"},
        ),
        (
            {"workload_type": "realtime_inference", "operating_mode": "always_on", "model_change_cadence": "monthly"},
            {"uncertain_demand"},
        ),
        (
            {"workload_type": "code_agent", "operating_mode": "always_on", "model_change_cadence": "stable"},
            {"steady_inference"},
        ),
        ({"workload_type": "code_agent", "operating_mode": "scheduled_batch"}, {"uncertain_demand"}),
        ({"workload_type": "code_agent", "operating_mode": "always_on"}, set()),
        ({"workload_type": "batch_inference", "operating_boundary": "on_prem"}, {"private_hardware"}),
        ({"workload_type": "batch_inference", "tools": ["provider_endpoint"]}, {"managed_models"}),
        ({"workload_type": "batch_inference"}, set()),
    ],
)
def test_capacity_hints_follow_the_guide_table(values, expected):
    assert {rule.code for rule in rules.capacity_hints(values)} == expected
