"""/catalog/: a sortable table, one row per GPU variant, every value with its source and as-of date."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.catalog.models import SpecKey
from apps.catalog.tests.factories import GpuModelFactory, GpuSpecFactory
from apps.catalog.tests.pages import table_row

URL = reverse("catalog:list")


def test_every_gpu_variant_has_a_row_whose_values_show_source_and_date(client_for, platform_user, loaded_catalog):
    html = client_for(platform_user).get(URL).content.decode()
    assert html.count('<th scope="row"') == 30  # 19 whole GPUs, 10 MIG profiles, 1 CPU host
    row = table_row(html, 'data-sort-value="NVIDIA H200 SXM"')
    assert '<span translate="no">141</span>' in row
    assert '<span translate="no">4.8</span>' in row
    assert 'href="https://www.nvidia.com/en-us/data-center/h200/"' in row
    assert '<time translate="no" datetime="2026-12-02">2026-12-02</time>' in row
    assert '<span translate="no">143771</span>' in row
    assert "nvidia-smi on an H200 SXM, driver 580.159, 2026-10-27" in row


def test_a_figure_the_catalog_does_not_have_is_shown_as_not_recorded(client_for, platform_user, loaded_catalog):
    html = client_for(platform_user).get(URL).content.decode()
    row = table_row(html, 'data-sort-value="NVIDIA GB200 NVL72 (per GPU)"')
    assert "not recorded" in row  # usable memory and board power are empty in the CSV


def test_the_table_is_sortable_by_every_column_with_raw_numbers_to_sort_on(client_for, platform_user, loaded_catalog):
    html = client_for(platform_user).get(URL).content.decode()
    assert 'class="data-table sortable catalog-table"' in html
    assert html.count('<th scope="col"') == html.count("data-sort>") == len(SpecKey.values) + 5
    row = table_row(html, 'data-sort-value="NVIDIA A100 40GB PCIe"')
    assert 'data-sort-value="1.555"' in row


def test_the_list_can_be_filtered_by_form_factor(client_for, platform_user, loaded_catalog):
    html = client_for(platform_user).get(URL, {"form_factor": "SXM"}).content.decode()
    assert 'data-sort-value="NVIDIA H200 SXM"' in html
    assert 'data-sort-value="NVIDIA L40S PCIe"' not in html


@pytest.mark.parametrize("user_fixture", ["platform_user", "finance_user", "product_user", "admin_user"])
def test_every_role_reads_the_catalog(client_for, request, user_fixture, loaded_catalog):
    assert client_for(request.getfixturevalue(user_fixture)).get(URL).status_code == 200


def test_an_anonymous_visitor_is_sent_to_the_login_page(client, db):
    response = client.get(URL)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('accounts:login')}?next={URL}"


def test_a_user_without_a_role_is_refused(client_for, roleless_user):
    assert client_for(roleless_user).get(URL).status_code == 403


def test_the_page_takes_the_same_number_of_queries_whatever_the_catalog_size(
    client_for, platform_user, django_assert_num_queries
):
    def add_gpus(count):
        for _ in range(count):
            gpu = GpuModelFactory()
            for key in (SpecKey.MEMORY_GB, SpecKey.TDP_W, SpecKey.BF16_DENSE_TFLOPS):
                GpuSpecFactory(gpu=gpu, key=key, value=100)

    client = client_for(platform_user)
    add_gpus(1)
    client.get(URL)  # the first request fills per-process caches (content types, the session)
    with CaptureQueriesContext(connection) as one_gpu:
        client.get(URL)
    catalog_queries = [query for query in one_gpu.captured_queries if '"catalog_' in query["sql"]]
    assert len(catalog_queries) == 2  # the GPU models, then all their figures

    add_gpus(20)
    with django_assert_num_queries(len(one_gpu)):
        response = client.get(URL)
    assert response.content.decode().count('<th scope="row"') == 21


def test_mig_profiles_and_the_cpu_device_are_labelled_in_the_list(client_for, platform_user, loaded_catalog):
    html = client_for(platform_user).get(URL).content.decode()
    mig = table_row(html, 'data-sort-value="NVIDIA H100 SXM MIG 1g.10gb"')
    assert "MIG profile" in mig and "1/7 compute, 1/8 memory of" in mig and "NVIDIA H100 SXM</a>" in mig
    cpu = table_row(html, 'data-sort-value="CPU host 64 GB RAM (default)"')
    assert "CPU (host memory)" in cpu
    whole = table_row(html, 'data-sort-value="NVIDIA L4 PCIe"')
    assert 'data-sort-value="gpu"' in whole


def test_the_list_can_be_filtered_to_mig_profiles(client_for, platform_user, loaded_catalog):
    html = client_for(platform_user).get(URL, {"device_kind": "mig"}).content.decode()
    assert html.count('<th scope="row"') == 10
