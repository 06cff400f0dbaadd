"""IdFilter: a record id in a query string is an integer in 0..2**63 - 1, else a form error (the API's 400)."""

import pytest
from django_filters import FilterSet

from apps.accounts.models import Team
from apps.common.filters import MAX_ID, IdFilter


class TeamFilterSet(FilterSet):
    team = IdFilter(field_name="pk")

    class Meta:
        model = Team
        fields = ["team"]


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["0", "7", str(MAX_ID)])
def test_an_id_in_range_filters(value):
    filterset = TeamFilterSet({"team": value}, queryset=Team.objects.all())
    assert filterset.is_valid()
    assert list(filterset.qs) == []  # no team yet: the query ran (SQLite takes 2**63 - 1 = 9223372036854775807)


@pytest.mark.parametrize("value", [str(MAX_ID + 1), "-1", "1.5", "1e3", "x"])
def test_an_id_out_of_range_or_not_an_integer_is_a_form_error(value):
    """2**63 = 9223372036854775808 would make SQLite raise OverflowError; a NumberFilter took 1.5 and 1e3."""
    filterset = TeamFilterSet({"team": value}, queryset=Team.objects.none())
    assert not filterset.is_valid()
    assert "team" in filterset.errors
