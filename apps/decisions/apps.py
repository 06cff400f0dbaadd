from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DecisionsConfig(AppConfig):
    name = "apps.decisions"
    label = "decisions"
    verbose_name = _("Decisions")

    def ready(self):
        # Quotes sits below decisions and may not import it: it sends a signal once a price version commits, and the
        # records citing that price are flagged for a revisit at once (the beat task stays as the daily catch-up).
        from apps.decisions import progress_steps, services
        from apps.quotes.signals import price_version_committed

        price_version_committed.connect(
            services.on_price_version_committed, dispatch_uid="decisions-flag-records-on-price-version"
        )
        # Budgets sits below decisions too: it counts the accepted records through the source registered here.
        from apps.budgets import spend
        from apps.decisions import selectors

        spend.register_source(selectors.committed_records)
        progress_steps.register()  # the record step of a workload's progress strip
