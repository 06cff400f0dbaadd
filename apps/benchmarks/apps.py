from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class BenchmarksConfig(AppConfig):
    name = "apps.benchmarks"
    label = "benchmarks"
    verbose_name = _("Benchmarks")

    def ready(self):
        from django.db.models.signals import post_save

        from apps.benchmarks import page_parts, progress_steps

        page_parts.register()
        progress_steps.register()  # the memory-fit, throughput and resilience steps of a workload's progress strip
        # A figure a person changed to quoted or estimated is no longer a result's measurement (the evidence app,
        # below, never reaches up to the link).
        post_save.connect(_unlink_unless_measured, sender="evidence.CandidateFigure",
                          dispatch_uid="benchmarks.unlink_unless_measured")


def _unlink_unless_measured(sender, instance, **kwargs):
    from apps.benchmarks.measurements import unlink_unless_measured

    unlink_unless_measured(figure=instance)
