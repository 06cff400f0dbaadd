import importlib

from django.apps import AppConfig
from django.db.models.signals import post_migrate
from django.utils.translation import gettext_lazy as _

CHECKLIST_DATA_MIGRATION = "apps.quotes.migrations.0002_checklist_questions_and_policy"


def restore_checklist_data(sender, apps=None, using="default", **kwargs):
    """Put the checklist questions and the default commitment policy back after a database flush.

    Migration 0002 loads them; a flush (transactional tests, `manage.py flush`) empties the tables and sends
    post_migrate. The loader is idempotent and creates the policy tiers only when none exist.
    """
    from django.apps import apps as global_apps

    importlib.import_module(CHECKLIST_DATA_MIGRATION).load(apps or global_apps, None)


class QuotesConfig(AppConfig):
    name = "apps.quotes"
    label = "quotes"
    verbose_name = _("Quotes")

    def ready(self):
        post_migrate.connect(restore_checklist_data, sender=self, dispatch_uid="quotes-checklist-data")
