"""Create the first administrator when there is none (`make run` calls this on every start)."""

import os
import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from apps.accounts.roles import Role
from apps.accounts.services import role_grant

SOURCE_VARIABLE = "DOSSIER_ADMIN_PASSWORD"
USERNAME = "admin"


class Command(BaseCommand):
    help = (
        f"If no superuser exists, create '{USERNAME}' in the admin role with the password from "
        f"{SOURCE_VARIABLE}, or a generated one printed once. Does nothing when a superuser exists."
    )

    def handle(self, *args, **options):
        user_model = get_user_model()
        if user_model.objects.filter(is_superuser=True, is_active=True).exists():
            self.stdout.write("An administrator already exists; no account created.")
            return

        password = os.environ.get(SOURCE_VARIABLE) or None
        generated = password is None
        if generated:
            password = secrets.token_urlsafe(16)
        else:
            try:
                validate_password(password, user_model(username=USERNAME))
            except ValidationError as error:
                raise CommandError(f"{SOURCE_VARIABLE} is too weak: {' '.join(error.messages)}") from None

        with transaction.atomic():
            if user_model.objects.filter(username=USERNAME).exists():
                # Never promote an existing account silently: that would hand it every permission.
                raise CommandError(
                    f"A user named '{USERNAME}' exists but is not an active superuser; promote it with "
                    "`manage.py changepassword` and the Django admin, or create one with `manage.py createsuperuser`."
                )
            user = user_model.objects.create_superuser(username=USERNAME, email="", password=password)
            role_grant(user=user, role=Role.ADMIN)

        self.stdout.write(self.style.SUCCESS(f"Created the administrator '{USERNAME}'."))
        if generated:
            # Shown this once only: the database keeps nothing but the hash.
            self.stdout.write(f"  password: {password}")
            self.stdout.write(f"  (generated; set {SOURCE_VARIABLE} to choose it, change it after logging in)")
        else:
            self.stdout.write(f"  password: the value of {SOURCE_VARIABLE}")
