"""French and Indonesian for every string, compiled catalogs in step, and no page with untranslated text.

(a) makemessages, run on a copy of the source, lists every marked string; each must be in the fr and id catalogs,
    not fuzzy, not empty, not a copy of the English (except ALLOWED_SAME_AS_ENGLISH), with the same placeholders.
(b) every shipped .mo says exactly what its .po says (a forgotten compilemessages fails).
(c) in a pseudo-locale where every known string reads "⟦…⟧", every page reachable with GET (the URL enumeration of
    tests/url_registry.py, objects from the url_fixtures modules) must show no letter outside the markers: text
    there was never marked for translation. Data goes in elements with translate="no".
"""

from urllib.parse import urlsplit

import polib
import pytest
from django.conf import settings
from django.urls import reverse

from tests.access import FAST_PASSWORD_HASHERS, ROLES
from tests.factories import PASSWORD, UserFactory
from tests.i18n_tools import (
    BASE_DIR,
    LANGUAGES,
    PSEUDO_LANGUAGE,
    catalog_dirs,
    entry_key,
    extract_messages,
    placeholders,
    po_path,
    pseudo_translate,
    shipped_third_party_messages,
    untranslated_text,
    write_pseudo_catalog,
)
from tests.url_registry import MissingFixture, concrete_url, url_entries, url_fixtures

#: Terms written the same in English and in that language — reviewed one by one; keep this short.
ALLOWED_SAME_AS_ENGLISH = {
    "fr": {
        "Dossier",  # the product's name
        "GPU",
        "API",
        "Total",
        "Finance",  # the role (French "finance" is the same word)
    },
    "id": {
        "Dossier",  # the product's name
        "GPU",
        "API",
        "Total",
        "Admin",  # Indonesian uses "admin"
        "Platform",  # the role; Indonesian "platform" is the same word
    },
}


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = FAST_PASSWORD_HASHERS


@pytest.fixture(scope="module")
def extracted(tmp_path_factory):
    return extract_messages(tmp_path_factory.mktemp("makemessages"))


def _relative(path) -> str:
    return str(path.relative_to(BASE_DIR))


def _same_as_english_is_allowed(msgid: str, language: str) -> bool:
    """Reviewed terms, and strings with no word to translate ("%(value)s %(unit)s")."""
    words = msgid
    for placeholder in placeholders(msgid):
        words = words.replace(placeholder, "")
    return msgid in ALLOWED_SAME_AS_ENGLISH[language] or not any(character.isalpha() for character in words)


def _placeholder_problem(source_entry, translations: list[str]) -> str | None:
    if source_entry.msgid_plural:
        # A plural form may leave the count out (French "un seul …"); it may never name one the code does not pass.
        known = set(placeholders(source_entry.msgid)) | set(placeholders(source_entry.msgid_plural))
        unknown = sorted({name for text in translations for name in placeholders(text)} - known)
        return f"placeholders {unknown} that the English does not have" if unknown else None
    if placeholders(translations[0]) != placeholders(source_entry.msgid):
        return f"placeholders {placeholders(translations[0])} instead of {placeholders(source_entry.msgid)}"
    return None


def _translation_problems(source_entry, entry, language: str) -> list[str]:
    if entry is None:
        return ["missing"]
    if "fuzzy" in entry.flags:
        return ["fuzzy"]
    translations = (
        [text for _index, text in sorted(entry.msgstr_plural.items())] if entry.msgid_plural else [entry.msgstr]
    )
    if not translations or any(not text.strip() for text in translations):
        return ["not translated"]
    problems = []
    if translations[0] == source_entry.msgid and not _same_as_english_is_allowed(source_entry.msgid, language):
        problems.append("same as the English")
    placeholder_problem = _placeholder_problem(source_entry, translations)
    if placeholder_problem:
        problems.append(placeholder_problem)
    return problems


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_marked_string_is_translated(extracted, language):
    problems = []
    for locale_dir, source in extracted.items():
        path = po_path(locale_dir, language)
        if not path.exists():
            problems.append(f"{_relative(path)}: missing catalog for {len(source)} strings")
            continue
        catalog = {entry_key(entry): entry for entry in polib.pofile(str(path)) if not entry.obsolete}
        for source_entry in source:
            for problem in _translation_problems(source_entry, catalog.get(entry_key(source_entry)), language):
                problems.append(f"{_relative(path)}: {source_entry.msgid!r}: {problem}")
    assert not problems, f"{len(problems)} translation problems:\n" + "\n".join(problems)


