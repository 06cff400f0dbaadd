from django.urls import path

from apps.quotes import views

app_name = "quotes"

urlpatterns = [
    path("", views.quote_list, name="quote-list"),
    path("new/", views.quote_create, name="quote-create"),
    path("<int:pk>/", views.quote_detail, name="quote-detail"),
    path("<int:pk>/edit/", views.quote_edit, name="quote-edit"),
    path("<int:pk>/prices/new/", views.price_create, name="price-create"),
    path("<int:pk>/documents/new/", views.document_upload, name="document-upload"),
    path("<int:pk>/cost-lines/new/", views.cost_line_create, name="cost-line-create"),
    path("<int:pk>/checklist/", views.quote_checklist, name="quote-checklist"),
    path("documents/<int:pk>/", views.document_download, name="document-download"),
    path("cost-lines/<int:pk>/edit/", views.cost_line_edit, name="cost-line-edit"),
    path("cost-lines/<int:pk>/remove/", views.cost_line_remove, name="cost-line-remove"),
    path("vendors/", views.vendor_list, name="vendor-list"),
    path("vendors/new/", views.vendor_create, name="vendor-create"),
    path("vendors/<int:pk>/", views.vendor_detail, name="vendor-detail"),
    path("vendors/<int:pk>/edit/", views.vendor_edit, name="vendor-edit"),
    path("import/", views.quote_import, name="quote-import"),
    path("import/template.csv", views.import_template, name="import-template"),
    path("export.csv", views.export_csv, name="export-csv"),
    path("export.xlsx", views.export_xlsx, name="export-xlsx"),
    path("rates/", views.rate_list, name="rate-list"),
    path("rates/new/", views.rate_create, name="rate-create"),
    path("stale/", views.stale_prices, name="stale-prices"),
    path("candidates/", views.candidate_list, name="candidate-list"),
    path("candidates/new/", views.candidate_create, name="candidate-create"),
    path("candidates/<int:pk>/", views.candidate_detail, name="candidate-detail"),
    path("candidates/<int:pk>/edit/", views.candidate_edit, name="candidate-edit"),
]
