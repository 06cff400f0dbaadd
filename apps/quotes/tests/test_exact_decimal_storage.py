"""Money survives the database: 18 significant digits and per-token prices round-trip on SQLite and PostgreSQL.

Run this file on both databases (the default SQLite, and DATABASE_URL=postgres://… for PostgreSQL).
"""

import datetime
from decimal import Decimal

from django.db import connection, models
from django.db.models import Value

from apps.quotes import services
from apps.quotes.models import CostLine, ExchangeRate, PriceComponent, PriceVersion, SourceKind

EIGHTEEN_DIGIT_IDR = Decimal("987654321098765432.12")  # 20 significant digits, 18 before the point
PER_TOKEN_USD = Decimal("0.000000123")


def test_an_eighteen_digit_idr_amount_round_trips(quote, platform_user):
    services.quote_update(actor=platform_user, quote=quote, currency="IDR")
    version = services.price_record(
        actor=platform_user,
        quote=quote,
        component=PriceComponent.MINIMUM_COMMITMENT,
        amount=EIGHTEEN_DIGIT_IDR,
        source_kind=SourceKind.EMAIL,
        source_reference="sales@acme.test, “Your reserved capacity”, 1 Dec",
        observed_at=datetime.datetime(2026, 12, 1, 9, 0, tzinfo=datetime.UTC),
    )
    stored = PriceVersion.objects.get(pk=version.pk)
    assert stored.currency == "IDR"
    assert stored.amount == EIGHTEEN_DIGIT_IDR
    assert stored.amount.as_tuple() == EIGHTEEN_DIGIT_IDR.as_tuple()  # same digits, same exponent


def test_a_per_token_price_round_trips(quote, platform_user):
    version = services.price_record(
        actor=platform_user,
        quote=quote,
        component=PriceComponent.OVERAGE_RATE,
        amount="0.000000123",
        source_kind=SourceKind.API,
        source_reference="GET https://acme.test/v1/prices",
        observed_at=datetime.datetime(2026, 12, 1, 9, 0, tzinfo=datetime.UTC),
    )
    assert PriceVersion.objects.get(pk=version.pk).amount == PER_TOKEN_USD
    assert PriceVersion.objects.filter(pk=version.pk).values_list("amount", flat=True).get() == PER_TOKEN_USD


def test_the_column_holds_the_exact_decimal_text(quote, platform_user):
    version = services.price_record(
        actor=platform_user,
        quote=quote,
        component=PriceComponent.LIST_PRICE,
        amount=Decimal("1.23E-7"),
        source_kind=SourceKind.API,
        source_reference="GET https://acme.test/v1/prices",
        observed_at=datetime.datetime(2026, 12, 1, 9, 0, tzinfo=datetime.UTC),
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT amount FROM quotes_priceversion WHERE id = %s", [version.pk])
        assert cursor.fetchone()[0] == "0.000000123"


def test_an_exchange_rate_and_a_cost_line_round_trip(team, quote, platform_user):
    rate = services.exchange_rate_record(
        actor=platform_user,
        team=team,
        from_currency="IDR",
        to_currency="USD",
        rate="0.000061234567891234",
        source="https://www.bi.go.id/en/statistik/informasi-kurs/jisdor/",
        as_of=datetime.date(2026, 12, 1),
    )
    assert ExchangeRate.objects.get(pk=rate.pk).rate == Decimal("0.000061234567891234")
    line = services.cost_line_add(
        actor=platform_user,
        quote=quote,
        kind="storage",
        quantity="123456789012.12345678",
        unit="GB-month",
        rate="0.000000000000000001",
        source_reference="https://acme.test/pricing#storage",
        observed_at=datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC),
    )
    stored = CostLine.objects.get(pk=line.pk)
    assert stored.quantity == Decimal("123456789012.12345678")
    assert stored.rate == Decimal("1E-18")
    assert stored.amount == Decimal("123456789012.12345678E-18")


def _plain_sqlite_connection():
    """A Django SQLite connection of its own (in memory), whatever database the test run uses."""
    from django.db.backends.sqlite3.base import DatabaseWrapper

    return DatabaseWrapper(
        {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": ":memory:",
            "OPTIONS": {},
            "TIME_ZONE": None,
            "CONN_MAX_AGE": 0,
            "CONN_HEALTH_CHECKS": False,
            "AUTOCOMMIT": True,
            "ATOMIC_REQUESTS": False,
            "USER": "",
            "PASSWORD": "",
            "HOST": "",
            "PORT": "",
            "TEST": {},
        },
        alias="plain_sqlite",
    )


def test_a_plain_decimal_column_loses_digits_on_sqlite(db):
    # Django's SQLite backend reads a DecimalField through a float rounded to 15 digits: why ExactDecimalField exists.
    sqlite = _plain_sqlite_connection()
    try:
        with sqlite.cursor() as cursor:
            cursor.execute("CREATE TABLE plain_decimal (amount decimal)")
            cursor.execute("INSERT INTO plain_decimal (amount) VALUES (%s)", [EIGHTEEN_DIGIT_IDR])
            cursor.execute("SELECT amount FROM plain_decimal")
            raw = cursor.fetchone()[0]
        converter = sqlite.ops.get_decimalfield_converter(
            Value(EIGHTEEN_DIGIT_IDR, output_field=models.DecimalField(max_digits=30, decimal_places=2))
        )
        assert converter(raw, None, sqlite) != EIGHTEEN_DIGIT_IDR
    finally:
        sqlite.close()
