from django.urls import path

from apps.workloads import views

app_name = "workloads"

urlpatterns = [
    path("", views.summary_list, name="list"),
    path("new/", views.summary_create, name="create"),
    path("validate/", views.summary_validate, name="validate"),
    path("<int:pk>/", views.summary_detail, name="detail"),
    path("<int:pk>/edit/", views.summary_edit, name="edit"),
    path("<int:pk>/validate/", views.summary_validate, name="validate-existing"),
    path("<int:pk>/ready/", views.summary_mark_ready_view, name="mark-ready"),
]
