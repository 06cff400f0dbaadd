from rest_framework.routers import SimpleRouter

from apps.evidence.api import views

app_name = "evidence-api"

router = SimpleRouter()
router.register("figures", views.CandidateFigureViewSet, basename="figure")

urlpatterns = router.urls
