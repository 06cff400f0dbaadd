"""Create a user-API key and print it once (the database keeps only its SHA-256 digest)."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from apps.accounts.api_keys import api_key_create


class Command(BaseCommand):
    help = (
        "Create an API key for USERNAME (sent as `Authorization: Token <key>`) and print it once; only its digest is "
        "stored. Revoke keys in the admin site (superusers)."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="what the key is for, shown in the admin site")

    def handle(self, *args, username, name, **options):
        user_model = get_user_model()
        try:
            user = user_model.objects.get(**{user_model.USERNAME_FIELD: username})
        except user_model.DoesNotExist:
            raise CommandError(f"No user named {username!r}.") from None
        if not user.is_active:
            raise CommandError(f"{username!r} is inactive: its key would be refused.")
        api_key, key = api_key_create(user=user, name=name)
        self.stdout.write(self.style.SUCCESS(f"Created API key {api_key.prefix}… for {username}."))
        self.stdout.write(f"  key: {key}")
        self.stdout.write("  (shown this once only; send it as `Authorization: Token <key>`)")
