"""The throughput/capacity sweep plan form (apps/benchmarks/plan_forms.py): prefilled from the candidate and its
workload, the candidate required, the agent's own load-spec check at submit, the workload's own request shape
accepted; the JSON view edits the same plan; plans are copied as new drafts and edited before dispatch."""

import json

import pytest
from django.urls import reverse
from dossier_agent.contract.load_spec import LoadSpec

from apps.benchmarks.models import BenchmarkPlan, Job, PlanStatus, Result
from apps.benchmarks.plan_spec import THROUGHPUT_JOB_KEYS
from apps.benchmarks.services import plan_dispatch, plan_request_dispatch
from apps.benchmarks.templatetags.throughput_charts import throughput_results
from apps.benchmarks.tests.helpers import measuring_result
from apps.benchmarks.throughput import _gpus_under_test
from tests.agent_server.memory_fit_support import tiny_candidate

pytestmark = pytest.mark.django_db

#: The issue's request shape: the agent refused it after dispatch ("p95 7680 is too far above the mean 1500.0").
SHAPE = {"mean_input_tokens": 1500, "p95_input_tokens": 7680, "mean_output_tokens": 200, "p95_output_tokens": 400,
         "p95_ttft_ms": 800, "p95_e2e_ms": 12000, "arrival_rate_peak": 8}


@pytest.fixture
def candidate(team, agent):
    candidate = tiny_candidate(team, **SHAPE)
    agent.candidate = candidate
    agent.save(update_fields=["candidate"])
    return candidate


@pytest.fixture
def operator(client, platform_user):
    client.force_login(platform_user)
    return client


def _posted(candidate_, agent, **changes):
    data = {"candidate": candidate_.pk, "name": "sweep", "description": "", "target_pool": agent.pool_id,
            "target_agent": agent.pk, "endpoint_url": "http://10.0.0.7:8000", "api": "chat", "model": "m",
            "mean_input_tokens": 1500, "p95_input_tokens": 7680, "mean_output_tokens": 200, "p95_output_tokens": 400,
            "ttft_max_ms": 800, "tpot_max_ms": "", "e2e_max_ms": 12000, "slo_attainment": "0.95",
            "sweep_key": "rate", "search_start": 2, "search_max": 16, "search_factor": 2, "max_levels": 10,
            "level_duration_s": 60, "gpus_per_replica": 8}
    data.update(changes)
    return data


def test_the_form_is_prefilled_from_the_workload_and_the_candidates_node(operator, candidate, agent):
    form = operator.get(reverse("benchmarks:plan-sweep-create") + f"?candidate={candidate.pk}").context["form"]
    initial = form.initial
    assert (initial["mean_input_tokens"], initial["p95_input_tokens"]) == (1500, 7680)
    assert (initial["ttft_max_ms"], initial["e2e_max_ms"]) == (800, 12000)
    assert initial["target_rate"] == 8.0 and initial["search_start"] == 2.0 and initial["search_max"] == 16.0
    assert (initial["target_pool"], initial["target_agent"], initial["candidate"]) == (agent.pool_id, agent.pk,
                                                                                      candidate.pk)
    assert initial["gpus_per_replica"] == candidate.quote.gpus_per_node


def test_the_workloads_own_shape_makes_a_plan_the_agent_accepts(operator, candidate, agent):
    """mean 1500 / p95 7680 cannot be a log-normal (7680/1500 = 5.12 > 3.87): the plan carries quantile knots whose
    mean and p95 are the workload's, and the agent's own LoadSpec.from_dict accepts the spec."""
    response = operator.post(reverse("benchmarks:plan-sweep-create"), _posted(candidate, agent))
    assert response.status_code == 302, response.context["form"].errors
    plan = BenchmarkPlan.objects.get()
    assert plan.spec["candidate_id"] == candidate.pk and plan.spec["gpus_per_replica"] == 8
    (entry,) = plan.spec["jobs"]
    synthetic = entry["spec"]["prompts"]["synthetic"]
    assert "input_tokens_p95" not in synthetic and synthetic["input_tokens_quantiles"][2] == [0.95, 7680.0]
    assert synthetic["output_tokens_p95"] == 400  # 400/200 = 2: a log-normal
    assert entry["spec"]["slo"] == {"target": 0.95, "ttft_max_s": 0.8, "e2e_max_s": 12.0}
    assert entry["spec"]["sweep"]["search"]["start"] == 2.0 and entry["spec"]["sweep"]["key"] == "rate"
    LoadSpec.from_dict({k: v for k, v in entry["spec"].items() if k not in THROUGHPUT_JOB_KEYS})
    # The JSON view shows the very same plan.
    page = operator.get(reverse("benchmarks:plan-edit", args=[plan.pk]))
    assert json.loads(page.context["form"].initial["jobs"]) == plan.spec
    # Dispatched, its job measures the chosen candidate.
    plan_request_dispatch(plan=plan)
    plan_dispatch(plan_id=plan.pk)
    job = Job.objects.get()
    assert job.candidate_id == candidate.pk and job.spec == entry["spec"]


def test_the_candidate_is_required(operator, candidate, agent):
    response = operator.post(reverse("benchmarks:plan-sweep-create"), _posted(candidate, agent, candidate=""))
    assert response.status_code == 400 and "candidate" in response.context["form"].errors
    assert not BenchmarkPlan.objects.exists()


