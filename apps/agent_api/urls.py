"""The agent API (/api/agent/v1/): node calls, job calls, then a JSON 404 for the rest."""

from django.urls import path, re_path

from apps.agent_api import job_views, node_views

app_name = "agent_api"

urlpatterns = [
    path("register", node_views.RegisterView.as_view(), name="register"),
    path("heartbeat", node_views.HeartbeatView.as_view(), name="heartbeat"),
    path("jobs/claim", job_views.ClaimView.as_view(), name="job-claim"),
    path("jobs/offline", job_views.OfflineJobView.as_view(), name="job-offline"),
    path("jobs/<str:job_id>/start", job_views.StartView.as_view(), name="job-start"),
    path("jobs/<str:job_id>/lease", job_views.LeaseView.as_view(), name="job-lease"),
    path("jobs/<str:job_id>/events", job_views.EventsView.as_view(), name="job-events"),
    path("jobs/<str:job_id>/artifacts/<str:sha256>", job_views.ArtifactView.as_view(), name="job-artifact"),
    path("jobs/<str:job_id>/finish", job_views.FinishView.as_view(), name="job-finish"),
    re_path(r"^.*$", node_views.UnknownPathView.as_view(), name="unknown"),
]
