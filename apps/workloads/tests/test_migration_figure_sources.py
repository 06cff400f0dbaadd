"""Migrations 0002 and 0003: a stored rate without its source gets one that says so (and an audit entry), then the
database refuses a rate without its source."""

import datetime
from decimal import Decimal

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from apps.audit.models import ObjectChange
from apps.workloads.models import WorkloadSummary
from apps.workloads.tests.factories import WorkloadSummaryFactory

BEFORE_THE_CONSTRAINTS = [("workloads", "0001_initial")]
MISSING_SOURCE = "not recorded: saved without its source before the database required one"
LAST_EDIT = datetime.datetime(2026, 11, 2, 9, 30, tzinfo=datetime.UTC)


def _migrate(targets) -> None:
    MigrationExecutor(connection).migrate(targets)


def _latest() -> list[tuple[str, str]]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


@pytest.mark.django_db(transaction=True)
def test_rates_stored_without_a_source_get_one_before_the_database_requires_it():
    sourced = WorkloadSummaryFactory(
        expected_failures_per_1000_gpu_hours=Decimal("0.5"), failure_rate_source="fleet incident log 2025",
        quality_acceptance_rate=Decimal("0.95"), quality_acceptance_source="offline eval of 500 transcripts",
    )
    unsourced = WorkloadSummaryFactory(team=sourced.team)
    without_rates = WorkloadSummaryFactory(team=sourced.team)

    _migrate(BEFORE_THE_CONSTRAINTS)
    try:
        # Written around the services, as only a shell or raw SQL could: rates without their sources.
        WorkloadSummary.objects.filter(pk=unsourced.pk).update(
            expected_failures_per_1000_gpu_hours=Decimal("0.8"), failure_rate_source="",
            quality_acceptance_rate=Decimal("0.9"), quality_acceptance_source="", updated_at=LAST_EDIT,
        )
    finally:
        _migrate(_latest())

    repaired = WorkloadSummary.objects.get(pk=unsourced.pk)
    assert (repaired.failure_rate_source, repaired.quality_acceptance_source) == (MISSING_SOURCE, MISSING_SOURCE)
    assert (repaired.expected_failures_per_1000_gpu_hours, repaired.quality_acceptance_rate) == (
        Decimal("0.8"), Decimal("0.9")
    )
    assert repaired.updated_at == LAST_EDIT

    kept = WorkloadSummary.objects.get(pk=sourced.pk)
    assert (kept.failure_rate_source, kept.quality_acceptance_source) == (
        "fleet incident log 2025", "offline eval of 500 transcripts"
    )
    assert WorkloadSummary.objects.get(pk=without_rates.pk).failure_rate_source == ""

    entries = ObjectChange.objects.for_object(repaired).order_by("pk")
    assert [entry.changes for entry in entries] == [
        {"failure_rate_source": ["", MISSING_SOURCE]},
        {"quality_acceptance_source": ["", MISSING_SOURCE]},
    ]
    assert {entry.team_id for entry in entries} == {sourced.team_id}
    assert not ObjectChange.objects.for_object(kept).exists()

    for column in ("failure_rate_source", "quality_acceptance_source"):
        with pytest.raises(IntegrityError), transaction.atomic():
            WorkloadSummary.objects.filter(pk=kept.pk).update(**{column: ""})
