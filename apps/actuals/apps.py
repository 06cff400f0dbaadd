from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ActualsConfig(AppConfig):
    name = "apps.actuals"
    label = "actuals"
    verbose_name = _("Actuals")

    def ready(self):
        # The record page belongs to decisions, below this app: the panel comes through its page-parts slot.
        from apps.actuals import page_parts

        page_parts.register()
