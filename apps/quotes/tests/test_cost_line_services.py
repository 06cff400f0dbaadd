"""Typed cost lines: quantity × rate with a source or an estimator; changing one keeps the old line."""

import datetime
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from apps.audit.models import ObjectChange
from apps.quotes import services
from apps.quotes.models import CostKind, CostLine

READ_AT = datetime.datetime(2026, 11, 30, tzinfo=datetime.UTC)


def test_platform_labor_is_hours_times_rate(quote, platform_user):
    line = services.cost_line_add(
        actor=platform_user, quote=quote, kind=CostKind.PLATFORM_LABOR, quantity="20", unit="hours", rate="90.00",
        estimate_reason="Two SREs, 10 h each a month for upgrades and on-call",
    )
    assert line.amount == Decimal("1800.00")
    assert line.is_estimate and line.estimated_by == platform_user


def test_a_quoted_line_needs_its_source_and_date(quote, platform_user):
    line = services.cost_line_add(
        actor=platform_user, quote=quote, kind=CostKind.NETWORK_EGRESS, quantity="5000", unit="GB", rate="0.02",
        source_reference="https://acme.test/pricing#egress", observed_at=READ_AT,
    )
    assert not line.is_estimate
    with pytest.raises(ValidationError):
        services.cost_line_add(
            actor=platform_user, quote=quote, kind=CostKind.STORAGE, quantity="1", unit="TB-month", rate="20",
            source_reference="https://acme.test/pricing#storage",
        )


def test_an_estimate_without_a_reason_is_refused(quote, platform_user):
    with pytest.raises(ValidationError) as error:
        services.cost_line_add(
            actor=platform_user, quote=quote, kind=CostKind.OBSERVABILITY, quantity="1", unit="month", rate="300",
        )
    assert "estimate" in str(error.value).lower() or "__all__" in error.value.message_dict
    assert not CostLine.objects.exists()


def test_every_kind_of_the_guide_formulas_can_be_recorded(quote, platform_user):
    for kind in CostKind.values:
        services.cost_line_add(
            actor=platform_user, quote=quote, kind=kind, quantity="1", unit="month", rate="1",
            estimate_reason="placeholder figure for this test",
        )
    assert set(CostLine.objects.values_list("kind", flat=True)) == set(CostKind.values)
    for required in ("storage", "network_egress", "checkpoint_storage", "snapshots", "public_ip", "load_balancer",
                     "private_network", "serving_stack", "observability", "platform_labor", "moderation",
                     "queue_overhead", "operator_review"):
        assert required in CostKind.values


def test_replacing_a_line_keeps_the_old_one_linked_and_audited(quote, platform_user):
    old = services.cost_line_add(
        actor=platform_user, quote=quote, kind=CostKind.STORAGE, quantity="10", unit="TB-month", rate="20",
        source_reference="https://acme.test/pricing#storage", observed_at=READ_AT,
    )
    new = services.cost_line_replace(actor=platform_user, line=old, quantity="12")
    old.refresh_from_db()
    assert old.replaced_by == new and not old.is_current
    assert new.quantity == Decimal("12") and new.rate == Decimal("20")
    assert list(CostLine.objects.current()) == [new]
    entry = ObjectChange.objects.for_object(old).filter(action="update").get()
    assert entry.changes["quantity"] == ["10", "12"]
    with pytest.raises(ValidationError):
        services.cost_line_replace(actor=platform_user, line=old, quantity="13")


def test_removing_a_line_keeps_it_readable(quote, platform_user):
    line = services.cost_line_add(
        actor=platform_user, quote=quote, kind=CostKind.PUBLIC_IP, quantity="2", unit="IP-month", rate="3.65",
        source_reference="https://acme.test/pricing#ip", observed_at=READ_AT,
    )
    services.cost_line_remove(actor=platform_user, line=line)
    line.refresh_from_db()
    assert line.removed_at is not None
    assert not CostLine.objects.current().exists()
    assert ObjectChange.objects.for_object(line).filter(action="delete").exists()
