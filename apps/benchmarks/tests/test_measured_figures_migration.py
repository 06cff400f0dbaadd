"""The data migration that made "measured" mean measured (benchmarks 0004): with rows in it.

Results are marked rehearsals from what they stored; a measured figure the ingest wrote (`job:N …`, nobody entered
it) is linked to job N's canonical result; a figure a person typed as measured becomes an estimate that quotes its old
reference, by "Dossier (migration)"."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.benchmarks.models import FigureMeasurement, Result
from apps.benchmarks.tests.helpers import measuring_result
from apps.evidence.models import CandidateFigure
from apps.evidence.services import candidate_figure_set
from apps.quotes.tests.url_fixtures import make_candidate

BEFORE = [("benchmarks", "0003_figure_measurement_rehearsal")]


def _migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


@pytest.mark.django_db(transaction=True)
def test_ingest_figures_are_linked_typed_ones_become_estimates_and_rehearsals_are_marked(team, platform_user):
    candidate = make_candidate(team)
    real = measuring_result(candidate)
    rehearsal = measuring_result(candidate, rehearsal=True)
    ingest_written = candidate_figure_set(actor="ingest_result", candidate=candidate, metric="p95_latency_ms",
                                          value="850", source="measured",
                                          reference=f"job:{real.job_id} (measured): end-to-end p95")
    rehearsed = candidate_figure_set(actor="ingest_result", candidate=candidate, metric="p99_latency_ms",
                                     value="900", source="measured",
                                     reference=f"job:{rehearsal.job_id} (measured): end-to-end p99")
    typed = candidate_figure_set(actor=platform_user, candidate=candidate, metric="failure_rate", value="0.01",
                                 source="measured", reference=f"job:{real.job_id}")
    made_up = candidate_figure_set(actor="ingest_result", candidate=candidate, metric="retry_rate", value="0.02",
                                   source="measured", reference="job:999999 (measured)")
    quoted = candidate_figure_set(actor=platform_user, candidate=candidate, metric="memory_margin", value="0.2",
                                  source="quoted", reference="https://vendor.example.test/sheet")
    # As the rows stood before the migration: no link, no rehearsal mark.
    FigureMeasurement.objects.all().delete()
    Result.objects.update(rehearsal=False, rehearsal_reasons=[])

    _migrate(BEFORE)
    _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    rehearsal.refresh_from_db()
    real.refresh_from_db()
    assert (real.rehearsal, rehearsal.rehearsal) == (False, True)
    assert rehearsal.rehearsal_reasons == ["mock_stack", "no_gpu"]
    links = {link.figure_id: (link.result_id, link.rehearsal) for link in FigureMeasurement.objects.all()}
    assert links == {ingest_written.pk: (real.pk, False), rehearsed.pk: (rehearsal.pk, True)}

    rows = {item.pk: item for item in CandidateFigure.objects.filter(candidate=candidate)}
    for item in (typed, made_up):
        row = rows[item.pk]
        assert (row.source, row.reference, row.estimated_by) == ("estimated", "", "Dossier (migration)")
        assert item.reference in row.estimate_reason and row.value == item.value
    assert rows[ingest_written.pk].source == rows[rehearsed.pk].source == "measured"
    assert (rows[quoted.pk].source, rows[quoted.pk].reference) == ("quoted", quoted.reference)
