"""Decision-record API under /api/v1/decisions/records/ (the namespace `records-api`)."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from apps.decisions.api import views

app_name = "records-api"

router = SimpleRouter()
router.register("", views.RecordViewSet, basename="record")

urlpatterns = [
    path("<int:pk>/propose/", views.RecordProposeView.as_view(), name="record-propose"),
    path("<int:pk>/withdraw/", views.RecordWithdrawView.as_view(), name="record-withdraw"),
    path("<int:pk>/supersede/", views.RecordSupersedeView.as_view(), name="record-supersede"),
    path("<int:pk>/stages/<str:stage>/", views.RecordStageView.as_view(), name="record-stage"),
    path("<int:pk>/snapshot/", views.RecordSnapshotView.as_view(), name="record-snapshot"),
    path("<int:pk>/exports/<str:kind>/", views.RecordExportView.as_view(), name="record-export"),
    *router.urls,
]
