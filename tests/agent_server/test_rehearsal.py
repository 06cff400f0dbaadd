"""A rehearsal is never a measurement: the agent's real throughput job, on this CPU (a node with no GPU) against its
built-in mock serving stack, planned for an H100 candidate. The result is stored and shown, labelled "rehearsal — not
a GPU measurement" on the job, the candidate's figures and in the API, and the comparison still reports the capacity
as missing (or keeps the person's estimate): the rehearsal is neither measured GPU capacity nor benchmark evidence."""

from __future__ import annotations

import io

import openpyxl
import pytest
from django.urls import reverse

from apps.benchmarks import tasks
from apps.comparison.selectors import comparison_for
from apps.comparison.tests.builders import gpu_candidate, workload
from apps.evidence.services import candidate_figure_enter, candidate_figure_remove
from apps.fleet.services import agent_register, registration_token_create
from apps.fleet.tests.helpers import AGENT_VERSION, AgentApi, inventory
from tests.agent_server.test_throughput_ingest import run_and_finish, run_spec

pytestmark = pytest.mark.django_db

REHEARSAL = "rehearsal — not a GPU measurement"
SWEEP = {"key": "rate", "levels": [20, 60], "level_duration_s": 1.2}


@pytest.fixture
def cpu_api(pool):
    """An agent on this machine as it really is for these tests: no GPU (NVML absent), so every run rehearses."""
    _token, secret = registration_token_create(pool=pool)
    registration = agent_register(
        registration_token=secret, name="node-cpu", agent_version=AGENT_VERSION, protocol_version=1,
        machine_id="node-cpu", job_kinds=["throughput"], operations=[], inventory=inventory(gpus=0,
                                                                                            machine_id="node-cpu"),
    )
    return AgentApi(registration.agent_token)


def h100_candidate(team, actor, summary, *, estimate: str | None = None):
    """An H100 candidate with no benchmark evidence and no measured capacity: none at all, or a person's estimate."""
    candidate = gpu_candidate(team, actor, summary, label="H100 node", price="3.50", capacity="4",
                              gpu_name="NVIDIA H100")
    candidate_figure_remove(actor=actor, item=candidate.figures.get(metric="capacity_at_slo"))
    # No benchmark evidence at all: the builder's measured retry rate becomes a person's estimate.
    candidate_figure_enter(actor=actor, candidate=candidate, metric="retry_rate", value="0.01", source="estimated",
                           estimate_reason="vendor's SLA report")
    # One GPU per replica (a person's figure), so the rehearsal does compute a "capacity per GPU" to leave out.
    candidate_figure_enter(actor=actor, candidate=candidate, metric="gpus_per_replica", value="1",
                           source="quoted", reference="https://vendor.example.test/h100#replica")
    if estimate is not None:
        candidate_figure_enter(actor=actor, candidate=candidate, metric="capacity_at_slo", value=estimate,
                               capacity_unit="requests_per_second", source="estimated",
                               estimate_reason="vendor's H100 figure, derated")
    return candidate


def _rehearse(cpu_api, pool, candidate):
    stored, agent_result, _ctx = run_and_finish(cpu_api, pool, run_spec(sweep=SWEEP), candidate=candidate)
    assert "mock" in agent_result  # the agent really ran against its own mock stack
    assert tasks.ingest_result(stored.pk) is True
    stored.refresh_from_db()
    return stored


