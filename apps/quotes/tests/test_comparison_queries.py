"""The comparison table and the quote API list answer in a fixed number of queries, however many quotes there are."""

import datetime

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from apps.quotes import services
from apps.quotes.tests.factories import QuoteFactory

READ_AT = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC)


def add_quotes(vendor, user, count):
    for _ in range(count):
        quote = QuoteFactory(vendor=vendor)
        for component, amount in (("list_price", "3.50"), ("contracted_price", "3.10")):
            services.price_record(
                actor=user, quote=quote, component=component, amount=amount, source_kind="email",
                source_reference="sales@acme.test", observed_at=READ_AT,
            )


def queries_for(fetch) -> int:
    fetch()  # warm the per-user caches (roles) so both measurements see the same state
    with CaptureQueriesContext(connection) as captured:
        response = fetch()
    assert response.status_code == 200
    return len(captured)


def test_the_comparison_page_does_not_grow_with_the_quotes(client_for, vendor, platform_user):
    client = client_for(platform_user)
    add_quotes(vendor, platform_user, 2)
    few = queries_for(lambda: client.get(reverse("quotes:quote-list")))
    add_quotes(vendor, platform_user, 10)
    many = queries_for(lambda: client.get(reverse("quotes:quote-list")))
    assert many == few


def test_the_quote_api_list_does_not_grow_with_the_quotes(vendor, platform_user):
    client = APIClient()
    client.force_authenticate(platform_user)
    add_quotes(vendor, platform_user, 2)
    few = queries_for(lambda: client.get("/api/v1/quotes/quotes/"))
    add_quotes(vendor, platform_user, 10)
    many = queries_for(lambda: client.get("/api/v1/quotes/quotes/"))
    assert many == few
