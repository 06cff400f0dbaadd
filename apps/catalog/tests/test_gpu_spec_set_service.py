"""gpu_spec_set: an edit needs a source and a date, keeps the old value in the audit log, and is all-or-nothing."""

import datetime
from decimal import Decimal
from unittest import mock

import pytest
from django.core.exceptions import ValidationError

from apps.audit.context import reset_request_id, set_request_id
from apps.audit.models import ObjectChange
from apps.catalog.models import GpuSpec, SpecKey
from apps.catalog.services import gpu_model_update, gpu_spec_set
from apps.catalog.tests.factories import GpuModelFactory, GpuSpecFactory

pytestmark = pytest.mark.django_db
ERRATA = "https://example.test/h200-errata"


@pytest.fixture
def memory(db):
    return GpuSpecFactory(key=SpecKey.MEMORY_GB, value=Decimal("141"), source_url="https://example.test/h200")


def set_memory(spec, actor, **overrides):
    arguments = {
        "actor": actor,
        "gpu": spec.gpu,
        "key": SpecKey.MEMORY_GB,
        "value": Decimal("143"),
        "source": ERRATA,
        "as_of": datetime.date(2026, 12, 1),
    } | overrides
    return gpu_spec_set(**arguments)


@pytest.mark.parametrize("source", ["", "   ", None])
def test_an_edit_without_a_source_is_refused_and_changes_nothing(memory, admin_user, source):
    with pytest.raises(ValidationError) as refused:
        set_memory(memory, admin_user, source=source)
    assert "source" in refused.value.message_dict
    memory.refresh_from_db()
    assert memory.value == 141
    assert not ObjectChange.objects.exists()


def test_an_edit_without_a_date_is_refused(memory, admin_user):
    with pytest.raises(ValidationError) as refused:
        set_memory(memory, admin_user, as_of=None)
    assert "as_of" in refused.value.message_dict


def test_an_as_of_date_in_the_future_is_refused(memory, admin_user):
    with pytest.raises(ValidationError) as refused:
        set_memory(memory, admin_user, as_of=datetime.date.today() + datetime.timedelta(days=3))
    assert "as_of" in refused.value.message_dict


@pytest.mark.parametrize("value", [Decimal("-1"), "many", Decimal("1.00001")])
def test_a_negative_non_numeric_or_too_precise_value_is_refused(memory, admin_user, value):
    with pytest.raises(ValidationError) as refused:
        set_memory(memory, admin_user, value=value)
    assert "value" in refused.value.message_dict
    assert not ObjectChange.objects.exists()


def test_a_malformed_web_address_is_refused(memory, admin_user):
    with pytest.raises(ValidationError) as refused:
        set_memory(memory, admin_user, source="https://")
    assert "source" in refused.value.message_dict


def test_an_edit_keeps_the_old_value_in_the_audit_log(memory, admin_user):
    token = set_request_id("req-catalog-edit-1")
    try:
        set_memory(memory, admin_user)
    finally:
        reset_request_id(token)
    entry = ObjectChange.objects.get()
    assert entry.action == ObjectChange.Action.UPDATE
    assert entry.actor == admin_user
    assert entry.object_id == str(memory.pk)
    assert entry.request_id == "req-catalog-edit-1"
    assert entry.before["value"] == "141.0000" and entry.after["value"] == "143.0000"
    assert entry.changes["value"] == ["141.0000", "143.0000"]
    assert entry.changes["source_url"] == ["https://example.test/h200", ERRATA]
    assert entry.changes["as_of"] == ["2026-12-02", "2026-12-01"]


def test_an_edit_records_who_entered_the_value_and_its_new_source(memory, admin_user):
    spec = set_memory(memory, admin_user)
    spec.refresh_from_db()
    assert (spec.value, spec.source_url, spec.source_text) == (Decimal("143"), ERRATA, "")
    assert spec.entered_by == admin_user


def test_a_source_that_is_not_a_web_address_is_kept_as_a_description(memory, admin_user):
    spec = set_memory(memory, admin_user, key=SpecKey.USABLE_MIB, value=143771, source="nvidia-smi on our H200")
    assert (spec.source_text, spec.source_url, spec.unit) == ("nvidia-smi on our H200", "", "MiB")


def test_setting_a_missing_figure_creates_it_with_the_unit_of_its_key(admin_user):
    gpu = GpuModelFactory()
    spec = gpu_spec_set(
        actor=admin_user,
        gpu=gpu,
        key=SpecKey.NVLINK_GBPS,
        value=900,
        source="https://example.test/nvlink",
        as_of=datetime.date(2026, 11, 1),
    )
    assert spec.unit == "GB/s"
    entry = ObjectChange.objects.get()
    assert entry.action == ObjectChange.Action.CREATE
    assert entry.before is None and entry.after["value"] == "900.0000"


def test_setting_exactly_what_is_recorded_writes_no_audit_entry(memory, admin_user):
    set_memory(memory, admin_user, value=Decimal("141.000"), source="https://example.test/h200", as_of=memory.as_of)
    assert not ObjectChange.objects.exists()


def test_an_unknown_key_is_refused(memory, admin_user):
    with pytest.raises(ValidationError) as refused:
        set_memory(memory, admin_user, key="fp4_sparse_pflops")
    assert "key" in refused.value.message_dict


def test_the_value_and_its_audit_entry_are_saved_together_or_not_at_all(memory, admin_user):
    with (
        mock.patch("apps.catalog.services.record_change", side_effect=RuntimeError("audit store down")),
        pytest.raises(RuntimeError),
    ):
        set_memory(memory, admin_user)
    memory.refresh_from_db()
    assert memory.value == 141


def test_a_gpu_model_edit_is_audited_with_before_and_after(admin_user):
    gpu = GpuModelFactory(note="")
    gpu_model_update(actor=admin_user, gpu=gpu, note="2- or 4-way NVLink bridge")
    entry = ObjectChange.objects.get()
    assert entry.changes == {"note": ["", "2- or 4-way NVLink bridge"]}
    assert GpuSpec.objects.count() == 0