def test_a_cpu_rehearsal_for_an_h100_candidate_leaves_the_capacity_missing_and_shows_the_rehearsal(
        cpu_api, pool, team, platform_user, client):
    summary = workload(team)
    candidate = h100_candidate(team, platform_user, summary)
    stored = _rehearse(cpu_api, pool, candidate)

    assert stored.rehearsal is True and stored.rehearsal_reasons == ["mock_stack", "no_gpu"]
    phase4 = stored.summary["phase2"]["phase4"]
    assert phase4["rehearsal"] is True and "capacity_at_slo" in phase4["stored"]
    capacity = candidate.figures.get(metric="capacity_at_slo")
    assert capacity.measurement.rehearsal is True and capacity.measurement.result_id == stored.pk
    assert capacity.reference.startswith(f"job:{stored.job_id} ({REHEARSAL})")

    (result,) = comparison_for(platform_user, summary).results
    assert "capacity_at_slo" not in result.inputs
    assert result.measured("capacity_at_slo") is None and result.has_benchmark_evidence is False
    assert result.row is None and result.problem.field == "capacity_at_slo_per_gpu"  # missing, as before
    assert {item.metric for item in result.candidate.rehearsal_figures} >= {"capacity_at_slo"}

    client.force_login(platform_user)
    figures_page = client.get(reverse("evidence:candidate-figures", args=[candidate.pk])).content.decode()
    capacity_row = figures_page.split(f'<tr id="input-{capacity.pk}"')[1].split("</tr>")[0]
    assert REHEARSAL in capacity_row
    job_page = client.get(reverse("benchmarks:job-detail", args=[stored.job_id])).content.decode()
    assert job_page.count(REHEARSAL) >= 2  # the results table and the throughput panel
    api_result = client.get(reverse("benchmarks-api:result-detail", args=[stored.pk])).json()
    assert api_result["is_rehearsal"] is True
    links = client.get(reverse("benchmarks-api:figure-measurement-list"), {"candidate": candidate.pk}).json()
    capacity_link = next(row for row in links["results"] if row["figure"] == capacity.pk)
    assert capacity_link["is_rehearsal"] is True and capacity_link["counts_as_measured"] is False

    # The comparison shows it as a rehearsal on its page, in its API and its CSV, and never as a measured figure.
    page = client.get(reverse("comparison:comparison", args=[summary.pk])).content.decode()
    rehearsals = page.split('id="rehearsals"')[1].split("</section>")[0]
    assert REHEARSAL in rehearsals and "capacity_at_slo" in rehearsals and f"#{stored.job_id}" in rehearsals
    data = client.get(reverse("comparison-api:comparison", args=[summary.pk])).json()
    (entry,) = data["candidates"]
    assert {item["metric"] for item in entry["rehearsals"]} >= {"capacity_at_slo"}
    assert all(item["label"] == REHEARSAL for item in entry["rehearsals"])
    assert all(item["metric"] != "capacity_at_slo" for item in entry["inputs"])
    csv_text = client.get(reverse("comparison:comparison-csv", args=[summary.pk])).content.decode()
    assert f"{REHEARSAL}: capacity_at_slo" in csv_text
    workbook = openpyxl.load_workbook(io.BytesIO(
        client.get(reverse("comparison:comparison-xlsx", args=[summary.pk])).content))
    labels = {(row[1], row[5]) for row in workbook["Rehearsals"].iter_rows(min_row=2, values_only=True)}
    assert ("capacity_at_slo", REHEARSAL) in labels


def test_a_cpu_rehearsal_never_replaces_the_persons_estimate_which_the_comparison_keeps(
        cpu_api, pool, team, platform_user):
    summary = workload(team)
    candidate = h100_candidate(team, platform_user, summary, estimate="3")
    stored = _rehearse(cpu_api, pool, candidate)

    assert stored.rehearsal is True
    assert any("a rehearsal does not replace the estimated figure" in reason
               for reason in stored.summary["phase2"]["phase4"]["skipped"])
    (result,) = comparison_for(platform_user, summary).results
    capacity = result.inputs["capacity_at_slo"]
    assert (capacity.source, capacity.value) == ("estimated", 3)
    assert result.measured("capacity_at_slo") is None and result.has_benchmark_evidence is False
    assert result.row is not None
    assert result.candidate_input.provenance["capacity_at_slo_per_gpu"].kind == "estimated"
