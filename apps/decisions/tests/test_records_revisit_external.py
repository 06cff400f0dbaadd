"""A revisit reason another app finds (the actuals app's drift) goes through record_flag_raise / record_flag_clear:
only those reasons, only on an accepted record (the accepted path, with its notifications and the daily task leaving
the flag alone, is tested with real uploads in apps/actuals/tests/test_actuals_uploads.py)."""

import pytest

from apps.decisions import services
from apps.decisions.models import EXTERNAL_REASONS, RevisitFlag, RevisitReason
from apps.decisions.tests.records_builders import proposed

pytestmark = pytest.mark.django_db


def test_only_external_reasons_on_accepted_records_are_raised_by_another_app(team):
    setup = proposed(team)
    assert RevisitReason.ACTUAL_DRIFT in EXTERNAL_REASONS and RevisitReason.PRICE_CHANGED not in EXTERNAL_REASONS
    with pytest.raises(ValueError):
        services.record_flag_raise(actor=setup.people.finance, record=setup.record,
                                   reason=RevisitReason.PRICE_CHANGED, subject="price:1", details={})
    with pytest.raises(ValueError):
        services.record_flag_clear(actor=setup.people.finance, record=setup.record,
                                   reason=RevisitReason.REVISIT_DATE, subject="date")
    with pytest.raises(services.RecordConflict):
        services.record_flag_raise(actor=setup.people.finance, record=setup.record,
                                   reason=RevisitReason.ACTUAL_DRIFT, subject="actuals", details={})
    assert not RevisitFlag.objects.exists()
    assert services.record_flag_clear(actor=setup.people.finance, record=setup.record,
                                      reason=RevisitReason.ACTUAL_DRIFT, subject="actuals") is False
