"""The candidate figures move here from the decisions app (where they were `Phase4Input`), rows and all.

decisions 0004 renamed the table to evidence_candidatefigure; this migration only tells Django's state that the model
now lives here (no table is created), keeps the constraint names the table already has (0002 renames them), and
moves the model's content type and permissions, so the audit trail of every figure follows it.
"""

import apps.common.fields
import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


def _move(apps, old, new):
    content_type_model = apps.get_model("contenttypes", "ContentType")
    permission_model = apps.get_model("auth", "Permission")
    found = content_type_model.objects.filter(app_label=old[0], model=old[1]).first()
    if found is None:
        return
    taken = content_type_model.objects.filter(app_label=new[0], model=new[1]).first()
    if taken is not None:
        # Created by an earlier post_migrate: point the audit trail at it, then drop the old one.
        change_model = apps.get_model("audit", "ObjectChange")
        change_model.objects.filter(content_type=found).update(content_type=taken)
        permission_model.objects.filter(content_type=found).delete()
        found.delete()
        return
    found.app_label, found.model = new
    found.save(update_fields=["app_label", "model"])
    for permission in permission_model.objects.filter(content_type=found):
        action = permission.codename.split("_", 1)[0]
        permission.codename = f"{action}_{new[1]}"
        permission.name = f"Can {action} {'candidate figure' if new[1] == 'candidatefigure' else 'phase-4 input'}"
        permission.save(update_fields=["codename", "name"])


def move_content_type(apps, schema_editor):
    _move(apps, ("decisions", "phase4input"), ("evidence", "candidatefigure"))


def move_content_type_back(apps, schema_editor):
    _move(apps, ("evidence", "candidatefigure"), ("decisions", "phase4input"))


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('decisions', '0004_phase4input_table_to_evidence'),
        ('contenttypes', '0002_remove_content_type_name'),
        ('auth', '0012_alter_user_first_name_max_length'),
        ('audit', '0001_initial'),
        ('quotes', '0002_checklist_questions_and_policy'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='CandidateFigure',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('metric', models.CharField(choices=[('capacity_at_slo', 'Capacity at the SLO, per GPU'), ('retry_rate', 'Retry rate'), ('failure_rate', 'Failure rate'), ('p50_latency_ms', 'p50 latency (ms)'), ('p95_latency_ms', 'p95 latency (ms)'), ('p99_latency_ms', 'p99 latency (ms)'), ('memory_margin', 'Memory margin, measured'), ('tested_context_tokens', 'Largest context tested (tokens)'), ('tested_concurrency', 'Largest concurrency tested'), ('gpus_per_replica', 'GPUs per replica'), ('nodes_per_replica', 'Nodes per replica'), ('interconnect_busbw_gbps', 'Interconnect bus bandwidth, all-reduce (GB/s)'), ('headroom', 'Sizing headroom'), ('training_tokens_per_second', 'Training throughput, whole cluster (tokens/s)'), ('checkpoint_write_hours', 'Checkpoint write stall (hours)'), ('restart_hours', 'Restart after a failure (hours)'), ('cold_start_seconds', 'Cold start to healthy (seconds)'), ('lost_work_gpu_hours', 'Lost work per failure (GPU-hours)')], max_length=40, verbose_name='figure')),
                        ('value', apps.common.fields.ExactDecimalField(decimal_places=12, max_digits=24, verbose_name='value')),
                        ('capacity_unit', models.CharField(blank=True, choices=[('requests_per_second', 'requests per second'), ('outputs_per_second', 'outputs per second')], help_text='Only for the capacity at the SLO.', max_length=30, verbose_name='capacity unit')),
                        ('source', models.CharField(choices=[('measured', 'Measured'), ('quoted', 'Quoted'), ('estimated', 'Estimated')], max_length=20, verbose_name='source')),
                        ('reference', models.CharField(blank=True, help_text='Measured: the benchmark job. Quoted: the document or message that states it.', max_length=500, verbose_name='reference')),
                        ('estimated_by', models.CharField(blank=True, max_length=200, verbose_name='estimated by')),
                        ('estimate_reason', models.TextField(blank=True, verbose_name='why this estimate')),
                        ('entered_at', models.DateTimeField(default=django.utils.timezone.now, verbose_name='entered at')),
                        ('updated_at', models.DateTimeField(auto_now=True, verbose_name='updated at')),
                        ('candidate', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='figures', to='quotes.candidate', verbose_name='candidate')),
                        ('entered_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='entered by')),
                    ],
                    options={
                        'verbose_name': 'candidate figure',
                        'verbose_name_plural': 'candidate figures',
                        'ordering': ['candidate', 'metric'],
                        'constraints': [models.UniqueConstraint(fields=('candidate', 'metric'), name='decisions_phase4input_one_per_metric', violation_error_message='This candidate already has this figure: edit it instead.'), models.CheckConstraint(condition=models.Q(models.Q(('source__in', ['measured', 'quoted']), _negated=True), models.Q(('reference', ''), _negated=True), _connector='OR'), name='decisions_phase4input_referenced', violation_error_message='A measured or quoted figure needs its reference.'), models.CheckConstraint(condition=models.Q(models.Q(('source', 'estimated'), _negated=True), models.Q(models.Q(('estimated_by', ''), _negated=True), models.Q(('estimate_reason', ''), _negated=True)), _connector='OR'), name='decisions_phase4input_estimate_explained', violation_error_message='An estimated figure needs who estimated it and why.'), models.CheckConstraint(condition=models.Q(('capacity_unit', ''), ('metric', 'capacity_at_slo'), _connector='OR'), name='decisions_phase4input_unit_for_capacity_only', violation_error_message='Only the capacity at the SLO has a capacity unit.')],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(move_content_type, move_content_type_back),
    ]
