"""`manage.py ensure_admin`: the first administrator of a fresh installation, created once."""

import re
from io import StringIO

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import CommandError, call_command
from django.test import RequestFactory

from apps.accounts.roles import user_roles
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

STRONG_PASSWORD = "violet-tractor-lantern-91"


def authenticate_from_the_login_form(**credentials):
    """authenticate() with the request, as the login form calls it (django-axes counts attempts per request)."""
    return authenticate(RequestFactory().post("/accounts/login/"), **credentials)


def ensure_admin() -> str:
    output = StringIO()
    call_command("ensure_admin", stdout=output)
    return output.getvalue()


def test_creates_admin_with_the_password_from_the_environment(monkeypatch):
    monkeypatch.setenv("DOSSIER_ADMIN_PASSWORD", STRONG_PASSWORD)
    output = ensure_admin()
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_superuser and admin.is_staff
    assert list(admin.groups.values_list("name", flat=True)) == ["admin"]
    assert "admin" in user_roles(admin)
    assert authenticate_from_the_login_form(username="admin", password=STRONG_PASSWORD) == admin
    assert STRONG_PASSWORD not in output


def test_generates_a_password_and_prints_it_once(monkeypatch):
    monkeypatch.delenv("DOSSIER_ADMIN_PASSWORD", raising=False)
    first = ensure_admin()
    printed = re.search(r"password: (\S+)", first)
    assert printed is not None, first
    assert authenticate_from_the_login_form(username="admin", password=printed.group(1)) is not None

    second = ensure_admin()
    assert printed.group(1) not in second
    assert "already exists" in second
    assert get_user_model().objects.filter(is_superuser=True).count() == 1


def test_does_nothing_when_a_superuser_exists(monkeypatch):
    monkeypatch.setenv("DOSSIER_ADMIN_PASSWORD", STRONG_PASSWORD)
    UserFactory(username="root", is_superuser=True, is_staff=True)
    ensure_admin()
    assert not get_user_model().objects.filter(username="admin").exists()


def test_refuses_a_weak_password_naming_the_variable(monkeypatch):
    monkeypatch.setenv("DOSSIER_ADMIN_PASSWORD", "admin")
    with pytest.raises(CommandError, match="DOSSIER_ADMIN_PASSWORD is too weak"):
        ensure_admin()
    assert not get_user_model().objects.filter(username="admin").exists()


def test_never_promotes_an_existing_ordinary_user_named_admin(monkeypatch):
    monkeypatch.setenv("DOSSIER_ADMIN_PASSWORD", STRONG_PASSWORD)
    ordinary = UserFactory(username="admin")
    with pytest.raises(CommandError, match="exists but is not an active superuser"):
        ensure_admin()
    ordinary.refresh_from_db()
    assert not ordinary.is_superuser
