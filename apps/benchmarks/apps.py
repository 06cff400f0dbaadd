from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class BenchmarksConfig(AppConfig):
    name = "apps.benchmarks"
    label = "benchmarks"
    verbose_name = _("Benchmarks")

    def ready(self):
        from apps.benchmarks import page_parts

        page_parts.register()
