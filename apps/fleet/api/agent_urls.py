"""The agent API (/api/agent/v1/): fleet calls here, job calls from apps.benchmarks, then a JSON 404 for the rest."""

from django.urls import include, path, re_path

from apps.fleet.api import agent_views

app_name = "agent_api"

urlpatterns = [
    path("register", agent_views.RegisterView.as_view(), name="register"),
    path("heartbeat", agent_views.HeartbeatView.as_view(), name="heartbeat"),
    path("", include("apps.benchmarks.api.agent_urls")),
    re_path(r"^.*$", agent_views.UnknownPathView.as_view(), name="unknown"),
]
