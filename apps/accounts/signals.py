"""Keep the role groups and the admin role's model permissions as stated after every migration (docs/permissions.md).

Migration 0002 creates the groups; this also restores them after a database flush, and grants the `admin` group the
model permissions the Django admin site checks, once each app's permissions exist (they are created by
django.contrib.auth on post_migrate too, app by app).
"""

from django.apps import apps as global_apps
from django.db.models import Q

from apps.accounts.roles import Role

#: What the admin role manages in the admin site: global data only, the GPU catalog and the procurement policy (None:
#: every model of the app). People, roles, teams, API keys and the audit log (every team's) are for superusers only
#: (apps/accounts/admin.py): a team admin granting itself a role, a team or a key would escalate.
ADMIN_ROLE_MODELS: dict[str, set[str] | None] = {
    "catalog": None,
    "quotes": {"checklistquestion", "commitmenttier"},
}
#: Models the admin role may read there but never change.
ADMIN_ROLE_READ_ONLY: dict[str, set[str] | None] = {}


def _permission_filter() -> Q:
    wanted = Q(pk__in=[])
    for app_label, models in ADMIN_ROLE_MODELS.items():
        scope = Q(content_type__app_label=app_label)
        wanted |= scope if models is None else scope & Q(content_type__model__in=models)
    for app_label, models in ADMIN_ROLE_READ_ONLY.items():
        scope = Q(content_type__app_label=app_label, codename__startswith="view_")
        wanted |= scope if models is None else scope & Q(content_type__model__in=models)
    return wanted


def ensure_role_groups(*, apps=global_apps, using: str = "default", **kwargs) -> None:
    """post_migrate receiver: every role group exists, and the admin group holds its permissions.

    `migrate` passes the migration state's app registry; `flush` passes none (the installed apps are used then).
    """
    try:
        group_model = apps.get_model("auth", "Group")
        permission_model = apps.get_model("auth", "Permission")
    except LookupError:  # auth not migrated yet
        return
    groups = {role: group_model.objects.using(using).get_or_create(name=role)[0] for role in Role.values}
    permissions = permission_model.objects.using(using).filter(_permission_filter())
    # set, not add: a database from before the admin role lost people and teams loses those permissions here too.
    groups[Role.ADMIN].permissions.set(permissions)
