"""The login and logout pages: the real forms, the redirects, and what a failed attempt shows."""

from django.contrib.auth import SESSION_KEY
from django.urls import reverse

from tests.factories import PASSWORD


def test_login_page_shows_the_form(client, db):
    response = client.get(reverse("accounts:login"))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'name="username"' in html and 'name="password"' in html and 'name="csrfmiddlewaretoken"' in html


def test_login_with_the_right_password_opens_the_home_page(client, platform_user):
    response = client.post(reverse("accounts:login"), {"username": "pat", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == reverse("home")
    assert client.session[SESSION_KEY] == str(platform_user.pk)
    assert client.get(reverse("home")).status_code == 200


def test_login_follows_a_local_next(client, platform_user):
    response = client.post(
        reverse("accounts:login"), {"username": "pat", "password": PASSWORD, "next": reverse("catalog:list")}
    )
    assert response["Location"] == reverse("catalog:list")


def test_login_ignores_a_next_on_another_site(client, platform_user):
    response = client.post(
        reverse("accounts:login"), {"username": "pat", "password": PASSWORD, "next": "https://evil.example/"}
    )
    assert response["Location"] == reverse("home")


def test_wrong_password_shows_an_error_and_signs_nobody_in(client, platform_user):
    response = client.post(reverse("accounts:login"), {"username": "pat", "password": "not the password"})
    assert response.status_code == 200
    assert 'role="alert"' in response.content.decode()
    assert SESSION_KEY not in client.session


def test_inactive_user_cannot_log_in(client, platform_user):
    platform_user.is_active = False
    platform_user.save(update_fields=["is_active"])
    response = client.post(reverse("accounts:login"), {"username": "pat", "password": PASSWORD})
    assert response.status_code == 200
    assert SESSION_KEY not in client.session


def test_signed_in_user_visiting_login_goes_home(client_for, platform_user):
    response = client_for(platform_user).get(reverse("accounts:login"))
    assert response.status_code == 302 and response["Location"] == reverse("home")


def test_logout_signs_out_and_returns_to_login(client_for, platform_user):
    client = client_for(platform_user)
    response = client.post(reverse("accounts:logout"))
    assert response.status_code == 302 and response["Location"] == reverse("accounts:login")
    assert SESSION_KEY not in client.session
    assert client.get(reverse("home")).status_code == 302


def test_logout_needs_a_post(client_for, platform_user):
    client = client_for(platform_user)
    assert client.get(reverse("accounts:logout")).status_code == 405
    assert SESSION_KEY in client.session


def test_user_without_a_role_can_log_out(client_for, roleless_user):
    client = client_for(roleless_user)
    assert client.post(reverse("accounts:logout")).status_code == 302
    assert SESSION_KEY not in client.session