def test_a_shape_no_distribution_can_draw_is_refused_on_its_field(operator, candidate, agent):
    """mean 100 with p95 8000: the knots' smallest mean is ≈ 801, and a log-normal needs p95/mean ≤ 3.87."""
    response = operator.post(reverse("benchmarks:plan-sweep-create"),
                             _posted(candidate, agent, mean_input_tokens=100, p95_input_tokens=8000))
    assert response.status_code == 400
    assert "too far below the p95" in " ".join(response.context["form"].errors["p95_input_tokens"])


def test_a_spec_the_agent_refuses_is_refused_with_the_field_named(operator, candidate, agent):
    """Django's URL field accepts ftp:, the agent's LoadSpec.from_dict does not: its message lands on the endpoint."""
    response = operator.post(reverse("benchmarks:plan-sweep-create"),
                             _posted(candidate, agent, endpoint_url="ftp://10.0.0.7/x"))
    assert response.status_code == 400
    assert "The agent would refuse this spec: endpoint URL must be http(s)" in " ".join(
        response.context["form"].errors["endpoint_url"])


def test_the_json_view_refuses_the_spec_the_agent_refused_after_dispatch(operator, candidate, agent):
    spec = {"jobs": [{"kind": "throughput", "spec": {
        "endpoint": {"url": "http://10.0.0.7:8000"}, "profile": {"kind": "poisson", "rate": 1},
        "prompts": {"synthetic": {"input_tokens_mean": 1500, "input_tokens_p95": 7680}}}}]}
    response = operator.post(reverse("benchmarks:plan-create"), {"name": "raw", "target_pool": agent.pool_id,
                                                                 "jobs": json.dumps(spec)})
    assert response.status_code == 400
    message = " ".join(response.context["form"].errors["jobs"])
    assert "jobs[0].spec: prompts.synthetic.input_tokens_p95: p95 7680 is too far above the mean 1500" in message


def test_a_dispatched_plan_is_copied_as_a_draft_and_edited_before_dispatch(operator, candidate, agent):
    operator.post(reverse("benchmarks:plan-sweep-create"), _posted(candidate, agent))
    original = BenchmarkPlan.objects.get()
    plan_request_dispatch(plan=original)
    assert operator.get(reverse("benchmarks:plan-edit", args=[original.pk])).status_code == 409

    response = operator.post(reverse("benchmarks:plan-copy", args=[original.pk]))
    copy = BenchmarkPlan.objects.exclude(pk=original.pk).get()
    assert response["Location"] == reverse("benchmarks:plan-sweep-edit", args=[copy.pk])
    assert copy.status == PlanStatus.DRAFT and copy.spec == original.spec

    edit = operator.get(response["Location"]).context["form"]
    assert edit.initial["candidate"] == candidate.pk and edit.initial["level_duration_s"] == 60
    response = operator.post(response["Location"], _posted(candidate, agent, level_duration_s=120, name="again"))
    assert response.status_code == 302
    copy.refresh_from_db()
    assert copy.name == "again" and copy.spec["jobs"][0]["spec"]["duration_s"] == 120.0
    original.refresh_from_db()
    assert original.spec["jobs"][0]["spec"]["duration_s"] == 60.0


def test_the_capacity_divides_by_the_gpus_the_plan_states(operator, candidate, agent):
    """Before, the capacity was stored only with a "GPUs per replica" phase-4 input (or a start inventory)."""
    operator.post(reverse("benchmarks:plan-sweep-create"), _posted(candidate, agent, gpus_per_replica=4))
    plan = BenchmarkPlan.objects.get()
    plan_request_dispatch(plan=plan)
    plan_dispatch(plan_id=plan.pk)
    assert _gpus_under_test(Result(job=Job.objects.get()), candidate) == (4, "GPUs per replica (stated in the plan)")


def test_results_reach_the_candidate_without_a_candidate_id_in_the_plan(team):
    """A throughput job that measures the candidate (Job.candidate, set at dispatch from the plan or the agent's
    node) shows on the candidate page; before, only a plan whose JSON named `candidate_id` did."""
    candidate = tiny_candidate(team)
    result = measuring_result(candidate)
    Result.objects.filter(pk=result.pk).update(summary={"phase2": {"mode": "none", "problem": "no records"}},
                                               ingested_at=result.finished_at)
    views = throughput_results(candidate=candidate)["views"]
    assert [view["result"].pk for view in views] == [result.pk]
    assert views[0]["verdict"].outcome == "inconclusive"


def test_the_agents_built_in_mock_stack_is_a_choice_of_the_form(operator, candidate, agent):
    """No serving stack yet: the sweep rehearses against the agent's built-in mock (no URL to type), and the form
    says that is a rehearsal."""
    page = operator.get(reverse("benchmarks:plan-sweep-create") + f"?candidate={candidate.pk}").content.decode()
    assert "a rehearsal of the procedure, never a measurement of a GPU" in page
    refused = operator.post(reverse("benchmarks:plan-sweep-create"), _posted(candidate, agent, endpoint_url=""))
    assert refused.status_code == 400
    assert refused.context["form"].errors["endpoint_url"] == [
        "Give the endpoint's URL, or choose the agent's built-in mock stack."]
    response = operator.post(reverse("benchmarks:plan-sweep-create"),
                             _posted(candidate, agent, endpoint_kind="builtin_mock", endpoint_url=""))
    assert response.status_code == 302, response.context["form"].errors
    (entry,) = BenchmarkPlan.objects.get().spec["jobs"]
    assert entry["spec"]["endpoint"] == {"url": "builtin-mock", "api": "chat", "model": "m",
                                         "mock": {"ttft-ms": 50, "token-ms": 10}}
