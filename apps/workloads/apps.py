from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class WorkloadsConfig(AppConfig):
    name = "apps.workloads"
    label = "workloads"
    verbose_name = _("Workloads")

    def ready(self):
        from apps.workloads import price_sources, progress

        price_sources.register(price_sources.catalog_reference_prices, name="catalog-reference")
        # The first step of the progress strip; the apps above register the others in their own ready().
        progress.register_step(progress.SUMMARY, progress.summary_step)
