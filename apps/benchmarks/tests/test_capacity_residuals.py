"""Phase 2 beside the roofline: a measured capacity at the SLO next to its PREDICTION, on the candidate page and on the
residuals page, with the residual kept per GPU architecture and precision."""

import pytest
from django.core.management import call_command
from django.urls import reverse

from apps.benchmarks import throughput_residuals
from apps.benchmarks.tests.helpers import measured_figure
from apps.quotes.tests.url_fixtures import make_candidate

pytestmark = pytest.mark.django_db


@pytest.fixture
def candidate(team):
    call_command("load_catalog", verbosity=0)  # the H200 SXM of the candidate's quote, with its datasheet peaks
    return make_candidate(team)


def test_the_measured_capacity_sits_beside_the_roofline_prediction_with_its_error(candidate):
    """The candidate: Llama-3-8B bf16 on an H200 SXM (4.8 TB/s, 989 TFLOPS BF16), I=1200, O=250, B=64, t=1.
    t_mem = 27,175,428,096 B / (4.8e12 × 0.6) = 9.43591e-3 s (memory-bound; compute 1.42667e-3 s),
    t_prefill = 1.965011e13 / (989e12 × 0.76) = 2.61430e-2 s,
    predicted = 64 / (64·2.61430e-2 + 250·9.43591e-3) = 64 / 4.032129 = 15.8725 req/s per GPU;
    measured 10 req/s per GPU → error (10 − 15.8725) / 15.8725 = −37.00 %."""
    measured_figure(candidate, "capacity_at_slo", "10", capacity_unit="requests_per_second")
    comparison = throughput_residuals.capacity_comparison(candidate)
    assert comparison.measured_per_gpu == 10
    assert comparison.predicted_per_gpu == pytest.approx(15.8725, rel=1e-4)
    assert comparison.error_pct == pytest.approx(-37.00, abs=0.01)
    assert comparison.gpu_architecture == "h200" and comparison.precision == "bf16"


def test_a_rehearsal_capacity_is_never_compared(candidate):
    measured_figure(candidate, "capacity_at_slo", "10", capacity_unit="requests_per_second", rehearsal=True)
    assert throughput_residuals.capacity_comparison(candidate) is None


def test_the_residuals_page_lists_each_comparison_and_the_group(candidate, client_for, platform_user):
    measured_figure(candidate, "capacity_at_slo", "10", capacity_unit="requests_per_second")
    response = client_for(platform_user).get(reverse("benchmarks:memory-fit-residuals"))
    page = response.content.decode()
    assert 'id="capacity-comparisons"' in page and 'id="capacity-residuals"' in page
    [group] = response.context["capacity_groups"]
    assert (group.gpu_architecture, group.precision, group.count) == ("h200", "bf16", 1)
    assert group.mean_error_pct == pytest.approx(-37.0, abs=0.01)
    assert "(prediction)" in page and "Roofline derivation" in page


def test_the_residuals_page_shows_nothing_of_another_team(candidate, client_for, outsider):
    measured_figure(candidate, "capacity_at_slo", "10", capacity_unit="requests_per_second")
    response = client_for(outsider).get(reverse("benchmarks:memory-fit-residuals"))
    assert response.context["capacity_comparisons"] == []
    assert 'id="capacity-residuals-none"' in response.content.decode()


def test_the_candidate_page_shows_predicted_beside_measured(candidate, client_for, platform_user):
    measured_figure(candidate, "capacity_at_slo", "10", capacity_unit="requests_per_second")
    page = client_for(platform_user).get(candidate.get_absolute_url()).content.decode()
    block = page[page.index('id="capacity-comparison"'):]
    assert "prediction, not a measurement" in block and "15.873" in block and "-37.0" in block
