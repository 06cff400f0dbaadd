"""The plan forms of the phase-3 jobs (apps/benchmarks/job_plan_forms.py): resilience/operations, GPU acceptance,
interconnect and checkpoint. Each is prefilled from a real candidate and its workload, makes a plan whose job spec the
agent's own parser accepts, refuses a value the agent would refuse on the field it concerns, reopens a draft in the
form, copies a dispatched plan back into the form, and is for the platform and admin roles only."""

import datetime
import types
from decimal import Decimal

import pytest
from django.urls import reverse
from dossier_agent.contract import job_specs
from dossier_agent.jobs import acceptance, allreduce, checkpoint

from apps.benchmarks.job_plan_forms import MAX_PREFILLED_RATE, PLAN_FORMS
from apps.benchmarks.models import BenchmarkPlan, PlanStatus
from apps.benchmarks.services import plan_request_dispatch
from apps.catalog.models import SPEC_UNITS, GpuSpec, SpecKey
from apps.fleet.tests.helpers import register_agent
from tests.agent_server.memory_fit_support import tiny_candidate

pytestmark = pytest.mark.django_db

SLUGS = ("operations", "acceptance", "interconnect", "checkpoint")
WORKLOAD = {"arrival_rate_peak": Decimal("8"), "mean_output_tokens": 24, "precision": "bf16",
            "checkpoint_interval_minutes": 30, "data_parallel_gpus": 16, "tensor_parallel": 4}
DATASHEET = {SpecKey.MEMORY_BANDWIDTH_TBPS: Decimal("4.8"), SpecKey.BF16_DENSE_TFLOPS: Decimal("989"),
             SpecKey.FP8_DENSE_TFLOPS: Decimal("1979")}


@pytest.fixture
def node_agent(pool):
    """An agent on the candidate's node that declares the operations a resilience test runs."""
    agent, _token = register_agent(pool, machine_id="machine-node", operations=["kill_worker", "restart", "start",
                                                                                "stop"],
                                   job_kinds=["operations", "acceptance", "allreduce", "checkpoint"])
    return agent


@pytest.fixture
def candidate(team, node_agent):
    candidate = tiny_candidate(team, **WORKLOAD)
    for key, value in DATASHEET.items():
        GpuSpec.objects.update_or_create(gpu=candidate.quote.gpu, key=key, defaults={
            "value": value, "unit": SPEC_UNITS[key], "source_url": f"https://vendor.test/datasheet#{key}",
            "as_of": datetime.date(2026, 11, 1)})
    node_agent.candidate = candidate
    node_agent.save(update_fields=["candidate"])
    return candidate


@pytest.fixture
def operator(client, platform_user):
    client.force_login(platform_user)
    return client


@pytest.fixture
def folders(tmp_path):
    """Two existing folders: the checkpoint job's targets (the agent checks they exist)."""
    made = [tmp_path / "nvme", tmp_path / "shared"]
    for folder in made:
        folder.mkdir()
    return made


def _create_url(slug, candidate=None):
    url = reverse(f"benchmarks:plan-{slug}-create")
    return f"{url}?candidate={candidate.pk}" if candidate is not None else url


def _as_post(form) -> dict:
    """What the browser sends back for the form as shown (initial values, checkboxes ticked or not)."""
    data = {}
    for name, field in form.fields.items():
        value = form.initial.get(name, field.initial)
        if value is None or value is False:
            continue
        data[name] = "on" if value is True else value
    return data


def _prefilled(client, slug, candidate, **changes) -> dict:
    form = client.get(_create_url(slug, candidate)).context["form"]
    data = _as_post(form)
    if slug == "checkpoint" and "targets" not in changes:
        raise AssertionError("give the checkpoint form existing folders as targets")
    data.update(changes)
    return data


def _changes_for(slug, folders) -> dict:
    return {"targets": "\n".join(f"{folder.name} {folder}" for folder in folders)} if slug == "checkpoint" else {}


