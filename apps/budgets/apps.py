from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class BudgetsConfig(AppConfig):
    name = "apps.budgets"
    label = "budgets"
    verbose_name = _("Budgets")
