"""The Django admin of the catalog: admins only, an edit needs a source, every save is audited."""

import datetime
from decimal import Decimal

import pytest
from django.urls import reverse

from apps.audit.models import ObjectChange
from apps.catalog.models import GpuSpec, SpecKey
from tests.factories import UserFactory

ERRATA = "https://example.test/h200-errata"


@pytest.fixture
def memory(h200_sxm):
    return h200_sxm.specs.get(key=SpecKey.MEMORY_GB)


def change_url(spec):
    return reverse("admin:catalog_gpuspec_change", args=[spec.pk])


def test_an_admin_correction_in_the_django_admin_is_audited(client_for, admin_user, memory):
    entries_before = ObjectChange.objects.count()
    response = client_for(admin_user).post(
        change_url(memory), {"value": "143", "source": ERRATA, "as_of": "2026-12-01"}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    memory.refresh_from_db()
    assert (memory.value, memory.source_url, memory.as_of, memory.entered_by) == (
        Decimal("143"),
        ERRATA,
        datetime.date(2026, 12, 1),
        admin_user,
    )
    assert ObjectChange.objects.count() == entries_before + 1
    entry = ObjectChange.objects.latest("pk")
    assert entry.actor == admin_user
    assert entry.changes["value"] == ["141.0000", "143.0000"]
    assert entry.changes["source_url"] == ["https://www.nvidia.com/en-us/data-center/h200/", ERRATA]


def test_the_django_admin_refuses_a_correction_without_a_source(client_for, admin_user, memory):
    entries_before = ObjectChange.objects.count()
    response = client_for(admin_user).post(change_url(memory), {"value": "143", "source": "", "as_of": "2026-12-01"})
    assert response.status_code == 200
    assert "A new value needs a source" in response.content.decode()
    memory.refresh_from_db()
    assert memory.value == 141
    assert ObjectChange.objects.count() == entries_before


def test_the_django_admin_change_form_shows_the_current_source_and_asks_for_a_new_one(client_for, admin_user, memory):
    html = client_for(admin_user).get(change_url(memory)).content.decode()
    assert "https://www.nvidia.com/en-us/data-center/h200/" in html
    assert 'name="source"' in html and 'name="as_of"' in html


def test_an_admin_adds_a_missing_figure_in_the_django_admin(client_for, admin_user, loaded_catalog):
    h100 = loaded_catalog.get(name="NVIDIA H100", variant="PCIe")  # the bundled file records no usable MiB for it
    response = client_for(admin_user).post(
        reverse("admin:catalog_gpuspec_add"),
        {
            "gpu": h100.pk,
            "key": SpecKey.USABLE_MIB,
            "value": "81559",
            "source": "nvidia-smi on our H100 PCIe",
            "as_of": "2026-12-01",
        },
    )
    assert response.status_code == 302
    spec = h100.specs.get(key=SpecKey.USABLE_MIB)
    assert (spec.unit, spec.source_text) == ("MiB", "nvidia-smi on our H100 PCIe")
    assert ObjectChange.objects.filter(object_id=str(spec.pk), action=ObjectChange.Action.CREATE).exists()


def test_the_django_admin_refuses_a_second_value_for_the_same_figure(client_for, admin_user, memory):
    response = client_for(admin_user).post(
        reverse("admin:catalog_gpuspec_add"),
        {"gpu": memory.gpu_id, "key": SpecKey.MEMORY_GB, "value": "150", "source": ERRATA, "as_of": "2026-12-01"},
    )
    assert response.status_code == 200
    assert GpuSpec.objects.get(gpu=memory.gpu, key=SpecKey.MEMORY_GB).value == 141


def test_a_gpu_model_edit_in_the_django_admin_is_audited(client_for, admin_user, h200_sxm):
    specs = list(h200_sxm.specs.all())
    data = {
        "vendor": "NVIDIA",
        "name": "NVIDIA H200",
        "variant": "SXM",
        "form_factor": "SXM",
        "memory_type": "HBM3e",
        "host_interface": "PCIe Gen5",
        "datasheet_url": h200_sxm.datasheet_url,
        "note": "8-GPU HGX board",
        "device_kind": "gpu",  # the form also carries the device fields (a whole GPU has no parent and no share)
        "specs-TOTAL_FORMS": str(len(specs)),
        "specs-INITIAL_FORMS": str(len(specs)),
        "specs-MIN_NUM_FORMS": "0",
        "specs-MAX_NUM_FORMS": "1000",
    }
    for index, spec in enumerate(specs):
        data[f"specs-{index}-id"] = str(spec.pk)
        data[f"specs-{index}-gpu"] = str(h200_sxm.pk)
    response = client_for(admin_user).post(reverse("admin:catalog_gpumodel_change", args=[h200_sxm.pk]), data)
    assert response.status_code == 302, response.content.decode()[:3000]
    h200_sxm.refresh_from_db()
    assert h200_sxm.note == "8-GPU HGX board"
    entry = ObjectChange.objects.latest("pk")
    assert (entry.object_id, entry.actor) == (str(h200_sxm.pk), admin_user)
    assert entry.changes == {"note": ["", "8-GPU HGX board"]}


def test_catalog_values_cannot_be_deleted_in_the_django_admin(client_for, admin_user, memory):
    response = client_for(admin_user).post(reverse("admin:catalog_gpuspec_delete", args=[memory.pk]), {"post": "yes"})
    assert response.status_code == 403
    assert GpuSpec.objects.filter(pk=memory.pk).exists()


def test_staff_without_the_admin_role_cannot_edit_the_catalog(client_for, team, memory):
    staff_platform_user = UserFactory(username="staffpat", roles=["platform"], teams=[team], is_staff=True)
    client = client_for(staff_platform_user)
    assert client.get(change_url(memory)).status_code == 403
    response = client.post(change_url(memory), {"value": "143", "source": ERRATA, "as_of": "2026-12-01"})
    assert response.status_code == 403
    memory.refresh_from_db()
    assert memory.value == 141