@pytest.mark.parametrize("language", LANGUAGES)
def test_catalogs_declare_their_language_and_plural_forms(language):
    for locale_dir in catalog_dirs():
        path = po_path(locale_dir, language)
        if path.exists():
            metadata = polib.pofile(str(path)).metadata
            assert metadata.get("Language") == language, f"{_relative(path)}: Language is {metadata.get('Language')}"
            assert "nplurals=" in metadata.get("Plural-Forms", ""), f"{_relative(path)}: no Plural-Forms"


def _compiled_view(entries) -> dict[tuple[str, str], tuple[str, ...]]:
    view = {}
    for entry in entries:
        if not entry.msgid:
            continue  # the header
        if entry.msgid_plural:
            view[entry_key(entry)] = tuple(text for _index, text in sorted(entry.msgstr_plural.items()))
        else:
            view[entry_key(entry)] = (entry.msgstr,)
    return view


def test_compiled_catalogs_match_their_sources():
    checked = 0
    for locale_dir in catalog_dirs():
        for language in LANGUAGES:
            po_file = po_path(locale_dir, language)
            if not po_file.exists():
                continue
            mo_file = po_file.with_suffix(".mo")
            assert mo_file.exists(), f"{_relative(po_file)} is not compiled: run compilemessages"
            # What msgfmt compiles: translated, non-fuzzy, non-obsolete entries.
            expected = _compiled_view(polib.pofile(str(po_file)).translated_entries())
            compiled = _compiled_view(polib.mofile(str(mo_file)))
            assert compiled == expected, f"{_relative(mo_file)} is out of date with its .po: run compilemessages"
            checked += 1
    assert checked >= 2 * 4, "expected the fr and id catalogs of locale/, accounts, audit and common at least"


# --- The pseudo-locale ------------------------------------------------------------------------------------------


def test_pseudo_translation_keeps_placeholders_tags_and_entities():
    assert pseudo_translate("Log in") == "⟦Ĺóĝ íñ⟧"
    assert pseudo_translate("%(count)s GPUs for %(team)s") == "⟦%(count)s ĜÞÚš ƒóŕ %(team)s⟧"
    assert pseudo_translate('See <a href="%(url)s">the &amp; source</a>') == (
        '⟦Šéé <a href="%(url)s">ťĥé &amp; šóúŕçé</a>⟧'
    )


def test_untranslated_text_finds_what_was_not_marked():
    html = """<html><head><title>⟦Ĥóɱé⟧ · Dossier</title><script>var text = "skip me";</script></head>
    <body><p>⟦Ŵéĺçóɱé, <strong>ťĥíš šƿàñš</strong> ťàĝš⟧</p><p translate="no">H200 <b>SXM</b></p>
    <a translate="no" title="https://example.test/h200.pdf">H200 <span translate="yes">datasheet</span></a>
    <input placeholder="Search" type="search"><input type="submit" value="⟦Ĝó⟧"><img alt="chart">
    <p>141 · 4.8 — 2025-01-15</p><button title="⟦Šóŕť⟧">Sort</button></body></html>"""
    assert untranslated_text(html) == ["· Dossier", "datasheet", "Sort", "Search", "chart"]


def test_untranslated_text_reports_unbalanced_markers():
    assert untranslated_text("<p>⟦Ĥóɱé</p>") == ["unbalanced ⟦"]


@pytest.fixture
def pseudo_locale(settings, extracted, tmp_path):
    """Every Dossier string, and the library strings translated in all our languages, as "⟦…⟧" in en-xa."""
    keys = {(entry.msgctxt or "", entry.msgid, entry.msgid_plural or "") for po in extracted.values() for entry in po}
    keys |= shipped_third_party_messages()
    write_pseudo_catalog(keys, tmp_path)
    settings.LOCALE_PATHS = [tmp_path, *settings.LOCALE_PATHS]
    settings.LANGUAGES = [*settings.LANGUAGES, (PSEUDO_LANGUAGE, "Pseudo")]
    return PSEUDO_LANGUAGE


