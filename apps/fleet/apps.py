from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class FleetConfig(AppConfig):
    name = "apps.fleet"
    label = "fleet"
    verbose_name = _("Agents")

    def ready(self) -> None:
        from apps.fleet import (
            checks,  # noqa: F401  (registers the configuration checks)
            page_parts,
        )

        page_parts.register()
