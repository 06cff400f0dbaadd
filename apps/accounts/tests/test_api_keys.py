"""User API keys: stored as a SHA-256 digest, shown once, sent as `Authorization: Token <key>` (the header DRF's
authtoken used), revocable; the old clear-text authtoken keys are moved in hashed and keep working."""

import hashlib
import io
import re

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse
from rest_framework.test import APIClient

from apps.accounts.api_keys import api_key_create, api_key_digest, api_key_revoke
from apps.accounts.models import ApiKey
from tests.factories import UserFactory

URL = "/api/v1/catalog/gpus/"


def _client(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_a_key_works_and_only_its_digest_is_stored(finance_user):
    api_key, key = api_key_create(user=finance_user, name="reporting")
    assert _client(key).get(URL).status_code == 200
    stored = ApiKey.objects.filter(pk=api_key.pk).values().get()
    assert key not in str(stored)
    assert stored["digest"] == hashlib.sha256(key.encode()).hexdigest()
    assert key.startswith(stored["prefix"]) and len(stored["prefix"]) == 12
    api_key.refresh_from_db()
    assert api_key.last_used_at is not None


def test_a_wrong_a_revoked_key_and_an_inactive_users_key_are_refused(finance_user):
    api_key, key = api_key_create(user=finance_user)
    assert _client(key + "x").get(URL).status_code in (401, 403)
    api_key_revoke(api_key=api_key)
    assert _client(key).get(URL).status_code in (401, 403)
    _other, other_key = api_key_create(user=finance_user)
    finance_user.is_active = False
    finance_user.save()
    assert _client(other_key).get(URL).status_code in (401, 403)


def test_the_management_command_prints_the_key_once(finance_user):
    out = io.StringIO()
    call_command("create_api_key", finance_user.username, "--name", "ci", stdout=out)
    key = re.search(r"key: (\S+)", out.getvalue()).group(1)
    assert ApiKey.objects.get(digest=api_key_digest(key)).name == "ci"
    assert _client(key).get(URL).status_code == 200


def test_a_superuser_creates_a_key_in_the_admin_site_and_sees_it_once(client, finance_user):
    root = UserFactory(username="root", is_superuser=True, is_staff=True)
    client.force_login(root)
    response = client.post(reverse("admin:accounts_apikey_add"), {"user": finance_user.pk, "name": "laptop"},
                           follow=True)
    assert response.status_code == 200
    shown = re.search(r"(dsk_[A-Za-z0-9_-]{43})", response.content.decode()).group(1)
    assert _client(shown).get(URL).status_code == 200
    listing = client.get(reverse("admin:accounts_apikey_changelist")).content.decode()
    assert shown not in listing and shown[:12] in listing


@pytest.mark.django_db(transaction=True)
def test_the_migration_hashes_the_old_authtoken_keys_and_they_keep_working():
    """An authtoken_token row (40 hex digits, in clear) becomes an ApiKey with its digest; the old row is emptied."""
    executor = MigrationExecutor(connection)
    executor.migrate([("accounts", "0003_api_keys")])
    user = UserFactory(username="legacy", roles=["finance"])
    old_key = "401f7ac837da42b97f613d789819ff93537bee6a"
    with connection.cursor() as cursor:
        cursor.execute('CREATE TABLE "authtoken_token" ("key" varchar(40) PRIMARY KEY,'
                       ' "created" timestamp with time zone NOT NULL, "user_id" integer NOT NULL)')
        cursor.execute('INSERT INTO "authtoken_token" ("key", "created", "user_id") VALUES (%s, %s, %s)',
                       [old_key, "2024-05-01 10:00:00", user.pk])
    try:
        executor = MigrationExecutor(connection)
        executor.migrate([("accounts", "0004_hash_authtoken_keys")])
        migrated = ApiKey.objects.get(user=user)
        assert migrated.digest == hashlib.sha256(old_key.encode()).hexdigest()
        assert migrated.prefix == "401f7ac8" and migrated.created_at.year == 2024
        with connection.cursor() as cursor:
            cursor.execute('SELECT COUNT(*) FROM "authtoken_token"')
            assert cursor.fetchone()[0] == 0
        assert _client(old_key).get(URL).status_code == 200
    finally:
        with connection.cursor() as cursor:
            cursor.execute('DROP TABLE IF EXISTS "authtoken_token"')
