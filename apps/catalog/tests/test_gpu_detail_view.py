"""/catalog/<pk>/: every figure with its source, date and change history; admins get an edit form per figure."""

import datetime
from decimal import Decimal

from django.urls import reverse

from apps.catalog.models import SpecKey
from apps.catalog.services import gpu_spec_set
from apps.catalog.tests.pages import table_row


def detail_url(gpu):
    return reverse("catalog:detail", args=[gpu.pk])


def test_every_figure_shows_its_value_source_date_and_history_link(client_for, finance_user, h200_sxm):
    html = client_for(finance_user).get(detail_url(h200_sxm)).content.decode()
    assert '<h1 translate="no">NVIDIA H200 SXM</h1>' in html
    for spec in h200_sxm.specs.all():
        row = table_row(html, f'id="figure-{spec.key}"')
        assert f"{spec.value_display} {spec.unit}" in row
        assert spec.source in row
        assert '<time datetime="2026-12-02">2026-12-02</time>' in row
        assert f'href="{spec.get_history_url()}"' in row
    assert h200_sxm.get_history_url() in html


def test_the_memory_a_process_can_use_is_labelled_with_its_basis(client_for, finance_user, h200_sxm):
    html = client_for(finance_user).get(detail_url(h200_sxm)).content.decode()
    assert "140.4 GiB (150754820096 B)" in html
    assert "usable memory reported by the driver (catalog)" in html


def test_a_missing_figure_is_shown_as_not_recorded(client_for, finance_user, loaded_catalog):
    gb200 = loaded_catalog.get(name="NVIDIA GB200")
    html = client_for(finance_user).get(detail_url(gb200)).content.decode()
    assert "not recorded" in table_row(html, f'id="figure-{SpecKey.TDP_W}"')


def test_admins_get_an_edit_form_per_figure_and_others_none(client_for, admin_user, finance_user, h200_sxm):
    edit_url = reverse("catalog:spec-edit", args=[h200_sxm.pk, SpecKey.MEMORY_GB])
    admin_html = client_for(admin_user).get(detail_url(h200_sxm)).content.decode()
    assert f'action="{edit_url}"' in admin_html
    assert admin_html.count('class="edit-row"') == len(SpecKey.values)
    finance_html = client_for(finance_user).get(detail_url(h200_sxm)).content.decode()
    assert edit_url not in finance_html


def test_the_history_link_shows_the_old_and_the_new_value(client_for, admin_user, finance_user, h200_sxm):
    spec = gpu_spec_set(
        actor=admin_user,
        gpu=h200_sxm,
        key=SpecKey.MEMORY_GB,
        value=Decimal("143"),
        source="https://example.test/h200-errata",
        as_of=datetime.date(2026, 12, 1),
    )
    html = client_for(finance_user).get(spec.get_history_url()).content.decode()
    assert "<del>141.0000</del> → <ins>143.0000</ins>" in html
    assert "adm" in html


def test_an_unknown_gpu_is_not_found(client_for, finance_user, db):
    assert client_for(finance_user).get(reverse("catalog:detail", args=[999_999])).status_code == 404


def test_an_anonymous_visitor_is_sent_to_the_login_page(client, h200_sxm):
    response = client.get(detail_url(h200_sxm))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("accounts:login"))


def test_a_user_without_a_role_is_refused(client_for, roleless_user, h200_sxm):
    assert client_for(roleless_user).get(detail_url(h200_sxm)).status_code == 403
