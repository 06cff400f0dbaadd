from rest_framework.routers import SimpleRouter

from apps.catalog.api.views import GpuModelViewSet

app_name = "catalog-api"

router = SimpleRouter()
router.register("gpus", GpuModelViewSet, basename="gpu")

urlpatterns = router.urls
