from django.apps import AppConfig


class ScopedAppConfig(AppConfig):
    name = "tests.scoped_app"
    label = "scoped_app"
    default_auto_field = "django.db.models.BigAutoField"
