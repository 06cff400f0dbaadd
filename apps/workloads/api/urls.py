from django.urls import path
from rest_framework.routers import SimpleRouter

from apps.workloads.api.views import EstimateView, SummaryAnalysisView, SummaryMarkReadyView, WorkloadSummaryViewSet

app_name = "workloads-api"

router = SimpleRouter()
router.register("summaries", WorkloadSummaryViewSet, basename="summary")

urlpatterns = [
    path("estimate/", EstimateView.as_view(), name="estimate"),
    path("summaries/<int:pk>/ready/", SummaryMarkReadyView.as_view(), name="summary-ready"),
    path("summaries/<int:pk>/analysis/", SummaryAnalysisView.as_view(), name="summary-analysis"),
    *router.urls,
]