def _make_plan(client, slug, candidate, folders, **changes):
    response = client.post(_create_url(slug), _prefilled(client, slug, candidate, **_changes_for(slug, folders),
                                                         **changes))
    assert response.status_code == 302, response.context["form"].errors
    return BenchmarkPlan.objects.order_by("-pk").first()


def _errors(response, field) -> str:
    assert response.status_code == 400
    return " ".join(response.context["form"].errors.get(field, []))


# --- resilience / operations ------------------------------------------------------------------------------------------


def test_the_operations_form_is_prefilled_from_the_workload_and_the_candidates_node(operator, candidate, node_agent):
    initial = operator.get(_create_url("operations", candidate)).context["form"].initial
    summary = candidate.workload_summary
    assert initial["rate_per_s"] == float(summary.arrival_rate_peak)
    assert initial["output_tokens"] == summary.mean_output_tokens
    assert (initial["candidate"], initial["target_pool"], initial["target_agent"]) == (
        candidate.pk, node_agent.pool_id, node_agent.pk)


def test_the_operations_load_is_prefilled_within_reason(operator, candidate):
    summary = candidate.workload_summary
    summary.arrival_rate_peak = Decimal(MAX_PREFILLED_RATE * 40)
    summary.save(update_fields=["arrival_rate_peak"])
    assert operator.get(_create_url("operations", candidate)).context["form"].initial["rate_per_s"] == \
        MAX_PREFILLED_RATE


def test_the_operations_plan_is_one_the_agent_parses(operator, candidate, node_agent, folders):
    plan = _make_plan(operator, "operations", candidate, folders, scenarios=["kill_worker", "stop"])
    assert plan.spec["candidate_id"] == candidate.pk and plan.target_agent_id == node_agent.pk
    (entry,) = plan.spec["jobs"]
    parsed = job_specs.parse_operations_spec(entry["spec"])
    assert [scenario["name"] for scenario in parsed["scenarios"]] == ["kill_worker", "stop"]
    assert parsed["load"]["rate_per_s"] == float(candidate.workload_summary.arrival_rate_peak)
    assert parsed["target"] == "declared"
    assert set(job_specs.required_operations(parsed, node_agent.operations)) <= set(node_agent.operations)


def test_the_form_says_a_mock_run_is_a_rehearsal(operator, candidate):
    page = operator.get(_create_url("operations", candidate)).content.decode()
    assert "built-in mock stack" in page and "rehearsal" in page


def test_an_operations_spec_with_nothing_to_do_is_refused_on_the_scenarios(operator, candidate, folders):
    data = _prefilled(operator, "operations", candidate, cold_start_repeats=0)
    data.pop("scenarios")
    response = operator.post(_create_url("operations"), data)
    assert "The agent would refuse this spec: nothing to do" in _errors(response, "scenarios")
    assert not BenchmarkPlan.objects.exists()


def test_an_agent_without_the_declared_operations_is_refused_on_the_agent(operator, candidate, agent):
    response = operator.post(_create_url("operations"), _prefilled(operator, "operations", candidate,
                                                                    target_agent=agent.pk))
    assert "did not declare the operations" in _errors(response, "target_agent")
    assert not BenchmarkPlan.objects.exists()


def test_the_mock_stack_needs_no_declared_operations(operator, candidate, agent, folders):
    plan = _make_plan(operator, "operations", candidate, folders, target="builtin_mock", target_agent=agent.pk)
    assert job_specs.parse_operations_spec(plan.spec["jobs"][0]["spec"])["target"] == "builtin_mock"


# --- GPU acceptance ---------------------------------------------------------------------------------------------------


