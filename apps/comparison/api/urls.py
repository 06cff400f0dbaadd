from django.urls import path
from rest_framework.routers import SimpleRouter

from apps.comparison.api import views

router = SimpleRouter()
router.register("waivers", views.MistakeWaiverViewSet, basename="waiver")

app_name = "comparison-api"

urlpatterns = [
    path("<int:pk>/", views.ComparisonView.as_view(), name="comparison"),
    *router.urls,
]
