"""The six common mistakes and the guide's closing rule: each raised by a case built to trigger it and by no clean
case, and none passed by a typed claim; texts in English, with their French and Indonesian in the catalogs."""

import dataclasses
import re
from decimal import Decimal

import pytest
from django.utils import translation
from django.utils.translation import gettext
from hypothesis import given
from hypothesis import strategies as st

from apps.comparison.cost_model import normalize
from apps.comparison.mistakes import (
    RULES,
    RULES_BY_CODE,
    WAIVABLE_RULES,
    CandidateFacts,
    Situation,
    WorkloadFacts,
    check_mistakes,
)
from apps.comparison.tests.worked_example import candidate_a, candidate_b, candidate_c, realtime_demand

D = Decimal


def clean_workload(**changes):
    workload = WorkloadFacts(p95_context_tokens=8192, peak_concurrency=64, has_acceptance_criteria=True,
                             model_expected_life_months=D(18), quality_acceptance_rate=D("0.95"),
                             quality_acceptance_sourced=True)
    return dataclasses.replace(workload, **changes)


def clean_gpu(**changes):
    candidate = CandidateFacts(
        id="B", label="Provider B H200", kind="gpu", hourly_price=D("3.50"), effective_unit_cost=D("0.0003515"),
        platform_labor=D("1800.00"), has_benchmark_evidence=True, tested_context_tokens=8192, tested_concurrency=96,
        gpus_per_job=1, nodes_per_job=1, commitment_months=D(12),
    )
    return dataclasses.replace(candidate, **changes)


def clean_api(**changes):
    candidate = CandidateFacts(id="C", label="Model/API route", kind="api", effective_unit_cost=D("0.0008325"),
                               platform_labor=D("180.00"), has_benchmark_evidence=True)
    return dataclasses.replace(candidate, **changes)


def clean_situation(**changes):
    situation = Situation(workload=clean_workload(), candidates=(clean_gpu(), clean_api()), chosen_id="B")
    return dataclasses.replace(situation, **changes)


def codes(situation):
    return {finding.code for finding in check_mistakes(situation)}


def test_a_clean_comparison_raises_no_mistake():
    assert check_mistakes(clean_situation()) == ()
    assert check_mistakes(clean_situation(chosen_id=None)) == ()


# Each case changes one thing of the clean situation and must raise exactly its own rule.
TRIGGERS = {
    "chose_by_hourly_rate": lambda: clean_situation(candidates=(
        clean_gpu(),
        clean_gpu(id="A", label="Provider A H100", hourly_price=D("3.00"), effective_unit_cost=D("0.0004245")),
        clean_api(),
    ), chosen_id="A"),
    "memory_fit_yes_no": lambda: clean_situation(candidates=(clean_gpu(tested_context_tokens=4096), clean_api())),
    "interconnect_ignored": lambda: clean_situation(candidates=(clean_gpu(gpus_per_job=4), clean_api())),
    "generated_not_accepted": lambda: clean_situation(workload=clean_workload(has_acceptance_criteria=False)),
    "no_platform_ownership": lambda: clean_situation(candidates=(clean_gpu(platform_labor=D(0)), clean_api())),
    "bought_for_todays_model": lambda: clean_situation(candidates=(clean_gpu(commitment_months=D(36)),
                                                                   clean_api())),
    "committed_without_api_comparison": lambda: clean_situation(candidates=(clean_gpu(is_commitment=True),)),
}


@pytest.mark.parametrize("code", list(TRIGGERS))
def test_each_mistake_is_raised_by_its_trigger_and_no_other(code):
    assert codes(TRIGGERS[code]()) == {code}


def test_every_rule_has_a_trigger():
    assert set(TRIGGERS) == set(RULES_BY_CODE)


# --- 1: chose by hourly rate ------------------------------------------------------------------------------------


def worked_example_facts(evidence=True):
    rows = normalize(realtime_demand(), [candidate_a(), candidate_b(), candidate_c()])
    return tuple(CandidateFacts.from_row(row, has_benchmark_evidence=evidence) for row in rows)


def test_worked_example_choosing_a_raises_chose_by_hourly_rate():
    situation = Situation(workload=clean_workload(), candidates=worked_example_facts(), chosen_id="A")
    findings = [f for f in check_mistakes(situation) if f.code == "chose_by_hourly_rate"]
    assert [(f.reason, f.candidate_id) for f in findings] == [("cheapest_hour_not_cheapest_output", "A")]
    message = findings[0].message()
    assert "Provider A H100 has the lowest hourly price (3.00)" in message
    assert "0.0004245" in message
    assert "Provider B H200 delivers one for 0.0003515" in message


