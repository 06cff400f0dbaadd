from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CommonConfig(AppConfig):
    name = "apps.common"
    label = "common"
    verbose_name = _("Common")

    def ready(self):
        from apps.common import site  # noqa: F401 (registers the DOSSIER_SITE_URL deploy check)
