from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ComparisonConfig(AppConfig):
    """The finance-normalised comparison of a workload's candidates: the cost model, the six mistakes, charts and
    exports. It reads quotes, workloads and evidence; it stores only the waivers a named person records for a rule of
    the mistakes check (models.MistakeWaiver)."""

    name = "apps.comparison"
    label = "comparison"
    verbose_name = _("Comparison")

    def ready(self):
        from apps.comparison import progress_steps

        progress_steps.register()  # the comparison step of a workload's progress strip
