from django.urls import path
from rest_framework.routers import SimpleRouter

from apps.decisions.api import views

app_name = "decisions-api"

router = SimpleRouter()
router.register("phase4-inputs", views.Phase4InputViewSet, basename="phase4-input")

urlpatterns = [
    path("comparisons/<int:pk>/", views.ComparisonView.as_view(), name="comparison"),
    *router.urls,
]
