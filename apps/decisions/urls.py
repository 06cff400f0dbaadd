from django.urls import path

from apps.decisions import views

app_name = "decisions"

urlpatterns = [
    path("workloads/<int:pk>/comparison/", views.comparison_page, name="comparison"),
    path("workloads/<int:pk>/comparison/print/", views.comparison_print, name="comparison-print"),
    path("workloads/<int:pk>/comparison.csv", views.comparison_csv, name="comparison-csv"),
    path("workloads/<int:pk>/comparison.xlsx", views.comparison_xlsx, name="comparison-xlsx"),
    path("candidates/<int:pk>/inputs/", views.candidate_inputs, name="candidate-inputs"),
    path("inputs/<int:pk>/edit/", views.input_edit, name="input-edit"),
    path("inputs/<int:pk>/remove/", views.input_remove, name="input-remove"),
]
