"""The progress strip on the workload page (and the comparison and candidate pages): summary ready → quotes →
candidates → memory fit → throughput → resilience → comparison → record, each step's state given by the app that owns
it through apps/workloads/progress.py. A rehearsal never counts as a GPU measurement."""

import re

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.benchmarks.models import Job, Result
from apps.benchmarks.tests.helpers import measuring_result
from apps.comparison.tests.builders import make_quote
from apps.quotes import services as quote_services
from apps.quotes.tests.factories import GpuFactory, QuoteFactory, VendorFactory
from apps.workloads import progress
from apps.workloads.tests.factories import WorkloadSummaryFactory, ready_summary

pytestmark = pytest.mark.django_db

ORDER = ["summary", "quotes", "candidates", "memory_fit", "throughput", "resilience", "comparison", "record"]
STEP = re.compile(r'<li class="progress-step[^"]*" data-step="(\w+)" data-state="(\w+)"( aria-current="step")?>'
                  r'(.*?)</li>', re.S)


def strip_of(page: str) -> dict[str, dict]:
    """step key → {"state", "current", "text"} as the page shows them, in page order."""
    found = {}
    for key, state, current, body in STEP.findall(page):
        found[key] = {"state": state, "current": bool(current), "text": re.sub(r"\s+", " ", re.sub("<[^>]+>", " ",
                                                                                              body)).strip(),
                      "body": body}
    return found


def _candidate(team, actor, summary, label="H100 on demand"):
    quote = make_quote(team, actor, prices={"list_price": "3.00"}, title=f"{label} quote",
                       gpu=GpuFactory(name="NVIDIA H100"), gpus_per_node=1, commercial_model="on_demand",
                       price_unit="gpu_hour", currency="USD")
    return quote_services.candidate_create(actor=actor, team=team, quote=quote, workload_summary=summary, label=label)


def _memory_fit(candidate, *, rehearsal: bool) -> Result:
    """A canonical memory-fit result for the candidate whose probe at the target fitted (verdict: succeeded): on the
    candidate's GPU node, or on a CPU node (a rehearsal)."""
    result = measuring_result(candidate, rehearsal=rehearsal)
    Job.objects.filter(pk=result.job_id).update(
        kind="memory_fit", candidate=None, spec={"origin": {"candidate_id": candidate.pk}})
    result.result = {"target": {"concurrency": 4}, "largest_fitting": {"variable": "concurrency", "n": 4},
                     "probes": [{"n": 4, "outcome": "ok"}]}
    result.save(update_fields=["result"])
    return result


def _throughput(candidate, *, rehearsal: bool) -> Result:
    """A canonical throughput result on the candidate, ingested (verdict: succeeded)."""
    result = measuring_result(candidate, rehearsal=rehearsal)
    result.ingested_at = timezone.now()
    result.save(update_fields=["ingested_at"])
    return result


def test_every_app_registers_its_step_in_order():
    assert [provider.__module__ for provider in progress.registered().values()] == [
        "apps.workloads.progress", "apps.quotes.progress_steps", "apps.quotes.progress_steps",
        "apps.benchmarks.progress_steps", "apps.benchmarks.progress_steps", "apps.benchmarks.progress_steps",
        "apps.comparison.progress_steps", "apps.decisions.progress_steps"]


def test_a_fresh_workload_is_at_its_summary_and_everything_else_is_missing(client_for, platform_user, team):
    summary = WorkloadSummaryFactory(team=team)  # a draft with only a name and a type
    page = client_for(platform_user).get(summary.get_absolute_url()).content.decode()
    assert '<nav class="progress-strip"' in page and "<ol>" in page
    strip = strip_of(page)
    assert list(strip) == ORDER
    assert strip["summary"]["state"] == "in_progress" and strip["summary"]["current"]
    assert "fields are still empty" in strip["summary"]["text"]
    assert reverse("workloads:edit", args=[summary.pk]) in strip["summary"]["body"]
    assert [key for key, step in strip.items() if step["current"]] == ["summary"]  # one aria-current only
    assert {strip[key]["state"] for key in ORDER[1:]} == {"missing"}
    assert "No quote entered yet." in strip["quotes"]["text"]
    assert "No decision record for this version yet." not in page  # a draft needs its summary first