def test_worked_example_choosing_b_is_not_choosing_by_hourly_rate():
    situation = Situation(workload=clean_workload(), candidates=worked_example_facts(), chosen_id="B")
    assert "chose_by_hourly_rate" not in codes(situation)


def test_choice_without_benchmark_evidence_is_raised_even_when_cheapest():
    situation = Situation(workload=clean_workload(), candidates=worked_example_facts(evidence=False),
                          chosen_id="B")
    findings = [f for f in check_mistakes(situation) if f.code == "chose_by_hourly_rate"]
    assert [(f.reason, f.candidate_id) for f in findings] == [("chosen_without_benchmark", "B")]


def test_without_a_choice_it_notes_that_hour_and_output_leaders_differ():
    situation = Situation(workload=clean_workload(), candidates=worked_example_facts())
    (finding,) = [f for f in check_mistakes(situation) if f.code == "chose_by_hourly_rate"]
    assert (finding.reason, finding.severity, finding.candidate_id) == ("hour_and_output_leaders_differ", "note",
                                                                        None)
    assert finding.params == {"hour_leaders": ["Provider A H100"], "output_leaders": ["Provider B H200"]}


def test_without_a_choice_no_note_when_one_candidate_leads_both():
    facts = worked_example_facts()
    cheaper_b = tuple(dataclasses.replace(f, hourly_price=D("2.90")) if f.id == "B" else f for f in facts)
    assert "chose_by_hourly_rate" not in codes(Situation(workload=clean_workload(), candidates=cheaper_b))


@given(st.lists(st.tuples(st.integers(1, 9), st.integers(1, 9)), min_size=1, max_size=6))
def test_choosing_the_cheapest_per_output_with_evidence_is_never_choosing_by_hourly_rate(prices):
    candidates = tuple(
        clean_gpu(id=f"g{index}", hourly_price=D(hourly), effective_unit_cost=D(unit))
        for index, (hourly, unit) in enumerate(prices)
    )
    cheapest = min(candidates, key=lambda candidate: candidate.effective_unit_cost)
    situation = Situation(workload=clean_workload(), candidates=candidates, chosen_id=cheapest.id)
    assert "chose_by_hourly_rate" not in codes(situation)


def test_unknown_choice_is_refused():
    with pytest.raises(ValueError, match="not among the candidates"):
        clean_situation(chosen_id="Z")


# --- 2: memory fit as yes/no ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("changes", "reason"), [
    ({"tested_context_tokens": 4096}, "context_below_target"),
    ({"tested_concurrency": 32}, "concurrency_below_target"),
    ({"tested_context_tokens": None}, "context_untested"),
    ({"tested_context_tokens": None, "tested_concurrency": None}, "no_phase1_evidence"),
])
def test_memory_fit_below_the_workload_is_raised(changes, reason):
    situation = clean_situation(candidates=(clean_gpu(**changes),))
    (finding,) = check_mistakes(situation)
    assert (finding.code, finding.reason, finding.candidate_id) == ("memory_fit_yes_no", reason, "B")


def test_memory_fit_at_or_above_the_workload_and_api_routes_are_clean():
    at_target = clean_gpu(tested_context_tokens=8192, tested_concurrency=64)
    api_without_phase1 = clean_api(tested_context_tokens=None)
    assert check_mistakes(clean_situation(candidates=(at_target, api_without_phase1))) == ()


# --- 3: interconnect ignored ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("changes", "reason"), [
    ({"gpus_per_job": 8}, "multi_gpu"),
    ({"gpus_per_job": 16, "nodes_per_job": 2}, "multi_node"),
])
def test_multi_gpu_work_without_interconnect_evidence_is_raised(changes, reason):
    (finding,) = check_mistakes(clean_situation(candidates=(clean_gpu(**changes),)))
    assert (finding.code, finding.reason) == ("interconnect_ignored", reason)


@pytest.mark.parametrize("evidence", [{"measured_bus_bandwidth_gbps": D("182.5")},
                                      {"waived_rules": ("interconnect_ignored",)}])
def test_multi_node_work_with_a_measured_all_reduce_or_a_waiver_is_clean(evidence):
    candidate = clean_gpu(gpus_per_job=16, nodes_per_job=2, **evidence)
    assert check_mistakes(clean_situation(candidates=(candidate,))) == ()


def test_what_the_quote_says_of_its_interconnect_is_no_fact_of_the_check():
    # The quote's interconnect text used to pass mistake 3 ("has_interconnect_data"): it is no longer a fact at all.
    names = {item.name for item in dataclasses.fields(CandidateFacts)}
    assert not names & {"has_interconnect_data", "has_interconnect_test"}
    (finding,) = check_mistakes(clean_situation(candidates=(clean_gpu(gpus_per_job=8),)))
    assert "no measured all-reduce bus bandwidth and no recorded waiver" in finding.message()


