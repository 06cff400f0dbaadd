"""Objects for the actuals URLs (see tests/url_registry.py): an accepted record, and one with a version of actuals."""

import datetime
from decimal import Decimal

from apps.actuals import services
from apps.actuals.parsing import ParsedDay
from apps.decisions.tests.url_fixtures import accepted
from tests.factories import UserFactory
from tests.url_registry import team_object


def record_with_actuals(team):
    record = accepted(team)
    finance = UserFactory(roles=["finance"], teams=[team])
    day = ParsedDay(datetime.date(2026, 1, 1), Decimal(24), Decimal(1000), Decimal(990), Decimal("84.00"), "USD")
    services.actuals_upload_items(
        actor=finance, record=record, source="url fixtures",
        items=[{name: str(getattr(day, name)) for name in ("date", "gpu_hours", "outputs", "accepted_outputs",
                                                          "spend", "currency")}],
    )
    return record


def upload_of(team):
    return record_with_actuals(team).actuals_uploads.get()


URL_FIXTURES = {
    "actuals:upload": team_object(accepted),
    "actuals:export": team_object(upload_of),
    "actuals-api:record-actuals": team_object(record_with_actuals),
}
