"""The project's URLs plus the scoped test app's view (tests select it with override_settings(ROOT_URLCONF=…))."""

from django.urls import path

from config.urls import urlpatterns as project_urlpatterns
from tests.scoped_app import views

urlpatterns = [
    *project_urlpatterns,
    path("scoped-app/notes/<int:pk>/rename/", views.note_rename, name="scoped-note-rename"),
]