def test_the_acceptance_plan_compares_with_the_catalog_datasheet_and_names_its_source(operator, candidate, folders):
    initial = operator.get(_create_url("acceptance", candidate)).context["form"].initial
    assert initial["precision"] == candidate.workload_summary.precision
    plan = _make_plan(operator, "acceptance", candidate, folders)
    spec = plan.spec["jobs"][0]["spec"]
    parsed = acceptance.parse_spec(spec, "cuda")
    assert parsed["precision"] == candidate.workload_summary.precision and parsed["dcgm"]["enabled"] is True
    gpu = candidate.quote.gpu
    bandwidth, bf16 = gpu.spec(SpecKey.MEMORY_BANDWIDTH_TBPS), gpu.spec(SpecKey.BF16_DENSE_TFLOPS)
    assert acceptance.datasheet_value(spec["datasheet"], "memory_bandwidth", None) == float(bandwidth.value) * 1e12
    assert acceptance.datasheet_value(spec["datasheet"], "matmul", "bf16") == float(bf16.value) * 1e12
    assert bandwidth.source in spec["datasheet"]["source"] and bf16.source in spec["datasheet"]["source"]
    assert spec["datasheet"]["gpu"] == gpu.display_name


def test_acceptance_gpus_are_device_indices(operator, candidate, folders):
    plan = _make_plan(operator, "acceptance", candidate, folders, gpus="0, 2", dcgm="")
    spec = plan.spec["jobs"][0]["spec"]
    assert acceptance.parse_spec(spec, "cuda")["gpus"] == [0, 2] and spec["dcgm"] == {"enabled": False}


@pytest.mark.parametrize(("field", "value", "message"), [
    ("precision", "fp4x", "The agent would refuse this spec: precision must be one of"),
    ("gpus", "the first two", "The agent would refuse this spec: gpus must be"),
])
def test_an_acceptance_value_the_agent_refuses_is_refused_on_its_field(operator, candidate, field, value, message):
    response = operator.post(_create_url("acceptance"), _prefilled(operator, "acceptance", candidate,
                                                                    **{field: value}))
    assert message in _errors(response, field)


# --- interconnect -----------------------------------------------------------------------------------------------------


def test_the_interconnect_plan_runs_one_rank_per_gpu_of_the_quote(operator, candidate, folders):
    initial = operator.get(_create_url("interconnect", candidate)).context["form"].initial
    assert initial["local_ranks"] == candidate.quote.gpus_per_node and initial["dtype"] == "bf16"
    plan = _make_plan(operator, "interconnect", candidate, folders)
    spec = plan.spec["jobs"][0]["spec"]
    allreduce.check_spec(spec)
    sizes = allreduce.message_sizes(spec, "cuda", allreduce.DTYPES[spec["dtype"]])
    assert sizes[0] == spec["sizes"]["min_bytes"] and sizes[-1] <= spec["sizes"]["max_bytes"]
    assert spec["backend"] == "auto" and spec["local_ranks"] == candidate.quote.gpus_per_node
    assert "group" not in plan.spec["jobs"][0]


@pytest.mark.parametrize(("field", "changes", "message"), [
    ("local_ranks", {"local_ranks": 1}, "an all-reduce needs at least 2 ranks"),
    ("min_bytes", {"min_bytes": 1}, "sizes needs whole numbers"),
])
def test_an_interconnect_value_the_agent_refuses_is_refused_on_its_field(operator, candidate, field, changes,
                                                                         message):
    response = operator.post(_create_url("interconnect"), _prefilled(operator, "interconnect", candidate, **changes))
    assert message in _errors(response, field)


# --- checkpoint -------------------------------------------------------------------------------------------------------


def test_the_checkpoint_plan_takes_the_training_workloads_interval_and_gpus(operator, candidate, folders, tmp_path):
    summary = candidate.workload_summary
    initial = operator.get(_create_url("checkpoint", candidate)).context["form"].initial
    assert initial["checkpoint_interval_minutes"] == summary.checkpoint_interval_minutes
    assert initial["gpus"] == summary.data_parallel_gpus * summary.tensor_parallel
    plan = _make_plan(operator, "checkpoint", candidate, folders)
    spec = plan.spec["jobs"][0]["spec"]
    parsed = checkpoint._parse_spec(spec, types.SimpleNamespace(workdir=tmp_path))  # checks the folders exist
    assert [target["path"] for target in parsed["targets"]] == [str(folder) for folder in folders]
    assert checkpoint.checkpoint_interval_s(parsed["workload"]) == summary.checkpoint_interval_minutes * 60
    assert parsed["workload"]["gpus"] == initial["gpus"]


