"""The shared constraint builders: a figure with its source, and the provenance rule, as the database checks them."""

from itertools import product

import pytest
from django.db.models import CharField, Value

from apps.common.models import provenance_constraints, sourced_constraint, sourced_pair_constraints
from apps.common.provenance import Provenance, ProvenanceKind

pytestmark = pytest.mark.django_db


def accepts(constraint, **row) -> bool:
    """Whether the database accepts a row with these values (no table: the condition is evaluated on the values)."""
    return constraint.condition.check({name: Value(value, output_field=CharField()) for name, value in row.items()})


def test_pair_constraints_are_named_after_the_model_and_the_figure():
    constraints = sourced_pair_constraints(
        "quotes_quote",
        pue=("pue", "pue_source", "A PUE needs its source."),
        power=("power_kw_per_node", "power_source", "A power draw needs its source."),
    )
    assert [constraint.name for constraint in constraints] == ["quotes_quote_pue_sourced", "quotes_quote_power_sourced"]
    assert [constraint.violation_error_message for constraint in constraints] == [
        "A PUE needs its source.", "A power draw needs its source.",
    ]


@pytest.mark.parametrize(
    ("figure", "source", "accepted"),
    [(None, "", True), (None, "datasheet", True), ("1.3", "datasheet p. 4", True), ("1.3", "", False)],
)
def test_a_figure_is_empty_or_has_its_source(figure, source, accepted):
    (constraint,) = sourced_pair_constraints("x", pue=("pue", "pue_source", "A PUE needs its source."))
    assert accepts(constraint, pue=figure, pue_source=source) is accepted


@pytest.mark.parametrize(
    ("url", "text", "accepted"),
    [("https://vendor.test/h200", "", True), ("", "measured on our card", True), ("", "", False)],
)
def test_one_of_several_citations_is_enough(url, text, accepted):
    constraint = sourced_constraint(sources=["source_url", "source_text"], name="x_has_source", message="Cite it.")
    assert accepts(constraint, source_url=url, source_text=text) is accepted


def _pure_rule_accepts(kind: str, reference: str, by: str, why: str) -> bool:
    try:
        Provenance(ProvenanceKind(kind), reference=reference, by=by, why=why)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(
    ("kind", "reference", "by", "why"),
    list(product([str(kind) for kind in ProvenanceKind], ["", "job:42"], ["", "pat"], ["", "vendor's figure + 10 %"])),
)
def test_the_database_holds_a_figure_to_the_same_provenance_rule_as_the_cost_model(kind, reference, by, why):
    constraints = provenance_constraints(
        "evidence_candidatefigure", referenced_message="Give its reference.", estimate_message="Say who and why."
    )
    row = {"source": kind, "reference": reference, "estimated_by": by, "estimate_reason": why}
    assert all(accepts(constraint, **row) for constraint in constraints) is _pure_rule_accepts(kind, reference, by, why)
    assert [constraint.name for constraint in constraints] == [
        "evidence_candidatefigure_referenced", "evidence_candidatefigure_estimate_explained",
    ]
