"""/api/v1/catalog/gpus/: read-only for every user with a role, each figure with its source and as-of date."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from apps.accounts.api_keys import api_key_create
from apps.catalog.models import GpuModel, GpuSpec
from apps.catalog.tests.factories import GpuModelFactory, GpuSpecFactory

LIST_URL = "/api/v1/catalog/gpus/"


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_key_create(user=user)[1]}")
    return client


def test_the_url_names_resolve_to_the_documented_paths(db):
    assert reverse("catalog-api:gpu-list") == LIST_URL
    assert reverse("catalog-api:gpu-detail", args=[7]) == f"{LIST_URL}7/"


def test_the_list_works_with_a_token_and_carries_every_figure_with_its_source(finance_user, loaded_catalog):
    response = token_client(finance_user).get(LIST_URL)
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 30  # 19 whole GPUs, 10 MIG profiles, 1 CPU host
    h200 = next(gpu for gpu in body["results"] if gpu["display_name"] == "NVIDIA H200 SXM")
    specs = {spec["key"]: spec for spec in h200["specs"]}
    assert specs["memory_gb"] | {"entered_at": None} == {
        "key": "memory_gb",
        "label": "Memory",
        "value": "141.0000",
        "unit": "GB",
        "source_url": "https://www.nvidia.com/en-us/data-center/h200/",
        "source_text": "",
        "as_of": "2026-12-02",
        "entered_by": None,
        "entered_at": None,
    }
    assert specs["usable_mib"]["source_text"] == "nvidia-smi on an H200 SXM, driver 580.159, 2026-10-27"
    assert h200["url"].endswith(reverse("catalog-api:gpu-detail", args=[h200["id"]]))


def test_the_detail_serves_one_gpu(platform_user, h200_sxm):
    response = token_client(platform_user).get(reverse("catalog-api:gpu-detail", args=[h200_sxm.pk]))
    assert response.status_code == 200
    assert response.json()["name"] == "NVIDIA H200"
    assert len(response.json()["specs"]) == h200_sxm.specs.count()


def test_the_list_filters_by_form_factor(platform_user, loaded_catalog):
    body = token_client(platform_user).get(LIST_URL, {"form_factor": "PCIe"}).json()
    assert body["count"] == GpuModel.objects.filter(form_factor="PCIe").count()
    assert {gpu["form_factor"] for gpu in body["results"]} == {"PCIe"}


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_users_without_the_admin_role_get_403_on_writes(platform_user, h200_sxm, method):
    url = LIST_URL if method == "post" else reverse("catalog-api:gpu-detail", args=[h200_sxm.pk])
    response = getattr(token_client(platform_user), method)(url, {"note": "x"}, format="json")
    assert response.status_code == 403
    assert GpuModel.objects.get(pk=h200_sxm.pk).note == ""


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_writes_are_not_offered_even_to_admins(admin_user, h200_sxm, method):
    url = LIST_URL if method == "post" else reverse("catalog-api:gpu-detail", args=[h200_sxm.pk])
    response = getattr(token_client(admin_user), method)(url, {"note": "x"}, format="json")
    assert response.status_code == 405
    assert GpuModel.objects.count() == 30 and GpuModel.objects.get(pk=h200_sxm.pk).note == ""


def test_an_anonymous_client_is_refused(db):
    assert APIClient().get(LIST_URL).status_code in (401, 403)


def test_a_user_without_a_role_is_refused_even_with_a_valid_token(roleless_user, db):
    assert token_client(roleless_user).get(LIST_URL).status_code == 403


def test_the_list_takes_the_same_number_of_queries_whatever_the_catalog_size(finance_user, django_assert_num_queries):
    def add_gpus(count):
        for _ in range(count):
            GpuSpecFactory(gpu=GpuModelFactory(), value=80)

    client = token_client(finance_user)
    add_gpus(1)
    client.get(LIST_URL)  # the key's first use writes its last-used time (then at most once a minute)
    with CaptureQueriesContext(connection) as one_gpu:
        client.get(LIST_URL)
    add_gpus(15)
    with django_assert_num_queries(len(one_gpu)):
        assert client.get(LIST_URL).json()["count"] == 16
    assert GpuSpec.objects.count() == 16


def test_the_openapi_schema_documents_the_catalog_as_read_only(client_for, finance_user):
    response = client_for(finance_user).get(reverse("api-schema"), {"format": "json"})
    assert response.status_code == 200
    paths = response.json()["paths"]
    assert set(paths[LIST_URL]) == {"get"}
    assert set(paths[LIST_URL + "{id}/"]) == {"get"}


def test_the_api_gives_the_memory_basis_the_reference_price_and_a_mig_profiles_parent(platform_user, loaded_catalog):
    body = token_client(platform_user).get(LIST_URL, {"page_size": 100}).json()
    devices = {gpu["display_name"]: gpu for gpu in body["results"]}
    h100 = devices["NVIDIA H100 SXM"]
    assert h100["device_kind"] == "gpu" and h100["parent"] is None
    assert h100["usable_memory"] == {
        "bytes": 81559 * 1024 * 1024,
        "basis": "catalog_usable",
        "basis_label": "usable memory reported by the driver (catalog)",
        "source": "https://github.com/modal-labs/modal-client/pull/2797",
        "as_of": "2025-01-23",
    }
    assert h100["reference_price"] | {"detail": None} == {
        "amount": "2.6900",
        "currency": "USD",
        "source": "https://www.spheron.network/blog/runpod-h100-pricing-2026/",
        "detail": None,
        "as_of": "2026-05-22",
    }
    assert devices["NVIDIA H100 PCIe"]["usable_memory"]["basis"] == "datasheet"
    assert devices["NVIDIA GB200 NVL72 (per GPU)"]["reference_price"] is None
    mig = devices["NVIDIA H100 SXM MIG 2g.20gb"]
    assert (mig["device_kind"], mig["parent"], mig["parent_display_name"]) == ("mig", h100["id"], "NVIDIA H100 SXM")
    assert (mig["compute_slices"], mig["compute_slices_of"], mig["memory_slices"], mig["memory_slices_of"]) == (
        2,
        7,
        2,
        8,
    )
    cpu = next(gpu for gpu in body["results"] if gpu["device_kind"] == "cpu")
    assert cpu["usable_memory"]["basis"] == "host_stated" and cpu["usable_memory"]["bytes"] == 64 * 10**9
