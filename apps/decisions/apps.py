from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DecisionsConfig(AppConfig):
    name = "apps.decisions"
    label = "decisions"
    verbose_name = _("Decisions")
