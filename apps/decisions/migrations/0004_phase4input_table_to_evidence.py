"""First step of moving `Phase4Input` to the evidence app as `CandidateFigure`: rename its table, rows and all."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('decisions', '0003_phase3_input_metrics'),
    ]

    operations = [
        migrations.AlterModelTable(name='phase4input', table='evidence_candidatefigure'),
    ]
