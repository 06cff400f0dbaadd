"""Login throttling (django-axes, settings AXES_*): after 5 wrong passwords the right one is refused too, until the
cool-off (15 minutes) passes or an operator resets the account. Before, 30 wrong passwords in a row changed nothing."""

from datetime import timedelta

import pytest
import time_machine
from django.contrib.auth import SESSION_KEY
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db


def _attempt(client, password, url="accounts:login", username="pat"):
    return client.post(reverse(url), {"username": username, "password": password})


def _fail_five_times(client, url="accounts:login"):
    for _ in range(5):
        response = _attempt(client, "not the password", url)
        assert SESSION_KEY not in client.session
    return response


def test_five_wrong_passwords_then_the_right_one_is_refused(client, platform_user, settings):
    assert settings.AXES_FAILURE_LIMIT == 5
    _fail_five_times(client)
    response = _attempt(client, PASSWORD)
    assert response.status_code == 429
    assert SESSION_KEY not in client.session


def test_four_wrong_passwords_do_not_lock_the_account(client, platform_user):
    for _ in range(4):
        _attempt(client, "not the password")
    response = _attempt(client, PASSWORD)
    assert response.status_code == 302 and client.session[SESSION_KEY] == str(platform_user.pk)


def test_the_lock_ends_after_the_cool_off(client, platform_user, settings):
    """Locked at t0; an attempt at t0+14 min is refused and starts the 15 minutes again (axes' default), so
    t0+30 (16 minutes after that attempt) lets the right password in."""
    assert timedelta(minutes=15) == settings.AXES_COOLOFF_TIME
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        _fail_five_times(client)
        assert _attempt(client, PASSWORD).status_code == 429
    with time_machine.travel(start + timedelta(minutes=14), tick=False):
        assert _attempt(client, PASSWORD).status_code == 429
    with time_machine.travel(start + timedelta(minutes=30), tick=False):
        response = _attempt(client, PASSWORD)
    assert response.status_code == 302 and client.session[SESSION_KEY] == str(platform_user.pk)


def test_an_operator_unlocks_the_account(client, platform_user):
    _fail_five_times(client)
    assert _attempt(client, PASSWORD).status_code == 429
    call_command("axes_reset_username", "pat")
    response = _attempt(client, PASSWORD)
    assert response.status_code == 302 and client.session[SESSION_KEY] == str(platform_user.pk)


def test_the_admin_login_form_is_throttled_too(client, admin_user):
    for _ in range(5):
        _attempt(client, "not the password", "admin:login", username="adm")
    assert _attempt(client, PASSWORD, "admin:login", username="adm").status_code == 429


def test_another_account_from_the_same_address_still_logs_in(client, platform_user, finance_user):
    """Locked by account and address together (the default): one person's typos lock no one else."""
    _fail_five_times(client)
    response = client.post(reverse("accounts:login"), {"username": "fin", "password": PASSWORD})
    assert response.status_code == 302 and client.session[SESSION_KEY] == str(finance_user.pk)
