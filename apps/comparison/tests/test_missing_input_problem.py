"""A missing input reads as what it is needed for, in the reader's language (it once read "a on_demand candidate
needs it", untranslated)."""

import pytest
from django.utils import translation

from apps.comparison import cost_model
from apps.comparison.selectors import Problem, comparison_for
from apps.evidence.models import CandidateFigure


def test_the_cost_model_names_the_billing_model_that_needs_the_input():
    error = cost_model.MissingInputError("7", "capacity_at_slo_per_gpu", "on_demand")
    assert error.billing == "on_demand" and error.field == "capacity_at_slo_per_gpu"
    problem = Problem.of(7, "A", error)
    assert problem.message == problem.text == "Needed to price a candidate billed on demand."
    with translation.override("fr"):
        french = Problem.of(7, "A", error)
        # Kept in English (a frozen record reads the same in every language), shown in the reader's.
        assert french.message == problem.message and french.text != problem.message


@pytest.mark.django_db
def test_an_unmeasured_capacity_is_a_problem_in_words(platform_user, example):
    CandidateFigure.objects.filter(candidate=example.a, metric="capacity_at_slo").delete()
    comparison = comparison_for(platform_user, example.summary)
    (problem,) = [result.problem for result in comparison.results if result.candidate.pk == example.a.pk]
    assert problem.field == "capacity_at_slo_per_gpu"
    assert problem.message == "Needed to price a candidate billed on demand."
