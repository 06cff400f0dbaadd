"""Actuals pages under /actuals/ (the namespace `actuals`)."""

from django.urls import path

from apps.actuals import views

app_name = "actuals"

urlpatterns = [
    path("template.csv", views.template, name="template"),
    path("records/<int:pk>/upload/", views.upload, name="upload"),
    path("uploads/<int:pk>/export.csv", views.export, name="export"),
]
