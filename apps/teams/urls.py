"""Team administration pages (docs/permissions.md, "Team administration")."""

from django.urls import path

from apps.teams import views

app_name = "teams"

urlpatterns = [
    path("", views.start, name="start"),
    path("<int:pk>/", views.team_detail, name="detail"),
    path("<int:pk>/people/new/", views.person_create, name="person-create"),
    path("<int:pk>/people/add/", views.member_add, name="member-add"),
    path("<int:pk>/pools/new/", views.pool_create, name="pool-create"),
    path("memberships/<int:pk>/roles/", views.membership_roles, name="membership-roles"),
    path("memberships/<int:pk>/remove/", views.membership_remove, name="membership-remove"),
]
