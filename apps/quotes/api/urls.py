from django.urls import path
from rest_framework.routers import SimpleRouter

from apps.quotes.api import views

app_name = "quotes-api"

router = SimpleRouter()
router.register("vendors", views.VendorViewSet, basename="vendor")
router.register("quotes", views.QuoteViewSet, basename="quote")
router.register("price-versions", views.PriceVersionViewSet, basename="price-version")
router.register("cost-lines", views.CostLineViewSet, basename="cost-line")
router.register("documents", views.DocumentViewSet, basename="document")
router.register("checklist-questions", views.ChecklistQuestionViewSet, basename="checklist-question")
router.register("checklist-answers", views.ChecklistAnswerViewSet, basename="checklist-answer")
router.register("commitment-tiers", views.CommitmentTierViewSet, basename="commitment-tier")
router.register("exchange-rates", views.ExchangeRateViewSet, basename="exchange-rate")
router.register("stale-prices", views.StalePriceViewSet, basename="stale-price")
router.register("candidates", views.CandidateViewSet, basename="candidate")

urlpatterns = [
    path("comparison/", views.ComparisonView.as_view(), name="comparison"),
    path("import/", views.ImportView.as_view(), name="import"),
    *router.urls,
]
