from django.apps import AppConfig
from django.db.models.signals import post_migrate
from django.utils.translation import gettext_lazy as _


def restore_checklist_data(sender, apps=None, using="default", **kwargs):
    """Put the checklist questions and the default commitment policy back after a database flush.

    Migration 0002 loads them (apps/quotes/checklist_data.py); a flush (transactional tests, `manage.py flush`)
    empties the tables and sends post_migrate. The loader is idempotent and creates the policy tiers only when none
    exist.
    """
    from django.apps import apps as global_apps

    from apps.quotes import checklist_data

    checklist_data.load(apps or global_apps, None)


class QuotesConfig(AppConfig):
    name = "apps.quotes"
    label = "quotes"
    verbose_name = _("Quotes")

    def ready(self):
        from apps.quotes import page_parts, progress_steps
        from apps.quotes.selectors import cheapest_gpu_hour_prices
        from apps.workloads import price_sources

        post_migrate.connect(restore_checklist_data, sender=self, dispatch_uid="quotes-checklist-data")
        page_parts.register()
        progress_steps.register()  # the quotes and candidates steps of a workload's progress strip
        # The workload shortlist ranks by predicted cost per accepted output with the team's cheapest quote per GPU.
        price_sources.register(cheapest_gpu_hour_prices, name="quotes-cheapest-gpu-hour")
