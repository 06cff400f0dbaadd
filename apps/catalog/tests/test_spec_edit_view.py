"""/catalog/<pk>/figures/<key>/: admins correct a figure with a source and a date; everyone else gets 403."""

import datetime
from decimal import Decimal

import pytest
from django.urls import reverse

from apps.audit.models import ObjectChange
from apps.catalog.models import SpecKey

ERRATA = "https://example.test/h200-errata"


def edit_url(gpu, key=SpecKey.MEMORY_GB):
    return reverse("catalog:spec-edit", args=[gpu.pk, key])


def form_data(key=SpecKey.MEMORY_GB, **values):
    fields = {"value": "143", "source": ERRATA, "as_of": "2026-12-01"} | values
    return {f"{key}-{name}": value for name, value in fields.items()}


def memory_of(gpu):
    return gpu.specs.get(key=SpecKey.MEMORY_GB)


def test_an_admin_correction_is_saved_and_the_old_value_kept_in_the_audit_log(client_for, admin_user, h200_sxm):
    entries_before = ObjectChange.objects.count()
    client = client_for(admin_user)
    response = client.post(edit_url(h200_sxm), form_data())
    assert response.status_code == 302 and response["Location"] == h200_sxm.get_absolute_url()
    spec = memory_of(h200_sxm)
    assert (spec.value, spec.source_url, spec.as_of, spec.entered_by) == (
        Decimal("143"),
        ERRATA,
        datetime.date(2026, 12, 1),
        admin_user,
    )
    assert ObjectChange.objects.count() == entries_before + 1
    entry = ObjectChange.objects.latest("pk")
    assert entry.actor == admin_user and entry.action == ObjectChange.Action.UPDATE
    assert entry.changes["value"] == ["141.0000", "143.0000"]
    assert entry.request_id == response["X-Request-ID"]
    assert "Memory of NVIDIA H200 SXM is now 143 GB." in client.get(response["Location"]).content.decode()


def test_a_correction_without_a_source_is_refused_with_a_form_error(client_for, admin_user, h200_sxm):
    entries_before = ObjectChange.objects.count()
    response = client_for(admin_user).post(edit_url(h200_sxm), form_data(source="  "))
    assert response.status_code == 200
    assert "A new value needs a source" in response.content.decode()
    assert memory_of(h200_sxm).value == 141
    assert ObjectChange.objects.count() == entries_before


def test_a_correction_without_a_date_is_refused_with_a_form_error(client_for, admin_user, h200_sxm):
    response = client_for(admin_user).post(edit_url(h200_sxm), form_data(as_of=""))
    assert "A new value needs the date its source gives it as of." in response.content.decode()
    assert memory_of(h200_sxm).value == 141


def test_a_date_in_the_future_is_refused(client_for, admin_user, h200_sxm):
    later = (datetime.date.today() + datetime.timedelta(days=5)).isoformat()
    response = client_for(admin_user).post(edit_url(h200_sxm), form_data(as_of=later))
    assert "The as-of date cannot be in the future." in response.content.decode()
    assert memory_of(h200_sxm).value == 141


def test_an_admin_records_a_figure_the_catalog_did_not_have(client_for, admin_user, loaded_catalog):
    h100 = loaded_catalog.get(name="NVIDIA H100", variant="PCIe")  # the bundled file records no usable MiB for it
    data = form_data(SpecKey.USABLE_MIB, value="81559", source="nvidia-smi on our H100 PCIe, driver 580.159")
    response = client_for(admin_user).post(edit_url(h100, SpecKey.USABLE_MIB), data)
    assert response.status_code == 302
    spec = h100.specs.get(key=SpecKey.USABLE_MIB)
    assert (spec.value, spec.unit, spec.source_text) == (81559, "MiB", "nvidia-smi on our H100 PCIe, driver 580.159")
    assert ObjectChange.objects.filter(object_id=str(spec.pk), action=ObjectChange.Action.CREATE).exists()


def test_the_edit_page_shows_the_current_value_and_asks_for_a_new_source(client_for, admin_user, h200_sxm):
    html = client_for(admin_user).get(edit_url(h200_sxm)).content.decode()
    assert '<span translate="no">141 GB</span>' in html
    assert 'name="memory_gb-value" value="141"' in html
    assert 'name="memory_gb-source" maxlength="500" required' in html  # empty: a correction cites its own source


@pytest.mark.parametrize("user_fixture", ["platform_user", "finance_user", "product_user"])
def test_only_admins_may_edit(client_for, request, user_fixture, h200_sxm):
    client = client_for(request.getfixturevalue(user_fixture))
    assert client.get(edit_url(h200_sxm)).status_code == 403
    assert client.post(edit_url(h200_sxm), form_data()).status_code == 403
    assert memory_of(h200_sxm).value == 141


def test_a_user_without_a_role_is_refused(client_for, roleless_user, h200_sxm):
    assert client_for(roleless_user).post(edit_url(h200_sxm), form_data()).status_code == 403
    assert memory_of(h200_sxm).value == 141


def test_an_anonymous_visitor_is_sent_to_the_login_page(client, h200_sxm):
    response = client.post(edit_url(h200_sxm), form_data())
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("accounts:login"))
    assert memory_of(h200_sxm).value == 141


def test_an_unknown_figure_is_not_found(client_for, admin_user, h200_sxm):
    assert client_for(admin_user).get(reverse("catalog:spec-edit", args=[h200_sxm.pk, "fp4_tops"])).status_code == 404
