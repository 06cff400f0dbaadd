"""The catalog's French and Indonesian catalogues are complete, reviewed (not fuzzy) and compiled."""

from pathlib import Path

import polib
import pytest
from django.urls import reverse

LOCALE = Path(__file__).resolve().parent.parent / "locale"


@pytest.mark.parametrize("language", ["fr", "id"])
def test_every_message_is_translated_and_not_a_copy_of_the_english(language):
    catalogue = polib.pofile(str(LOCALE / language / "LC_MESSAGES" / "django.po"))
    active = [entry for entry in catalogue if not entry.obsolete]
    assert len(active) > 50
    assert [entry.msgid for entry in active if not entry.msgstr] == []
    assert [entry.msgid for entry in active if entry.fuzzy] == []
    assert [entry.msgid for entry in active if entry.msgstr == entry.msgid] == []
    assert not catalogue.metadata_is_fuzzy


@pytest.mark.parametrize("language", ["fr", "id"])
def test_the_compiled_catalogue_matches_its_source(language):
    folder = LOCALE / language / "LC_MESSAGES"
    source = {entry.msgid: entry.msgstr for entry in polib.pofile(str(folder / "django.po")) if not entry.obsolete}
    compiled = {entry.msgid: entry.msgstr for entry in polib.mofile(str(folder / "django.mo"))}
    assert compiled == source


@pytest.mark.parametrize(
    ("language", "title", "figure"),
    [("fr", "Catalogue des GPU", "Bande passante mémoire"), ("id", "Katalog GPU", "Lebar pita memori")],
)
def test_the_catalog_page_speaks_the_users_language(client_for, finance_user, loaded_catalog, language, title, figure):
    html = client_for(finance_user).get(reverse("catalog:list"), HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert f"<h1>{title}</h1>" in html
    assert figure in html
