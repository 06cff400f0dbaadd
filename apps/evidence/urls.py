"""Pages of a candidate's figures under /evidence/ (the namespace `evidence`)."""

from django.urls import path

from apps.evidence import views

app_name = "evidence"

urlpatterns = [
    path("candidates/<int:pk>/figures/", views.candidate_figures, name="candidate-figures"),
    path("figures/<int:pk>/edit/", views.figure_edit, name="figure-edit"),
    path("figures/<int:pk>/remove/", views.figure_remove, name="figure-remove"),
]
