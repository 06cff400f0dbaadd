"""Comparison pages under /comparison/ (the namespace `comparison`)."""

from django.urls import path

from apps.comparison import views

app_name = "comparison"

urlpatterns = [
    path("workloads/<int:pk>/", views.comparison_page, name="comparison"),
    path("workloads/<int:pk>/print/", views.comparison_print, name="comparison-print"),
    path("workloads/<int:pk>/comparison.csv", views.comparison_csv, name="comparison-csv"),
    path("workloads/<int:pk>/comparison.xlsx", views.comparison_xlsx, name="comparison-xlsx"),
]
