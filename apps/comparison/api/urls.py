from django.urls import path

from apps.comparison.api import views

app_name = "comparison-api"

urlpatterns = [
    path("<int:pk>/", views.ComparisonView.as_view(), name="comparison"),
]