def test_quotes_but_no_candidate_points_at_making_one(client_for, platform_user, team):
    summary = ready_summary(team)
    quote = QuoteFactory(vendor=VendorFactory(team=team))
    quote_services.price_record(actor=platform_user, quote=quote, component="list_price", amount="3.50",
                                source_kind="price_page", source_reference="https://cloud.example.test/pricing",
                                observed_at=timezone.now())
    page = client_for(platform_user).get(summary.get_absolute_url()).content.decode()
    strip = strip_of(page)
    assert strip["summary"]["state"] == "done" and strip["quotes"]["state"] == "done"
    assert "1 priced quote." in strip["quotes"]["text"]
    assert strip["candidates"]["state"] == "missing" and strip["candidates"]["current"]
    assert f'{reverse("quotes:candidate-create")}?workload_summary={summary.pk}' in strip["candidates"]["body"]
    assert strip["memory_fit"]["text"] == "Memory fit missing No candidate to measure yet."


def test_a_candidate_measured_on_its_gpu_is_done_for_that_step(client_for, platform_user, team):
    summary = ready_summary(team)
    measured = _candidate(team, platform_user, summary, "A measured H100")
    other = _candidate(team, platform_user, summary, "B unmeasured H100")
    _memory_fit(measured, rehearsal=False)
    _throughput(measured, rehearsal=False)
    _throughput(other, rehearsal=False)
    page = client_for(platform_user).get(summary.get_absolute_url()).content.decode()
    strip = strip_of(page)
    assert strip["candidates"]["state"] == "done" and "2 candidates." in strip["candidates"]["text"]
    # memory fit: one of two measured → in progress, naming what is missing and linking to the one without
    assert strip["memory_fit"]["state"] == "in_progress" and strip["memory_fit"]["current"]
    assert "1 candidate has no memory-fit result." in strip["memory_fit"]["text"]
    assert other.get_absolute_url() in strip["memory_fit"]["body"]
    assert strip["throughput"]["state"] == "done"
    assert "2 candidates measured on their GPUs." in strip["throughput"]["text"]
    assert strip["resilience"]["state"] == "missing"
    assert "2 candidates have no resilience result." in strip["resilience"]["text"]
    assert reverse("comparison:comparison", args=[summary.pk]) in strip["comparison"]["body"]
    assert strip["record"]["state"] == "missing"


def test_a_rehearsal_alone_is_never_a_gpu_measurement(client_for, platform_user, team):
    summary = ready_summary(team)
    candidate = _candidate(team, platform_user, summary)
    _memory_fit(candidate, rehearsal=True)
    _throughput(candidate, rehearsal=True)
    assert Result.objects.filter(rehearsal=True).count() == 2
    strip = strip_of(client_for(platform_user).get(summary.get_absolute_url()).content.decode())
    for key, kind in (("memory_fit", "memory-fit"), ("throughput", "throughput")):
        assert strip[key]["state"] == "rehearsal_only", key
        assert " rehearsal only " in f" {strip[key]['text']} "  # the state as the page words it
        assert f"1 candidate has no {kind} result." in strip[key]["text"]
        assert "1 has a rehearsal only (a CPU or the mock stack), not a GPU measurement." in strip[key]["text"]
    assert strip["memory_fit"]["current"]
    # a GPU measurement of another workload's candidate changes nothing here
    _memory_fit(_candidate(team, platform_user, ready_summary(team), "elsewhere"), rehearsal=False)
    assert strip_of(client_for(platform_user).get(summary.get_absolute_url()).content.decode())[
        "memory_fit"]["state"] == "rehearsal_only"
    # once measured on its GPU, the step is done
    _memory_fit(candidate, rehearsal=False)
    assert strip_of(client_for(platform_user).get(summary.get_absolute_url()).content.decode())[
        "memory_fit"]["state"] == "done"


def test_the_comparison_and_candidate_pages_show_the_same_strip(client_for, platform_user, team):
    summary = ready_summary(team)
    candidate = _candidate(team, platform_user, summary)
    client = client_for(platform_user)
    for url in (reverse("comparison:comparison", args=[summary.pk]), candidate.get_absolute_url()):
        strip = strip_of(client.get(url).content.decode())
        assert list(strip) == ORDER, url
        assert strip["candidates"]["state"] == "done" and strip["memory_fit"]["current"], url

