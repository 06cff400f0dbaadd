"""Create the four role groups (docs/permissions.md)."""

from django.db import migrations

ROLE_NAMES = ["platform", "finance", "product", "admin"]


def create_role_groups(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in ROLE_NAMES:
        Group.objects.get_or_create(name=name)


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_initial"), ("auth", "0012_alter_user_first_name_max_length")]

    operations = [migrations.RunPython(create_role_groups, migrations.RunPython.noop)]
