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
        # Each figure shows its own date: the datasheet's 2026-12-02, the H200's driver reading 2026-10-27.
        assert f'<time datetime="{spec.as_of:%Y-%m-%d}">{spec.as_of:%Y-%m-%d}</time>' in row
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


def test_a_mig_profile_shows_its_share_and_links_its_parent(client_for, finance_user, loaded_catalog):
    mig = loaded_catalog.get(name="NVIDIA A100", variant="80GB SXM MIG 3g.40gb")
    html = client_for(finance_user).get(detail_url(mig)).content.decode()
    kind = html[html.index('id="device-kind"') :]
    kind = kind[: kind.index("</dd>")]
    assert "MIG profile" in kind and "3/7 compute, 4/8 memory of" in kind
    assert f'href="{mig.parent.get_absolute_url()}"' in kind and "NVIDIA A100 80GB SXM" in kind
    # 40 GB of the profile, datasheet basis: 40 × 10⁹ B = 37.25 GiB (no driver reading recorded for a profile)
    assert "37.3 GiB (40000000000 B)" in html and "datasheet GB × 10⁹ bytes" in html


def test_a_parent_gpu_lists_its_mig_profiles(client_for, finance_user, loaded_catalog):
    h100 = loaded_catalog.get(name="NVIDIA H100", variant="SXM")
    html = client_for(finance_user).get(detail_url(h100)).content.decode()
    for profile in h100.mig_profiles.all():
        assert f'href="{profile.get_absolute_url()}"' in html


def test_the_h100_sxm_shows_its_usable_memory_source_and_reference_price(client_for, finance_user, loaded_catalog):
    """81,559 MiB × 1,048,576 = 85,520,809,984 B = 79.6 GiB; reference price 2.69 USD/h from its public source."""
    h100 = loaded_catalog.get(name="NVIDIA H100", variant="SXM")
    html = client_for(finance_user).get(detail_url(h100)).content.decode()
    usable = html[html.index('id="usable-memory"') :]
    usable = usable[: usable.index("</dd>")]
    assert "79.6 GiB (85520809984 B)" in usable
    assert "usable memory reported by the driver (catalog)" in usable
    assert 'href="https://github.com/modal-labs/modal-client/pull/2797"' in usable
    price = html[html.index('id="reference-price"') :]
    price = price[: price.index("</dd>")]
    assert "2.69 USD/h" in price and "not a quote" in price
    assert 'href="https://www.spheron.network/blog/runpod-h100-pricing-2026/"' in price
    assert "$2.69/h ÷ 1 GPU" in price and 'datetime="2026-05-22"' in price


def test_the_cpu_device_is_labelled_with_its_stated_host_memory(client_for, finance_user, loaded_catalog):
    cpu = loaded_catalog.get(device_kind="cpu")
    html = client_for(finance_user).get(detail_url(cpu)).content.decode()
    assert "CPU (host memory)" in html
    assert "host memory stated for this CPU device" in html  # the basis label, never "datasheet"
    assert "59.6 GiB (64000000000 B)" in html  # 64 GB × 10⁹ = 64,000,000,000 B = 59.6 GiB
