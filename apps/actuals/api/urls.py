"""Actuals API under /api/v1/actuals/ (the namespace `actuals-api`)."""

from django.urls import path

from apps.actuals.api import views

app_name = "actuals-api"

urlpatterns = [
    path("records/<int:pk>/", views.RecordActualsView.as_view(), name="record-actuals"),
]
