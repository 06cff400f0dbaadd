"""Last step of moving `Phase4Input` to the evidence app: Django's state forgets it here; the table stays (evidence
0001 took it over)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('decisions', '0004_phase4input_table_to_evidence'),
        ('evidence', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name='Phase4Input')],
            database_operations=[],
        ),
    ]
