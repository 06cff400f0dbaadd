"""'Measured' must be measured: the comparison counts a figure as benchmark evidence only when it is linked to the
canonical result of a job that measured the candidate, and never a rehearsal's (a run on a CPU or against the mock
serving stack). A typed `job:N` reference is text, not evidence."""

import pytest

from apps.benchmarks.tests.helpers import measured_figure, measuring_result
from apps.comparison.selectors import comparison_for
from apps.comparison.tests.builders import gpu_candidate, workload
from apps.evidence.services import candidate_figure_enter, candidate_figure_remove, candidate_figure_set

pytestmark = pytest.mark.django_db


def _only(comparison):
    (result,) = comparison.results
    return result


def _candidate_without_measured_figures(team, actor, summary):
    candidate = gpu_candidate(team, actor, summary, label="H100 node", price="3.50", capacity="4")
    for item in list(candidate.figures.all()):
        candidate_figure_remove(actor=actor, item=item)
    return candidate


def test_a_measured_figure_with_a_typed_job_reference_is_no_benchmark_evidence(team, platform_user):
    summary = workload(team)
    candidate = _candidate_without_measured_figures(team, platform_user, summary)
    # What a person could do before: source "measured", any reference text (the service still writes it for the
    # ingest; people go through candidate_figure_enter, which refuses it).
    candidate_figure_set(actor=platform_user, candidate=candidate, metric="capacity_at_slo", value="4",
                         source="measured", reference="job:42", capacity_unit="requests_per_second")
    result = _only(comparison_for(platform_user, summary))
    assert result.measured("capacity_at_slo") is None and result.measured_value("capacity_at_slo") is None
    assert result.has_benchmark_evidence is False


def test_a_figure_linked_to_the_canonical_result_that_measured_it_is_benchmark_evidence(team, platform_user):
    summary = workload(team)
    candidate = _candidate_without_measured_figures(team, platform_user, summary)
    figure = measured_figure(candidate, "capacity_at_slo", "4", capacity_unit="requests_per_second")
    result = _only(comparison_for(platform_user, summary))
    assert result.measured("capacity_at_slo") == figure and result.measured_value("capacity_at_slo") == 4
    assert result.has_benchmark_evidence is True

    # The job ran again: the linked result is no longer the canonical one, so the figure no longer counts.
    link = figure.measurement
    type(link.result).objects.filter(pk=link.result_id).update(canonical=False)
    assert _only(comparison_for(platform_user, summary)).has_benchmark_evidence is False


def test_a_rehearsal_figure_is_no_input_and_no_evidence_but_stays_visible_as_a_rehearsal(team, platform_user):
    summary = workload(team)
    candidate = _candidate_without_measured_figures(team, platform_user, summary)
    figure = measured_figure(candidate, "capacity_at_slo", "40", capacity_unit="requests_per_second",
                             rehearsal=True)
    assert figure.source == "measured" and figure.measurement.rehearsal is True
    result = _only(comparison_for(platform_user, summary))
    assert "capacity_at_slo" not in result.inputs  # the capacity is missing, not measured
    assert result.measured("capacity_at_slo") is None and result.has_benchmark_evidence is False
    assert result.problem is not None and result.problem.field == "capacity_at_slo_per_gpu"
    assert [(item.pk, item.measurement.rehearsal) for item in result.candidate.rehearsal_figures] == [
        (figure.pk, True)]


def test_a_rehearsal_never_replaces_a_persons_estimate_which_the_comparison_keeps(team, platform_user):
    summary = workload(team)
    candidate = _candidate_without_measured_figures(team, platform_user, summary)
    candidate_figure_enter(actor=platform_user, candidate=candidate, metric="capacity_at_slo", value="3",
                           capacity_unit="requests_per_second", source="estimated",
                           estimate_reason="vendor's H100 figure, derated")
    from apps.benchmarks.measurements import FigureKept

    with pytest.raises(FigureKept):
        measured_figure(candidate, "capacity_at_slo", "40", capacity_unit="requests_per_second", rehearsal=True)
    result = _only(comparison_for(platform_user, summary))
    item = result.inputs["capacity_at_slo"]
    assert (item.source, item.value) == ("estimated", 3) and result.measured("capacity_at_slo") is None


def test_a_person_replacing_a_measured_figure_removes_its_link(team, platform_user):
    summary = workload(team)
    candidate = _candidate_without_measured_figures(team, platform_user, summary)
    figure = measured_figure(candidate, "p95_latency_ms", "900")
    result = measuring_result(candidate)
    assert result.figure_measurements.filter(figure=figure).exists()
    candidate_figure_enter(actor=platform_user, candidate=candidate, metric="p95_latency_ms", value="950",
                           source="quoted", reference="https://vendor.example.test/sla")
    assert not result.figure_measurements.exists()
    assert _only(comparison_for(platform_user, summary)).measured("p95_latency_ms") is None
