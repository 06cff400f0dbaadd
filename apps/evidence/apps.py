from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class EvidenceConfig(AppConfig):
    """A candidate's figures (measured, quoted or estimated) and their provenance: benchmarks write them, the
    comparison reads them."""

    name = "apps.evidence"
    label = "evidence"
    verbose_name = _("Evidence")
