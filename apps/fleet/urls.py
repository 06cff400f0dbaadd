"""Browser pages of the fleet: pools, registration tokens, agents."""

from django.urls import path

from apps.fleet import views

app_name = "fleet"

urlpatterns = [
    path("", views.pool_list, name="pool-list"),
    path("pools/new/", views.pool_create_view, name="pool-create"),
    path("pools/<int:pk>/", views.pool_detail, name="pool-detail"),
    path("pools/<int:pk>/active/", views.pool_toggle, name="pool-toggle"),
    path("pools/<int:pk>/tokens/", views.token_create, name="token-create"),
    path("tokens/<int:pk>/revoke/", views.token_revoke, name="token-revoke"),
    path("agents/", views.agent_list, name="agent-list"),
    path("agents/<int:pk>/", views.agent_detail, name="agent-detail"),
    path("agents/<int:pk>/command/", views.agent_command, name="agent-command"),
    path("agents/<int:pk>/revoke/", views.agent_revoke_view, name="agent-revoke"),
    path("agents/<int:pk>/candidate/", views.agent_candidate, name="agent-candidate"),
]
