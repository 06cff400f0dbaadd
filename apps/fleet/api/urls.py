from rest_framework.routers import SimpleRouter

from apps.fleet.api.views import AgentPoolViewSet, AgentViewSet

app_name = "fleet-api"

router = SimpleRouter()
router.register("pools", AgentPoolViewSet, basename="pool")
router.register("agents", AgentViewSet, basename="agent")

urlpatterns = router.urls
