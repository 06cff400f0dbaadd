"""Before the database requires a source beside the failure rate and the acceptance rate (0003), give every stored
rate without one a source that says so.

The forms, the API and the services have always refused such a row (WorkloadSummary.clean), so this finds nothing
unless a row was written around them. The rate itself is kept: dropping it would change the comparison. Each row it
changes gets an audit entry, because the change reaches the inputs of a decision record that cites the version.
"""

from django.db import migrations

MISSING_SOURCE = "not recorded: saved without its source before the database required one"

#: (figure, its source column)
SOURCED_FIGURES = (
    ("expected_failures_per_1000_gpu_hours", "failure_rate_source"),
    ("quality_acceptance_rate", "quality_acceptance_source"),
)


def fill_missing_sources(apps, schema_editor):
    summary_model = apps.get_model("workloads", "WorkloadSummary")
    change_model = apps.get_model("audit", "ObjectChange")
    content_type_model = apps.get_model("contenttypes", "ContentType")
    for figure, source in SOURCED_FIGURES:
        unsourced = summary_model.objects.filter(**{f"{figure}__isnull": False, source: ""}).order_by("pk")
        for summary in unsourced:
            # update(), not save(): updated_at keeps the last edit a person made.
            summary_model.objects.filter(pk=summary.pk).update(**{source: MISSING_SOURCE})
            content_type, _created = content_type_model.objects.get_or_create(
                app_label="workloads", model="workloadsummary"
            )
            change_model.objects.create(
                actor=None,
                actor_label="migration workloads 0002",
                team_id=summary.team_id,
                content_type=content_type,
                object_id=str(summary.pk),
                object_repr=f"{summary.name} v{summary.version}"[:300],
                action="update",
                message=f"{source}: {MISSING_SOURCE}",
                before={source: ""},
                after={source: MISSING_SOURCE},
                changes={source: ["", MISSING_SOURCE]},
            )


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("workloads", "0001_initial"),
    ]

    operations = [migrations.RunPython(fill_missing_sources, migrations.RunPython.noop)]
