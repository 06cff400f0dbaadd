from django.urls import path

from apps.budgets import views

app_name = "budgets"

urlpatterns = [
    path("", views.finance, name="finance"),
    path("export.csv", views.export_csv, name="export-csv"),
    path("export.xlsx", views.export_xlsx, name="export-xlsx"),
    path("cost-centres/new/", views.cost_centre_create, name="cost-centre-create"),
    path("new/", views.budget_create, name="budget-create"),
    path("<int:pk>/edit/", views.budget_edit, name="budget-edit"),
    path("policy/", views.policy_edit, name="policy"),
]
