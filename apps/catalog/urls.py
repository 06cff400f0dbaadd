from django.urls import path

from apps.catalog import views

app_name = "catalog"

urlpatterns = [
    path("", views.catalog_list, name="list"),
    path("<int:pk>/", views.gpu_detail, name="detail"),
    path("<int:pk>/figures/<str:key>/", views.spec_edit, name="spec-edit"),
]
