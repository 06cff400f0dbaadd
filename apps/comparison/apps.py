from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ComparisonConfig(AppConfig):
    """The finance-normalised comparison of a workload's candidates: the cost model, the six mistakes, charts and
    exports. It reads quotes, workloads and evidence; it stores nothing of its own."""

    name = "apps.comparison"
    label = "comparison"
    verbose_name = _("Comparison")
