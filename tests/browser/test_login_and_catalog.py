"""An admin signs in through the real login form and finds the GPU catalog with each value's source and date."""

import pytest
from django.core.management import call_command

from apps.catalog.models import GpuModel, SpecKey

pytestmark = pytest.mark.browser


@pytest.fixture
def catalog(transactional_db):
    call_command("load_catalog", verbosity=0)
    return GpuModel.objects.prefetch_related("specs")


def test_admin_logs_in_and_reads_the_catalog_with_sources_and_dates(page, login, admin_user, catalog):
    page.goto("/")
    assert "/accounts/login/" in page.url  # default-deny: the home page needs a signed-in user

    login(page, admin_user)
    assert page.url.endswith("/")
    assert page.get_by_role("heading", level=1).inner_text() == "Dossier"
    navigation = page.get_by_role("navigation", name="Main")
    assert navigation.get_by_role("link", name="Home").get_attribute("aria-current") == "page"

    navigation.get_by_role("link", name="GPU catalog").click()
    page.wait_for_url("**/catalog/")
    assert page.get_by_role("heading", level=1).inner_text() == "GPU catalog"

    gpu = next(gpu for gpu in catalog if gpu.name.endswith("H200") and gpu.variant == "SXM")
    memory = gpu.spec(SpecKey.MEMORY_GB)
    row = page.get_by_role("row").filter(has=page.get_by_role("link", name=gpu.display_name, exact=True))
    assert row.count() == 1
    # The memory cell: its value, a link to where the value comes from, and the date it is valid as of.
    cell = row.locator("td", has=page.locator(f'a[href="{memory.source_url}"]')).first
    assert memory.value_display in cell.inner_text()
    assert cell.locator("time").get_attribute("datetime") == memory.as_of.isoformat()
    assert cell.get_by_role("link", name="source").get_attribute("href") == memory.source_url
    assert page.locator("table.catalog-table tbody tr").count() == len(catalog)


def test_wrong_password_keeps_the_visitor_on_the_login_page(page, admin_user):
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(admin_user.get_username())
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Log in").click()
    assert page.get_by_role("alert").is_visible()
    assert "/accounts/login/" in page.url


def test_language_switcher_shows_the_pages_in_french(page, login, platform_user):
    login(page, platform_user)
    page.get_by_label("Language").select_option("fr")
    page.wait_for_load_state()
    page.wait_for_function("document.documentElement.lang === 'fr'")
    assert page.get_by_role("navigation", name="Navigation principale").get_by_role("link", name="Accueil").is_visible()
    assert page.get_by_role("button", name="Se déconnecter").is_visible()
