"""The failure rate and the acceptance rate of a workload summary need their source, in the database as in clean().

Its own migration after the data one (0002): on PostgreSQL each runs in its own transaction.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("workloads", "0002_fill_missing_figure_sources"),
    ]

    operations = [
        migrations.AddConstraint(
            model_name="workloadsummary",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("expected_failures_per_1000_gpu_hours__isnull", True),
                    models.Q(("failure_rate_source", ""), _negated=True),
                    _connector="OR",
                ),
                name="workloads_summary_failure_rate_sourced",
                violation_error_message="Say where the failure rate comes from.",
            ),
        ),
        migrations.AddConstraint(
            model_name="workloadsummary",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("quality_acceptance_rate__isnull", True),
                    models.Q(("quality_acceptance_source", ""), _negated=True),
                    _connector="OR",
                ),
                name="workloads_summary_acceptance_sourced",
                violation_error_message=(
                    "Say where the acceptance rate comes from (an evaluation run, a pilot, a vendor report)."
                ),
            ),
        ),
    ]
