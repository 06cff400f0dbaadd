"""Measured figures are linked to the result that measured them (FigureMeasurement); rehearsals (CPU, mock stack)
are marked on the result, labelled on every page and in the API, and never count as measured."""

import pytest
from django.urls import reverse

from apps.benchmarks import rehearsal
from apps.benchmarks.measurements import (
    FigureKept,
    counts_as_measured,
    measured_figure_set,
    measures_candidate,
)
from apps.benchmarks.models import FigureMeasurement
from apps.benchmarks.tests.helpers import measured_figure, measuring_result
from apps.evidence.services import candidate_figure_enter
from apps.fleet.tests.helpers import inventory
from apps.quotes.tests.url_fixtures import make_candidate

pytestmark = pytest.mark.django_db

GPU = inventory(gpus=8, name="NVIDIA H100 80GB HBM3")
CPU = inventory(gpus=0)


@pytest.mark.parametrize(("spec", "result", "node", "reasons"), [
    ({"endpoint": {"url": "http://10.0.0.7:8000"}}, {}, GPU, ()),
    ({"endpoint": {"url": "builtin-mock"}}, {}, GPU, (rehearsal.MOCK_STACK,)),
    ({"endpoint": {"url": "http://127.0.0.1:9"}}, {"mock": {"ready_unix": 1.0}}, GPU, (rehearsal.MOCK_STACK,)),
    ({"target": "builtin_mock"}, {}, GPU, (rehearsal.MOCK_STACK,)),
    ({"device": "cpu"}, {}, GPU, (rehearsal.CPU_DEVICE,)),
    ({}, {"labels": {"device_kind": "cpu"}}, GPU, (rehearsal.CPU_DEVICE,)),
    ({"endpoint": {"url": "http://10.0.0.7:8000"}}, {}, CPU, (rehearsal.NO_GPU,)),
    ({"endpoint": {"url": "builtin-mock"}}, {}, CPU, (rehearsal.MOCK_STACK, rehearsal.NO_GPU)),
    ({}, {}, None, (rehearsal.NO_INVENTORY,)),
    (None, None, {"gpu_present": True, "gpus": []}, (rehearsal.NO_GPU,)),
])
def test_a_run_on_a_cpu_or_against_the_mock_stack_is_a_rehearsal(spec, result, node, reasons):
    assert rehearsal.rehearsal_reasons(spec, result, node) == reasons


def test_the_ingest_write_links_the_figure_to_its_result(team):
    candidate = make_candidate(team)
    figure = measured_figure(candidate, "p95_latency_ms", "850")
    link = FigureMeasurement.objects.get(figure=figure)
    assert (figure.source, link.result, link.rehearsal) == ("measured", measuring_result(candidate), False)
    assert counts_as_measured(figure) is True


def test_a_rehearsal_replaces_only_a_rehearsal_and_a_measurement_replaces_it(team, platform_user):
    candidate = make_candidate(team)
    first = measured_figure(candidate, "p95_latency_ms", "500", rehearsal=True)
    again = measured_figure(candidate, "p95_latency_ms", "510", rehearsal=True)
    assert again.pk == first.pk and counts_as_measured(again) is False
    real = measured_figure(candidate, "p95_latency_ms", "850")
    assert real.pk == first.pk and real.measurement.rehearsal is False and counts_as_measured(real) is True
    with pytest.raises(FigureKept):
        measured_figure(candidate, "p95_latency_ms", "520", rehearsal=True)
    candidate_figure_enter(actor=platform_user, candidate=candidate, metric="p99_latency_ms", value="1500",
                           source="quoted", reference="https://vendor.example.test/sla")
    with pytest.raises(FigureKept):
        measured_figure(candidate, "p99_latency_ms", "700", rehearsal=True)
    assert candidate.figures.get(metric="p99_latency_ms").source == "quoted"


def test_only_a_canonical_succeeded_result_measures(team):
    from django.core.exceptions import ValidationError

    candidate = make_candidate(team)
    result = measuring_result(candidate)
    result.canonical = False
    with pytest.raises(ValidationError):
        measured_figure_set(actor="ingest_result", result=result, candidate=candidate, metric="p95_latency_ms",
                            value="1", reference="job:1")


def test_a_run_on_another_gpu_model_away_from_the_candidates_node_does_not_measure_it(team):
    candidate = make_candidate(team)
    result = measuring_result(candidate)
    assert measures_candidate(result, candidate) == (True, "")
    agent = result.attempt.agent
    agent.candidate = None
    agent.save(update_fields=["candidate"])
    snapshot = result.attempt.start_inventory
    assert measures_candidate(result, candidate)[0] is True  # the quoted GPU model
    snapshot.data = inventory(gpus=1, name="NVIDIA A10")
    snapshot.save(update_fields=["data"])
    measures, why = measures_candidate(result, candidate)
    assert measures is False and "NVIDIA A10" in why


def test_the_api_says_which_result_measured_a_figure_and_whether_it_is_a_rehearsal(client, team, platform_user,
                                                                                   other_team):
    candidate = make_candidate(team)
    real = measured_figure(candidate, "p95_latency_ms", "850")
    rehearsed = measured_figure(candidate, "p99_latency_ms", "900", rehearsal=True)
    client.force_login(platform_user)
    listed = client.get(reverse("benchmarks-api:figure-measurement-list"), {"candidate": candidate.pk}).json()
    rows = {row["figure"]: row for row in listed["results"]}
    assert rows[real.pk]["is_rehearsal"] is False and rows[real.pk]["counts_as_measured"] is True
    assert rows[rehearsed.pk]["is_rehearsal"] is True and rows[rehearsed.pk]["counts_as_measured"] is False
    assert rows[rehearsed.pk]["rehearsal_reasons"] == ["mock_stack", "no_gpu"]
    result = client.get(reverse("benchmarks-api:result-detail", args=[rehearsed.measurement.result_id])).json()
    assert result["is_rehearsal"] is True and result["rehearsal_reasons"] == ["mock_stack", "no_gpu"]
    from tests.factories import UserFactory

    client.force_login(UserFactory(username="outsider", roles=["platform"], teams=[other_team]))
    assert client.get(reverse("benchmarks-api:figure-measurement-list")).json()["count"] == 0
    assert client.get(reverse("benchmarks-api:figure-measurement-detail",
                              args=[real.measurement.pk])).status_code == 404


def test_the_figures_page_labels_rehearsals_linked_and_unlinked_measured_figures(client, team, platform_user):
    from apps.evidence.services import candidate_figure_set

    candidate = make_candidate(team)
    real = measured_figure(candidate, "p95_latency_ms", "850")
    measured_figure(candidate, "p99_latency_ms", "900", rehearsal=True)
    candidate_figure_set(actor="ingest_result", candidate=candidate, metric="failure_rate", value="0.01",
                         source="measured", reference="job:42")
    client.force_login(platform_user)
    page = client.get(reverse("evidence:candidate-figures", args=[candidate.pk])).content.decode()
    rows = {row.split('data-metric="')[1].split('"')[0]: row for row in page.split('<tr id="input-')[1:]}
    assert "rehearsal — not a GPU measurement" in rows["p99_latency_ms"]
    assert 'data-measurement="linked"' in rows["p95_latency_ms"]
    assert f"#{real.measurement.result.job_id}" in rows["p95_latency_ms"]
    assert "measured (unlinked)" in rows["failure_rate"]
    job_page = client.get(reverse("benchmarks:job-detail",
                                  args=[candidate.figures.get(metric="p99_latency_ms").measurement.result.job_id]))
    assert "rehearsal — not a GPU measurement" in job_page.content.decode()
