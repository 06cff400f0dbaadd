"""The candidate figures moved from the decisions app (`Phase4Input`) to this one (`CandidateFigure`): the migrations
carry every row and the audit trail both ways, on SQLite and PostgreSQL alike."""

from decimal import Decimal

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.audit.models import ObjectChange
from apps.evidence.models import CandidateFigure
from apps.evidence.services import candidate_figure_set
from apps.evidence.tests.url_fixtures import make_figure_candidate

BEFORE_THE_MOVE = [("decisions", "0003_phase3_input_metrics"), ("evidence", None)]


def _rows(model) -> dict[int, tuple]:
    return {
        row.pk: (row.candidate_id, row.metric, Decimal(row.value), row.source, row.reference, row.estimated_by)
        for row in model.objects.all()
    }


def _content_types(app_label: str, model: str) -> list[int]:
    ContentType.objects.clear_cache()
    return list(ContentType.objects.filter(app_label=app_label, model=model).values_list("pk", flat=True))


def _migrate(targets) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor


@pytest.mark.django_db(transaction=True)
def test_figures_and_their_audit_trail_survive_the_move_back_and_forth(team, platform_user):
    candidate = make_figure_candidate(team)
    # Quoted, not measured: a measured figure's link to its result lives in benchmarks, whose tables the move back
    # drops (and the link migration's own test is apps/benchmarks/tests/test_measured_figures_migration.py).
    for item in candidate.figures.filter(source="measured"):
        candidate_figure_set(actor=platform_user, candidate=candidate, metric=item.metric, value=item.value,
                             source="quoted", reference=f"quote:{candidate.quote_id}",
                             capacity_unit=item.capacity_unit)
    candidate_figure_set(actor=platform_user, candidate=candidate, metric="p99_latency_ms", value="1650",
                         source="estimated", estimated_by="pat", estimate_reason="vendor's figure plus 10 %")
    figures = _rows(CandidateFigure)
    trail = sorted(ObjectChange.objects.filter(content_type__model="candidatefigure").values_list("pk", "object_id"))
    assert len(figures) >= 3 and trail

    executor = _migrate(BEFORE_THE_MOVE)
    try:
        old_model = executor.loader.project_state(BEFORE_THE_MOVE[:1]).apps.get_model("decisions", "Phase4Input")
        _check_before_the_move(old_model, figures, trail)
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    assert _rows(CandidateFigure) == figures
    _check_after_the_move(trail)


def _check_before_the_move(old_model, figures, trail):
    assert old_model._meta.db_table == "decisions_phase4input"
    assert _rows(old_model) == figures
    (old_type,) = _content_types("decisions", "phase4input")
    assert _content_types("evidence", "candidatefigure") == []
    assert sorted(ObjectChange.objects.filter(content_type_id=old_type).values_list("pk", "object_id")) == trail
    _check_before_the_move.old_type = old_type


def _check_after_the_move(trail):
    assert _content_types("decisions", "phase4input") == []
    (new_type,) = _content_types("evidence", "candidatefigure")
    # The same content type row, renamed: the audit entries never pointed elsewhere.
    assert new_type == _check_before_the_move.old_type
    assert sorted(ObjectChange.objects.filter(content_type_id=new_type).values_list("pk", "object_id")) == trail
    constraints = connection.introspection.get_constraints(connection.cursor(), CandidateFigure._meta.db_table)
    rules = ("one_per_metric", "referenced", "estimate_explained", "unit_for_capacity_only")
    assert {f"evidence_candidatefigure_{rule}" for rule in rules} <= set(constraints)
    # The constraints the model declares were renamed; PostgreSQL keeps its own names of the old foreign key index.
    assert not {f"decisions_phase4input_{rule}" for rule in rules} & set(constraints)
