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
