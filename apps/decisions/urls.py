"""Decision-record pages under /decisions/records/ (the namespace `records`)."""

from django.urls import path

from apps.decisions import views
from apps.decisions.models import StageKind

app_name = "records"

urlpatterns = [
    path("", views.record_list, name="list"),
    path("new/", views.record_create, name="create"),
    path("waiting/", views.waiting_for_me, name="waiting"),
    path("notifications/", views.notification_list, name="notifications"),
    path("notifications/read/", views.notifications_mark_read, name="notifications-read"),
    path("notifications/preferences/", views.notification_preferences, name="notification-preferences"),
    path("<int:pk>/", views.record_detail, name="detail"),
    path("<int:pk>/edit/", views.record_edit, name="edit"),
    path("<int:pk>/propose/", views.record_propose, name="propose"),
    path("<int:pk>/withdraw/", views.record_withdraw, name="withdraw"),
    path("<int:pk>/supersede/", views.record_supersede, name="supersede"),
    # One URL per stage, so each role's sign-off is its own row of docs/permissions.md.
    path("<int:pk>/stages/platform/", views.record_review[StageKind.PLATFORM], name="review-platform"),
    path("<int:pk>/stages/finance/", views.record_review[StageKind.FINANCE], name="review-finance"),
    path("<int:pk>/stages/product/", views.record_review[StageKind.PRODUCT], name="review-product"),
    path("<int:pk>/print/", views.record_print, name="print"),
    path("<int:pk>/export.xlsx", views.record_export, {"kind": "xlsx"}, name="export-xlsx"),
    path("<int:pk>/export.csv", views.record_export, {"kind": "csv"}, name="export-csv"),
    path("<int:pk>/snapshot.json", views.record_snapshot, name="snapshot"),
]
