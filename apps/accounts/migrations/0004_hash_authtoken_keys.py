"""Move DRF authtoken keys (stored in clear in `authtoken_token`) into ApiKey as SHA-256 digests, then empty that
table: existing clients keep sending `Authorization: Token <key>` and are still let in, and no key stays readable.

`rest_framework.authtoken` is no longer installed, so the old table is read with plain SQL when it exists (a
database created after this change never had it). The table itself is left empty, not dropped, so the migration
history of `authtoken` stays consistent.
"""

import hashlib
from datetime import UTC, datetime

from django.db import migrations
from django.utils.dateparse import parse_datetime

OLD_TABLE = "authtoken_token"
PREFIX_LENGTH = 8  # of a 40-hex-digit key: enough to recognise it in a list


def _aware(value):
    """The `created` column as an aware datetime (SQLite returns text, and naive on every backend without a zone)."""
    if isinstance(value, str):
        value = parse_datetime(value)
    if isinstance(value, datetime) and value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value


def hash_authtoken_keys(apps, schema_editor):
    connection = schema_editor.connection
    if OLD_TABLE not in connection.introspection.table_names():
        return
    ApiKey = apps.get_model("accounts", "ApiKey")
    table = schema_editor.quote_name(OLD_TABLE)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {schema_editor.quote_name('key')}, user_id, created FROM {table}")  # noqa: S608
        rows = cursor.fetchall()
    for key, user_id, created in rows:
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
        api_key, made = ApiKey.objects.get_or_create(
            digest=digest,
            defaults={"user_id": user_id, "name": "DRF token (migrated)", "prefix": key[:PREFIX_LENGTH]},
        )
        if made and created is not None:
            ApiKey.objects.filter(pk=api_key.pk).update(created_at=_aware(created))
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table}")  # noqa: S608


class Migration(migrations.Migration):
    dependencies = [("accounts", "0003_api_keys")]

    operations = [migrations.RunPython(hash_authtoken_keys, migrations.RunPython.noop)]
