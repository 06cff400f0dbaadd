"""A frozen record reads as it was signed: a snapshot frozen before the cost model gained fields (the compute bill,
the units, the cost per counted run, the rehearsals) still opens, and a rehearsal frozen into a record stays one."""

import copy
from decimal import Decimal

import pytest

from apps.decisions.snapshot import comparison_from_data
from apps.decisions.tests import records_builders as build

pytestmark = pytest.mark.django_db

ADDED_ROW_FIELDS = ("billed_compute", "unit", "capacity_unit", "time_to_answer_hours")


def test_a_snapshot_frozen_before_the_new_row_fields_still_opens(team):
    setup = build.accepted(team, choose="b")
    data = copy.deepcopy(setup.record.snapshot["comparison"])
    for item in data["results"]:
        item.pop("rehearsals", None)
        if item["row"] is not None:
            for name in ADDED_ROW_FIELDS:
                item["row"].pop(name)
    comparison = comparison_from_data(data)
    rows = [result.row for result in comparison.rows]
    assert rows and all(row.billed_compute == row.gpu_cost and row.unit == "" for row in rows)
    assert all(result.rehearsals == [] for result in comparison.results)


def test_a_rehearsal_frozen_into_a_record_stays_a_rehearsal(team):
    setup = build.accepted(team, choose="b")
    data = copy.deepcopy(setup.record.snapshot["comparison"])
    data["results"][0]["rehearsals"] = [{"metric": "capacity_at_slo", "value": "7.5", "capacity_unit":
                                         "requests_per_second", "job_id": 12, "reasons": ["no_gpu"]}]
    comparison = comparison_from_data(data)
    (frozen,) = comparison.rehearsal_results
    assert frozen.rehearsals[0]["value"] == Decimal("7.5")
    assert "capacity_at_slo" not in {name for name, item in frozen.inputs.items() if item.source == "measured"
                                     and item.value == Decimal("7.5")}


def test_the_hybrid_row_is_frozen_with_the_record(team):
    """The record reads the hybrid plan it was signed with, not one computed again from the live inputs."""
    setup = build.accepted(team, choose="b")
    data = setup.record.snapshot["comparison"]
    assert data["hybrid"] is not None and data["hybrid_problem"] == ""
    frozen = comparison_from_data(copy.deepcopy(data)).hybrid
    assert frozen.label == "B reserved H200 + C API route"
    assert frozen.plan.total_cost.quantize(Decimal("0.01")) == Decimal("5081.02")
    assert [(part.part, part.used) for part in frozen.plan.parts] == [
        ("reserved", True), ("on_demand", False), ("api", True)]
    assert frozen.parts["reserved"].candidate.pk == setup.example.b.pk
    assert {note.code for note in frozen.notes} >= {"unused", "versus_cheapest"}
    # It is read from the snapshot, never computed again from the inputs.
    data["hybrid"]["plan"]["total_cost"] = "1"
    assert comparison_from_data(copy.deepcopy(data)).hybrid.plan.total_cost == Decimal("1")


def test_the_record_page_shows_the_frozen_hybrid_row(team, client):
    setup = build.accepted(team, choose="b")
    client.force_login(setup.people.finance)
    html = client.get(setup.record.get_absolute_url()).content.decode()
    assert 'id="candidate-hybrid"' in html and "B reserved H200 + C API route" in html


def test_a_snapshot_frozen_before_hybrid_rows_has_none(team):
    setup = build.accepted(team, choose="b")
    data = copy.deepcopy(setup.record.snapshot["comparison"])
    data.pop("hybrid")
    data.pop("hybrid_problem")
    comparison = comparison_from_data(data)
    assert comparison.hybrid is None and comparison.hybrid_problem == ""
