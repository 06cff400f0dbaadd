from django.apps import AppConfig
from django.db.models.signals import post_migrate
from django.utils.translation import gettext_lazy as _


class AccountsConfig(AppConfig):
    name = "apps.accounts"
    label = "accounts"
    verbose_name = _("Accounts and teams")

    def ready(self):
        from apps.accounts.signals import ensure_role_groups

        # After every app's post_migrate (permissions are created app by app), and after a test database flush.
        post_migrate.connect(ensure_role_groups, dispatch_uid="accounts.ensure_role_groups")
