from rest_framework.routers import SimpleRouter

from apps.benchmarks.api.views import (
    ArtifactViewSet,
    BenchmarkPlanViewSet,
    FigureMeasurementViewSet,
    JobViewSet,
    ResultViewSet,
)

app_name = "benchmarks-api"

router = SimpleRouter()
router.register("plans", BenchmarkPlanViewSet, basename="plan")
router.register("jobs", JobViewSet, basename="job")
router.register("artifacts", ArtifactViewSet, basename="artifact")
router.register("results", ResultViewSet, basename="result")
router.register("figure-measurements", FigureMeasurementViewSet, basename="figure-measurement")

urlpatterns = router.urls