def test_a_checkpoint_target_without_an_absolute_path_is_refused_on_the_targets(operator, candidate):
    response = operator.post(_create_url("checkpoint"), _prefilled(operator, "checkpoint", candidate,
                                                                    targets="nvme mnt/nvme"))
    assert "absolute path" in _errors(response, "targets")


# --- every form: drafts, copies, pages, roles -------------------------------------------------------------------------


@pytest.mark.parametrize("slug", SLUGS)
def test_a_draft_reopens_in_its_form_and_saves_back(operator, candidate, folders, slug):
    plan = _make_plan(operator, slug, candidate, folders)
    edit_url = reverse(f"benchmarks:plan-{slug}-edit", args=[plan.pk])
    form = operator.get(edit_url).context["form"]
    assert type(form).slug == slug
    assert form.initial["candidate"] == candidate.pk
    assert {name: form.initial[name] for name in plan.spec["form"]["inputs"]} == plan.spec["form"]["inputs"]
    spec_before = plan.spec
    response = operator.post(edit_url, {**_as_post(form), "name": "edited"})
    assert response.status_code == 302, response.context["form"].errors
    plan.refresh_from_db()
    assert plan.name == "edited" and plan.spec == spec_before


@pytest.mark.parametrize("slug", SLUGS)
def test_a_dispatched_plan_is_copied_back_into_its_form(operator, candidate, folders, slug):
    original = _make_plan(operator, slug, candidate, folders)
    plan_request_dispatch(plan=original)
    assert operator.get(reverse(f"benchmarks:plan-{slug}-edit", args=[original.pk])).status_code == 409
    response = operator.post(reverse("benchmarks:plan-copy", args=[original.pk]))
    copy = BenchmarkPlan.objects.exclude(pk=original.pk).get()
    assert copy.status == PlanStatus.DRAFT
    assert response["Location"] == reverse(f"benchmarks:plan-{slug}-edit", args=[copy.pk])
    assert operator.get(response["Location"]).context["form"].initial["candidate"] == candidate.pk


@pytest.mark.parametrize("slug", SLUGS)
def test_the_plan_page_says_which_form_made_it(operator, candidate, folders, slug):
    plan = _make_plan(operator, slug, candidate, folders)
    page = operator.get(plan.get_absolute_url()).content.decode()
    form = next(form for form in PLAN_FORMS.values() if form.slug == slug)
    assert str(form.title) in page
    assert reverse(f"benchmarks:plan-{slug}-edit", args=[plan.pk]) in page
    assert reverse("benchmarks:plan-edit", args=[plan.pk]) in page


def test_an_edit_url_of_another_form_leads_to_the_form_that_made_the_plan(operator, candidate, folders):
    plan = _make_plan(operator, "acceptance", candidate, folders)
    response = operator.get(reverse("benchmarks:plan-checkpoint-edit", args=[plan.pk]))
    assert response["Location"] == reverse("benchmarks:plan-acceptance-edit", args=[plan.pk])


def test_the_candidate_page_links_every_plan_form(operator, candidate):
    page = operator.get(candidate.get_absolute_url()).content.decode()
    for form in PLAN_FORMS.values():
        assert f"{_create_url(form.slug, candidate)}" in page


@pytest.mark.parametrize("slug", SLUGS)
def test_only_the_platform_and_admin_roles_plan(client, finance_user, candidate, slug):
    client.force_login(finance_user)
    assert client.get(_create_url(slug, candidate)).status_code == 403
    assert client.post(_create_url(slug), {"candidate": candidate.pk, "name": "x"}).status_code == 403
    assert not BenchmarkPlan.objects.exists()
