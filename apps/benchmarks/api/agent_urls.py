"""Job calls of the agent API, included by apps.fleet.api.agent_urls under /api/agent/v1/."""

from django.urls import path

from apps.benchmarks.api import agent_views

urlpatterns = [
    path("jobs/claim", agent_views.ClaimView.as_view(), name="job-claim"),
    path("jobs/offline", agent_views.OfflineJobView.as_view(), name="job-offline"),
    path("jobs/<str:job_id>/start", agent_views.StartView.as_view(), name="job-start"),
    path("jobs/<str:job_id>/lease", agent_views.LeaseView.as_view(), name="job-lease"),
    path("jobs/<str:job_id>/events", agent_views.EventsView.as_view(), name="job-events"),
    path("jobs/<str:job_id>/artifacts/<str:sha256>", agent_views.ArtifactView.as_view(), name="job-artifact"),
    path("jobs/<str:job_id>/finish", agent_views.FinishView.as_view(), name="job-finish"),
]
