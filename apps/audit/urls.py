from django.urls import path

from apps.audit import views

app_name = "audit"

urlpatterns = [
    path("<str:app_label>/<str:model_name>/<str:object_id>/", views.object_history, name="object-history"),
]
