"""Data: mark the stored results that were rehearsals, link the measured figures a benchmark wrote to their result, and
turn every other "measured" figure (typed by a person with a free-text `job:N`) into an estimate that says so.

- A result is a rehearsal when apps/benchmarks/rehearsal.py says so from its spec, its payload and the node's
  inventory (at the attempt's start, else the agent's latest).
- A figure with source "measured", written by the ingest (nobody entered it), whose reference starts `job:N` for a
  job of the same candidate with a canonical, succeeded result, is linked to that result (a rehearsal's link is marked).
- Every other measured figure no longer counts as measured: it becomes "estimated", by "Dossier (migration)", with a
  reason that quotes its old reference, so nothing is lost and nothing unlinked is shown as measured.
Reversing keeps the links' table emptied by the schema migration and leaves the estimates as they are.
"""

import re

from django.db import migrations

from apps.benchmarks.rehearsal import rehearsal_reasons

JOB_REFERENCE = re.compile(r"^\s*job:(\d+)\b")
MIGRATION_ESTIMATOR = "Dossier (migration)"


def _inventory(attempt, Snapshot):
    if attempt.start_inventory_id is not None:
        return attempt.start_inventory.data
    latest = Snapshot.objects.filter(agent_id=attempt.agent_id).order_by("-taken_at", "-pk").first()
    return latest.data if latest is not None else None


def _unlinked_reason(reference: str) -> str:
    return (f"Entered as measured with the reference \u201c{reference}\u201d before measured figures had to come "
            "from a benchmark result; no result is linked to it, so it counts as an estimate.")[:5000]


def forwards(apps, schema_editor):
    Result = apps.get_model("benchmarks", "Result")
    Snapshot = apps.get_model("fleet", "InventorySnapshot")
    Figure = apps.get_model("evidence", "CandidateFigure")
    FigureMeasurement = apps.get_model("benchmarks", "FigureMeasurement")

    for result in Result.objects.select_related("attempt__start_inventory").iterator():
        reasons = list(rehearsal_reasons(result.spec, result.result, _inventory(result.attempt, Snapshot)))
        if reasons or result.rehearsal:
            Result.objects.filter(pk=result.pk).update(rehearsal=bool(reasons), rehearsal_reasons=reasons)

    for figure in Figure.objects.filter(source="measured").iterator():
        match = JOB_REFERENCE.match(figure.reference or "")
        result = None
        if match and figure.entered_by_id is None:
            result = (Result.objects.filter(job_id=int(match.group(1)), job__candidate_id=figure.candidate_id,
                                            canonical=True, status="succeeded").first())
        if result is not None:
            FigureMeasurement.objects.update_or_create(figure=figure, defaults={"result": result,
                                                                                "rehearsal": result.rehearsal})
            continue
        Figure.objects.filter(pk=figure.pk).update(
            source="estimated", reference="", estimated_by=MIGRATION_ESTIMATOR,
            estimate_reason=_unlinked_reason(figure.reference),
        )


class Migration(migrations.Migration):

    dependencies = [
        ("benchmarks", "0003_figure_measurement_rehearsal"),
        ("fleet", "0002_agent_advertise_address"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
