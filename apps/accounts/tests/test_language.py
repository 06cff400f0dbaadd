"""Each person's language is kept on their account: the switcher stores it, every login brings it back (whatever the
browser's cookie says), and a choice Dossier does not offer is neither stored nor applied."""

import pytest
from django.conf import settings
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from apps.accounts.language import SESSION_KEY, UserLanguage, language_of, language_set
from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def pat(team):
    return UserFactory(username="pat", roles=["platform"], teams=[team])


def log_in(client: Client, username: str = "pat"):
    response = client.post(reverse("accounts:login"), {"username": username, "password": PASSWORD})
    assert response.status_code == 302
    return response


def page_language(client: Client) -> str:
    response = client.get(reverse("home"))
    assert response.status_code == 200
    return response["Content-Language"]


def test_switching_the_language_stores_it_on_the_account(client, pat):
    log_in(client)
    response = client.post(reverse("set_language"), {"language": "fr", "next": reverse("home")})
    assert response.status_code == 302
    assert UserLanguage.objects.get(user=pat).language == "fr" and language_of(pat) == "fr"
    assert client.session[SESSION_KEY] == "fr"
    assert page_language(client) == "fr"


def test_the_language_comes_back_at_the_next_login_on_another_browser(pat):
    language_set(user=pat, language="id")
    browser = Client()  # a fresh browser: no language cookie, an English Accept-Language
    browser.cookies[settings.LANGUAGE_COOKIE_NAME] = "en"
    assert browser.get(reverse("accounts:login"))["Content-Language"] == "en"
    response = log_in(browser)
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "id"  # so the next pages, and logout, follow
    assert page_language(browser) == "id"
    html = browser.get(reverse("catalog:list")).content.decode()
    assert '<html lang="id">' in html


def test_the_account_language_wins_over_the_browser_cookie_while_signed_in(client, pat):
    language_set(user=pat, language="fr")
    log_in(client)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "en"  # e.g. another person switched this browser earlier
    assert page_language(client) == "fr"


def test_someone_who_never_chose_keeps_the_browser_language(client, pat):
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "fr"
    log_in(client)
    assert SESSION_KEY not in client.session
    assert page_language(client) == "fr"
    assert not UserLanguage.objects.filter(user=pat).exists()


def test_a_language_dossier_does_not_offer_is_not_stored(client, pat):
    log_in(client)
    client.post(reverse("set_language"), {"language": "de", "next": reverse("home")})
    assert not UserLanguage.objects.filter(user=pat).exists()
    with pytest.raises(ValidationError) as error:
        language_set(user=pat, language="de")
    assert "language" in error.value.message_dict


def test_a_stored_language_no_longer_offered_is_ignored(client, pat):
    UserLanguage.objects.create(user=pat, language="xx")  # written before the language was dropped
    assert language_of(pat) is None
    log_in(client)
    assert SESSION_KEY not in client.session
    assert page_language(client) == "en"


def test_logging_out_keeps_the_language_on_the_login_page(client, pat):
    language_set(user=pat, language="fr")
    log_in(client)
    client.post(reverse("accounts:logout"))
    response = client.get(reverse("accounts:login"))
    assert response["Content-Language"] == "fr"
