"""The kinds the pure modules share with the models: every stored choice has its pure value, and back."""

import pytest

from apps.quotes import kinds, models


@pytest.mark.parametrize(("choices", "pure"), [
    (models.CandidateKind, kinds.CandidateKind),
    (models.PriceUnit, kinds.PriceUnit),
])
def test_the_models_choices_are_the_pure_enums_values(choices, pure):
    assert choices.values == [member.value for member in pure]
    assert choices.names == [member.name for member in pure]

