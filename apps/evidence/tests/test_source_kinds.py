"""A figure's source is stored with the values the cost model tags its inputs with (apps/common/provenance.py)."""

from apps.common.provenance import ProvenanceKind
from apps.evidence.models import FigureSource


def test_every_stored_source_is_a_source_kind_of_the_cost_model():
    assert FigureSource.values == [kind.value for kind in ProvenanceKind]
    assert FigureSource.names == [kind.name for kind in ProvenanceKind]
