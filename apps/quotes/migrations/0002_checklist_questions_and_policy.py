"""The guide's procurement checklist and a default commitment policy, loaded as data (apps/quotes/checklist_data.py)."""

from django.db import migrations

from apps.quotes.checklist_data import load, unload


class Migration(migrations.Migration):
    dependencies = [("quotes", "0001_initial")]

    operations = [migrations.RunPython(load, unload)]
