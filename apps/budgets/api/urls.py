from rest_framework.routers import SimpleRouter

from apps.budgets.api import views

app_name = "budgets-api"

router = SimpleRouter()
router.register("cost-centres", views.CostCentreViewSet, basename="cost-centre")
router.register("budgets", views.BudgetViewSet, basename="budget")
router.register("policies", views.BudgetPolicyViewSet, basename="policy")

urlpatterns = router.urls