def test_a_waiver_of_another_rule_does_not_waive_interconnect():
    candidate = clean_gpu(gpus_per_job=8, waived_rules=("memory_fit_yes_no",))
    assert codes(clean_situation(candidates=(candidate,))) == {"interconnect_ignored"}


def test_only_interconnect_is_waivable():
    assert WAIVABLE_RULES == ("interconnect_ignored",)


# --- 4: generated, not accepted ---------------------------------------------------------------------------------


def test_no_acceptance_criteria_is_raised_once_for_the_comparison():
    workload = clean_workload(has_acceptance_criteria=False, quality_acceptance_rate=None,
                              quality_acceptance_sourced=False)
    findings = check_mistakes(clean_situation(workload=workload))
    assert [(f.code, f.reason, f.candidate_id) for f in findings] == [
        ("generated_not_accepted", "no_acceptance_criteria", None)]
    assert codes(Situation(workload=workload, candidates=())) == {"generated_not_accepted"}


def test_a_bare_workload_acceptance_rate_without_its_source_is_raised():
    findings = check_mistakes(clean_situation(workload=clean_workload(quality_acceptance_sourced=False)))
    assert [(f.code, f.reason, f.candidate_id) for f in findings] == [
        ("generated_not_accepted", "acceptance_unsourced", None)]
    assert "(0.95) cites no source" in findings[0].message()


def test_candidates_with_measured_or_sourced_acceptance_need_no_workload_rate():
    workload = clean_workload(has_acceptance_criteria=False, quality_acceptance_rate=None,
                              quality_acceptance_sourced=False)
    candidates = (clean_gpu(has_sourced_acceptance=True), clean_api(has_sourced_acceptance=True))
    assert check_mistakes(clean_situation(workload=workload, candidates=candidates)) == ()


def test_a_candidate_without_sourced_acceptance_is_raised_when_others_have_one():
    workload = clean_workload(quality_acceptance_sourced=False)
    candidates = (clean_gpu(has_sourced_acceptance=True), clean_api())
    findings = check_mistakes(clean_situation(workload=workload, candidates=candidates))
    assert [(f.code, f.reason, f.candidate_id) for f in findings] == [
        ("generated_not_accepted", "candidate_acceptance_unsourced", "C")]


# --- 5: platform ownership --------------------------------------------------------------------------------------


def test_self_operated_candidates_with_an_unowned_operations_line_are_raised():
    unowned = ("autoscaling", "spend reporting")
    candidates = (clean_gpu(unowned_operations=unowned),
                  clean_gpu(id="P", label="Bought H200", kind="purchase", unowned_operations=unowned),
                  clean_api(unowned_operations=unowned))
    findings = check_mistakes(clean_situation(candidates=candidates))
    assert [(f.code, f.reason, f.candidate_id) for f in findings] == [
        ("no_platform_ownership", "unowned_operations", "B"), ("no_platform_ownership", "unowned_operations", "P")]
    assert findings[0].message() == (
        "Provider B H200 runs on GPUs you operate, yet 2 operations lines name no owner (the team, the vendor or a "
        "person): autoscaling, spend reporting."
    )


def test_platform_labor_priced_does_not_stand_for_the_owners():
    # The old check passed any self-operated candidate that carried some platform labor.
    candidate = clean_gpu(platform_labor=D("1800.00"), unowned_operations=("drivers",))
    assert codes(clean_situation(candidates=(candidate, clean_api()))) == {"no_platform_ownership"}


# --- 6 ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("labor", [D(0), None])
def test_gpu_or_purchase_candidate_without_platform_labor_is_raised(labor):
    candidates = (clean_gpu(platform_labor=labor), clean_gpu(id="P", kind="purchase", platform_labor=labor),
                  clean_api(platform_labor=labor))
    findings = check_mistakes(clean_situation(candidates=candidates))
    assert {(f.code, f.candidate_id) for f in findings} == {("no_platform_ownership", "B"),
                                                           ("no_platform_ownership", "P")}


def test_commitment_longer_than_the_model_life_is_raised():
    (finding,) = check_mistakes(clean_situation(candidates=(clean_gpu(commitment_months=D(36)),)))
    assert finding.params["commitment"] == D(36)
    assert finding.message() == ("Provider B H200 commits for 36 months, longer than the 18 months the "
                                     "workload expects its model to last.")


@pytest.mark.parametrize("workload_changes", [{"model_expected_life_months": D(36)},
                                              {"model_expected_life_months": None}])
def test_commitment_within_the_model_life_or_without_a_stated_life_is_clean(workload_changes):
    situation = clean_situation(workload=clean_workload(**workload_changes),
                                candidates=(clean_gpu(commitment_months=D(36)),))
    assert check_mistakes(situation) == ()


