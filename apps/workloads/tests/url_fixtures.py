"""How the URL-access tests build the workload objects that URL parameters point at (see tests/url_registry.py)."""

from apps.workloads.tests.factories import WorkloadSummaryFactory, draft_summary
from tests.url_registry import team_object

URL_FIXTURES = {
    "workloads:detail": team_object(lambda team: WorkloadSummaryFactory(team=team)),
    "workloads:edit": team_object(lambda team: WorkloadSummaryFactory(team=team)),
    "workloads:validate-existing": team_object(lambda team: WorkloadSummaryFactory(team=team)),
    "workloads:mark-ready": team_object(lambda team: draft_summary(team)),
    "workloads-api:summary-detail": team_object(lambda team: WorkloadSummaryFactory(team=team)),
    "workloads-api:summary-ready": team_object(lambda team: draft_summary(team)),
    "workloads-api:summary-analysis": team_object(lambda team: WorkloadSummaryFactory(team=team)),
}
