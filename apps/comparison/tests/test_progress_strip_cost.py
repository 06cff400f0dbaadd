"""The workload page's progress strip asks the comparison only for its rows and the six-mistakes check: its queries do
not grow with the number of candidates, and it builds neither the sensitivity nor the break-even."""

from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.catalog.models import GpuModel
from apps.comparison import selectors
from apps.quotes import services
from apps.quotes.tests.test_workload_page_lowest_hourly import catalog, priced_candidate  # noqa: F401
from apps.workloads.tests.factories import ready_summary


def _page_queries(client, summary) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(summary.get_absolute_url())
    assert response.status_code == 200
    assert 'id="progress-strip"' in response.content.decode()
    return len(captured)


def test_the_strip_queries_do_not_grow_with_the_candidates_and_skip_the_details(
    catalog, client_for, team, platform_user, monkeypatch  # noqa: F811
):
    vendor = services.vendor_create(actor=platform_user, team=team, name="Acme GPU Cloud", website="https://acme.test")
    summary = ready_summary(team)
    gpu = GpuModel.objects.get(name="NVIDIA H200", variant="SXM")
    client = client_for(platform_user)
    for hourly in ("3.10", "3.20"):
        priced_candidate(team=team, vendor=vendor, user=platform_user, summary=summary, gpu=gpu, gpus_per_node=8,
                         hourly=hourly)
    two = _page_queries(client, summary)
    for hourly in ("3.30", "3.40", "3.50"):
        priced_candidate(team=team, vendor=vendor, user=platform_user, summary=summary, gpu=gpu, gpus_per_node=8,
                         hourly=hourly)
    five = _page_queries(client, summary)
    assert five <= two

    def refuse(*args, **kwargs):
        raise AssertionError("the progress strip built a comparison detail")

    monkeypatch.setattr(selectors.cost_model, "sensitivity", refuse)
    monkeypatch.setattr(selectors, "break_even", refuse)
    monkeypatch.setattr(selectors, "hybrid_option_for", refuse)
    assert client.get(summary.get_absolute_url()).status_code == 200