def _in_pseudo_locale(client):
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = PSEUDO_LANGUAGE
    return client


def _is_html(response) -> bool:
    return response.get("Content-Type", "").startswith("text/html")


def _follow_within_site(client, response):
    """Follow one redirect to a Dossier page (not the admin site, which Django translates)."""
    if response.status_code in (301, 302, 303):
        target = urlsplit(response["Location"])
        if not target.netloc and not target.path.startswith(reverse("admin:index")):
            return client.get(response["Location"])
    return response


def _check(offenders: list[str], label: str, response) -> None:
    if response.status_code >= 500:
        offenders.append(f"{label}: answered {response.status_code}")
    elif _is_html(response):
        # Once per text and page: a table repeats the same cell on every row.
        offenders += [f"{label}: {text!r}" for text in dict.fromkeys(untranslated_text(response.content.decode()))]


# Pages that are not Dossier's HTML: Django translates its admin site; DRF views answer JSON (the Swagger UI page is
# the third-party interface, English only); the agent API is for machines.
def _dossier_page(entry) -> bool:
    return not (entry.is_admin or entry.is_rest_framework or entry.is_agent_api)


def test_every_page_is_translated_in_the_pseudo_locale(pseudo_locale, client, django_user_model, team):
    superuser = UserFactory(username="root", is_superuser=True, is_staff=True, roles=list(ROLES), teams=[team])
    for fixture in url_fixtures().values():
        fixture.build(team)  # lists show rows, not only their empty state
    signed_in = _in_pseudo_locale(client)
    signed_in.force_login(superuser)
    anonymous = _in_pseudo_locale(type(client)())

    offenders: list[str] = []
    rendered = 0
    for entry in filter(_dossier_page, url_entries()):
        try:
            path = concrete_url(entry, team).path
        except MissingFixture as missing:
            offenders.append(f"not rendered: {missing}")
            continue
        visitors = [signed_in, anonymous] if entry.is_public else [signed_in]
        for visitor in visitors:
            response = _follow_within_site(visitor, visitor.get(path))
            if response.status_code == 405 or not _is_html(response):
                continue  # POST only, or not a page (/healthz answers JSON)
            assert response.status_code < 400, f"{path} answered {response.status_code} to a superuser"
            _check(offenders, path, response)
            rendered += 1
    assert rendered >= 5
    assert not offenders, "untranslated text in the pseudo-locale:\n" + "\n".join(offenders)


def test_error_pages_forms_and_messages_are_translated_in_the_pseudo_locale(
    pseudo_locale, client, platform_user, roleless_user, team
):
    offenders: list[str] = []
    anonymous = _in_pseudo_locale(client)
    failed_login = anonymous.post(reverse("accounts:login"), {"username": "pat", "password": "wrong"})
    assert failed_login.status_code == 200
    _check(offenders, "login with a wrong password", failed_login)

    anonymous.force_login(roleless_user)
    forbidden = anonymous.get(reverse("home"))
    assert forbidden.status_code == 403
    _check(offenders, "403 for a user without a role", forbidden)

    anonymous.force_login(platform_user)
    not_found = anonymous.get("/no-such-page/")
    assert not_found.status_code == 404
    _check(offenders, "404", not_found)

    switched = anonymous.post(reverse("accounts:team-switch"), {"team": team.pk}, follow=True)
    assert "⟦Ýóú ñóŵ ŵóŕķ íñ" in switched.content.decode()
    _check(offenders, "message after switching team", switched)
    assert not offenders, "untranslated text in the pseudo-locale:\n" + "\n".join(offenders)


def test_login_form_works_in_every_language(client, platform_user, settings):
    for language in ("en", *LANGUAGES):
        client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
        page = client.get(reverse("accounts:login"))
        assert page["Content-Language"] == language
        assert f'<html lang="{language}">' in page.content.decode()
        response = client.post(reverse("accounts:login"), {"username": "pat", "password": PASSWORD})
        assert response.status_code == 302
        client.logout()
