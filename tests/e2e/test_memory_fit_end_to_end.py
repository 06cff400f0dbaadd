"""End to end, phase 1: a ready workload with a tiny shape → plan from the candidate page → a memory_fit job on a
real `dossier-agent` process on the CPU → the result ingested by a real Celery worker → results and chart on the
candidate page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from apps.benchmarks.models import Job, JobStatus, Result
from apps.catalog.models import GpuSpec
from apps.fleet.models import Agent
from apps.fleet.services import pool_create, registration_token_create
from tests.agent_server.memory_fit_support import tiny_candidate

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_plan_from_the_candidate_runs_memory_fit_on_a_real_agent_and_the_page_shows_it(e2e, team, client,
                                                                                     platform_user):
    pool = pool_create(team=team, name="e2e-phase1")
    _row, token = registration_token_create(pool=pool)
    candidate = tiny_candidate(team)
    e2e.start_worker()
    state_dir = e2e.register_agent(token)
    agent = Agent.objects.get(pool=pool)
    assert "memory_fit" in agent.job_kinds, "the agent runs memory_fit only where torch is installed"
    e2e.start_agent(state_dir)

    client.force_login(platform_user)
    response = client.post(reverse("benchmarks:memory-fit-plan", args=[candidate.pk]), {
        "tokens": 128, "concurrency": 2, "max_probes": 3, "probe_timeout_s": 25, "device": "cpu",
        "target_pool": pool.pk, "target_agent": agent.pk, "dispatch": "on",
    })
    assert response.status_code == 302

    job = e2e.wait_for(lambda: Job.objects.filter(target_pool=pool, kind="memory_fit").first(),
                       what="dispatch_plan to queue the memory_fit job")
    result = e2e.wait_for(lambda: Result.objects.filter(job=job, ingested_at__isnull=False).first(), timeout=75,
                          what="the memory_fit result to be finished and ingested")
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, result.error
    measured = result.result
    assert measured["labels"]["device_kind"] == "cpu" and measured["fits_at_target"] is True
    assert 1 <= measured["probe_count"] <= 3 and measured["largest_fitting"]["value"] >= 2
    weights = next(row for row in measured["comparison"] if row["component"] == "weights")
    assert weights["predicted_bytes"] == next(term["size_bytes"] for term in job.spec["predicted"]["terms"]
                                              if term["name"] == "weights")
    assert weights["measured_bytes"] > 0 and weights["error_pct"] is not None
    assert result.summary["memory_fit"]["catalog_usable_mib_recorded"] is False
    assert not GpuSpec.objects.filter(gpu=candidate.quote.gpu, key="usable_mib").exists()

    page = client.get(candidate.get_absolute_url()).content.decode()
    assert 'id="memory-fit-components"' in page and 'data-component="weights"' in page
    assert 'data-device-kind="cpu"' in page and f'id="memory-fit-largest">{measured["largest_fitting"]["value"]}<' \
        in page
    assert "vendor/plotly/plotly.min.js" in page and f'id="memory-fit-chart-candidate-{candidate.pk}-data"' in page
