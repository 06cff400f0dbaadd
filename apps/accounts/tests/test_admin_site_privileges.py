"""The admin site cannot raise anyone's privileges: people, roles, teams, API keys and the audit log are for
superusers only (docs/permissions.md). Before, a staff account with the admin role could set is_superuser on
itself, create a key for a superuser, open a superuser's password form and read every team's audit log."""

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from apps.accounts.api_keys import api_key_create
from apps.accounts.models import ApiKey
from tests.factories import UserFactory


@pytest.fixture
def root(db):
    return UserFactory(username="root", is_superuser=True, is_staff=True)


@pytest.fixture
def admin_with_stale_permissions(admin_user):
    """The admin role's old model permissions, granted by hand: the admin site must still refuse."""
    admin_user.user_permissions.add(*Permission.objects.filter(
        content_type__app_label__in=["auth", "accounts", "audit"]))
    return admin_user


def test_a_team_admin_cannot_make_itself_a_superuser(client, admin_with_stale_permissions):
    me = admin_with_stale_permissions
    client.force_login(me)
    url = reverse("admin:auth_user_change", args=[me.pk])
    assert client.get(url).status_code in (302, 403)
    client.post(url, {"username": me.username, "is_active": "on", "is_staff": "on", "is_superuser": "on",
                      "date_joined_0": "2024-01-01", "date_joined_1": "00:00:00"})
    me.refresh_from_db()
    assert not me.is_superuser


def test_a_team_admin_cannot_reach_a_superusers_password_form_or_create_keys(client, admin_with_stale_permissions,
                                                                             root):
    client.force_login(admin_with_stale_permissions)
    assert client.get(reverse("admin:auth_user_password_change", args=[root.pk])).status_code in (302, 403)
    client.post(reverse("admin:accounts_apikey_add"), {"user": root.pk, "name": "mine now"})
    assert not ApiKey.objects.filter(user=root).exists()
    assert client.get(reverse("admin:accounts_apikey_changelist")).status_code in (302, 403)


def test_a_team_admin_cannot_join_another_team_or_grant_roles(client, admin_with_stale_permissions, other_team):
    client.force_login(admin_with_stale_permissions)
    assert client.get(reverse("admin:accounts_team_change", args=[other_team.pk])).status_code in (302, 403)
    assert client.get(reverse("admin:auth_group_changelist")).status_code in (302, 403)


def test_a_team_admin_cannot_read_the_audit_log_in_the_admin_site(client, admin_with_stale_permissions):
    client.force_login(admin_with_stale_permissions)
    assert client.get(reverse("admin:audit_objectchange_changelist")).status_code in (302, 403)
    index = client.get(reverse("admin:index")).content.decode()
    assert "/admin/audit/" not in index and "/admin/auth/user/" not in index


def test_a_team_admin_still_manages_the_catalog_in_the_admin_site(client, admin_user):
    client.force_login(admin_user)
    assert client.get(reverse("admin:catalog_gpumodel_changelist")).status_code == 200


def test_a_superuser_manages_people_and_keys(client, root, finance_user):
    client.force_login(root)
    assert client.get(reverse("admin:auth_user_change", args=[finance_user.pk])).status_code == 200
    assert client.get(reverse("admin:audit_objectchange_changelist")).status_code == 200
    api_key_create(user=finance_user)
    assert client.get(reverse("admin:accounts_apikey_changelist")).status_code == 200


def test_an_api_key_never_carries_more_than_its_owner(client, finance_user):
    """A key acts as its user: a finance key cannot write the catalog (admin only)."""
    from rest_framework.test import APIClient

    _api_key, key = api_key_create(user=finance_user)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.post("/api/v1/catalog/gpus/", {}, format="json").status_code in (403, 405)
