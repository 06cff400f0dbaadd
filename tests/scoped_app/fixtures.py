"""`scoped_models`: install tests.scoped_app for one test module, with its tables created and then dropped again."""

from types import SimpleNamespace

import pytest
from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.test.utils import override_settings


@pytest.fixture(scope="module")
def scoped_models(django_db_setup, django_db_blocker):
    with override_settings(INSTALLED_APPS=[*settings.INSTALLED_APPS, "tests.scoped_app"]):
        from tests.scoped_app.models import GlobalPage, Note, NoteComment

        models = [Note, NoteComment, GlobalPage]
        with django_db_blocker.unblock():
            existing = set(connection.introspection.table_names())
            # Outside any transaction: SQLite cannot change its schema inside one with foreign keys enforced.
            with connection.schema_editor() as editor:
                for model in models:
                    if model._meta.db_table not in existing:
                        editor.create_model(model)
            # Committed once: ContentType's process-wide cache must never point at a row a test rolled back.
            ContentType.objects.clear_cache()
            ContentType.objects.get_for_models(*models)
        yield SimpleNamespace(Note=Note, NoteComment=NoteComment, GlobalPage=GlobalPage)
        # Drop the tables again: left behind, their foreign keys to accounts_team make PostgreSQL refuse the
        # TRUNCATE with which later transactional tests flush the database (the app is not installed there).
        with django_db_blocker.unblock():
            with connection.schema_editor() as editor:
                for model in reversed(models):
                    if model._meta.db_table in connection.introspection.table_names():
                        editor.delete_model(model)
            ContentType.objects.clear_cache()