# --- 7: a commitment never compared with a model/API route ------------------------------------------------------


@pytest.mark.parametrize(("kind", "reason"), [("gpu", "reserve_without_api"), ("purchase", "purchase_without_api")])
def test_a_chosen_reservation_or_purchase_without_an_api_route_is_raised(kind, reason):
    situation = clean_situation(candidates=(clean_gpu(kind=kind, is_commitment=True),))
    (finding,) = check_mistakes(situation)
    assert (finding.code, finding.reason, finding.candidate_id, finding.severity) == (
        "committed_without_api_comparison", reason, "B", "warning")
    assert RULES_BY_CODE[finding.code].number == 7


def test_an_api_route_that_could_not_be_costed_is_no_comparison():
    situation = clean_situation(candidates=(clean_gpu(is_commitment=True), clean_api(effective_unit_cost=None)))
    assert codes(situation) == {"committed_without_api_comparison"}


def test_a_commitment_compared_with_a_costed_api_route_is_clean():
    assert check_mistakes(clean_situation(candidates=(clean_gpu(is_commitment=True), clean_api()))) == ()


def test_without_a_choice_each_commitment_gets_a_note_and_a_chosen_rental_none():
    candidates = (clean_gpu(is_commitment=True), clean_gpu(id="O", label="On demand"),
                  clean_gpu(id="P", kind="purchase", is_commitment=True))
    findings = check_mistakes(clean_situation(candidates=candidates, chosen_id=None))
    assert [(f.candidate_id, f.severity) for f in findings] == [("B", "note"), ("P", "note")]
    assert check_mistakes(clean_situation(candidates=candidates, chosen_id="O")) == ()


# --- texts ------------------------------------------------------------------------------------------------------


def placeholders(text):
    return set(re.findall(r"%\((\w+)\)s", text))


def test_rules_follow_the_guide_order_with_unique_codes():
    assert [rule.number for rule in RULES] == [1, 2, 3, 4, 5, 6, 7]
    assert len(RULES_BY_CODE) == 7


#: Texts written after the last catalog update: the translators add them (the test then asks to drop them here).
PENDING_TRANSLATION: set[str] = set()


def in_language(language, render, *arguments):
    with translation.override(language):
        return render(*arguments)


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.code)
@pytest.mark.parametrize("language", ["fr", "id"])
def test_every_text_is_translated_with_the_same_placeholders(rule, language):
    for text in (rule.title, rule.explanation, *rule.reasons.values()):
        translated = in_language(language, gettext, text)
        if text in PENDING_TRANSLATION:
            assert translated == text, f"{language}: {text!r} is translated now: drop it from PENDING_TRANSLATION"
            continue
        assert translated.strip() and translated != text, f"{language}: {text!r} is not translated"
        assert placeholders(translated) == placeholders(text), text


@pytest.mark.parametrize("code", list(TRIGGERS))
@pytest.mark.parametrize("language", ["en", "fr", "id"])
def test_every_triggered_finding_renders_in_every_language(code, language):
    for finding in check_mistakes(TRIGGERS[code]()):
        text = in_language(language, finding.message, gettext)
        assert text and "%(" not in text


def test_a_finding_reads_in_french_and_indonesian():
    (finding,) = check_mistakes(clean_situation(candidates=(clean_gpu(platform_labor=D(0)),)))
    rule = RULES_BY_CODE[finding.code]
    assert in_language("fr", gettext, rule.title) == "Oublier la responsabilité de la plateforme"
    assert in_language("id", gettext, rule.title) == "Melupakan tanggung jawab platform"
    assert in_language("fr", finding.message, gettext) == (
        "Provider B H200 tourne sur des GPU que vous exploitez, mais ne compte aucun travail de plateforme."
    )
    assert in_language("id", finding.message, gettext) == (
        "Provider B H200 berjalan di GPU yang Anda operasikan, tetapi tidak mencantumkan upaya kerja platform."
    )
    # Numbers are filled in after the translation, shown the same way in every language.
    (commitment,) = check_mistakes(clean_situation(candidates=(clean_gpu(commitment_months=D(36)),)))
    assert in_language("fr", commitment.message, gettext) == (
        "Provider B H200 engage pour 36 mois, plus longtemps que les 18 mois de durée de vie prévue du modèle de la "
        "charge de travail."
    )


def test_message_language_falls_back_by_primary_subtag_then_english():
    (finding,) = check_mistakes(clean_situation(candidates=(clean_gpu(platform_labor=D(0)),)))
    assert in_language("fr-ca", finding.message, gettext) == in_language("fr", finding.message, gettext)
    assert in_language("id", finding.message, gettext) != finding.message()
    assert in_language("de", finding.message, gettext) == finding.message()
