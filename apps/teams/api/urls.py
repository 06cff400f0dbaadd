from django.urls import path

from apps.teams.api.views import MembershipViewSet, PersonCreateView, PoolCreateView, TeamViewSet

app_name = "teams-api"

urlpatterns = [
    path("", TeamViewSet.as_view({"get": "list", "post": "create"}), name="team-list"),
    path("<int:pk>/", TeamViewSet.as_view({"get": "retrieve"}), name="team-detail"),
    path("<int:team_pk>/memberships/", MembershipViewSet.as_view({"get": "list", "post": "create"}),
         name="membership-list"),
    path("<int:team_pk>/memberships/<int:pk>/",
         MembershipViewSet.as_view({"get": "retrieve", "patch": "partial_update", "delete": "destroy"}),
         name="membership-detail"),
    path("<int:team_pk>/people/", PersonCreateView.as_view(), name="person-create"),
    path("<int:team_pk>/pools/", PoolCreateView.as_view(), name="pool-create"),
]
