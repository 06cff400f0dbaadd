"""The calibrated safety margin: phase-1 results on a GPU become the margin of later estimates for that GPU architecture
and model family once 3 of them count (apps/workloads/memory/calibration.py), with the source in the spec and on the
residuals page. Rehearsals never count; recomputing changes nothing."""

from decimal import Decimal

import pytest
from django.contrib.contenttypes.models import ContentType
from django.urls import reverse
from django.utils import timezone

from apps.audit.models import ObjectChange
from apps.benchmarks import memory_fit
from apps.benchmarks.measurements import result_rehearsal_reasons
from apps.benchmarks.models import AttemptStatus, Job, JobAttempt, JobGroup, JobStatus, Result, ResultStatus
from apps.benchmarks.services import _group_rerun, result_ingest
from apps.benchmarks.tests.test_memory_fit_results import _finish, _probes
from apps.fleet.models import InventorySnapshot
from apps.fleet.tests.helpers import inventory, register_agent
from apps.workloads.memory.breakdown import DEFAULT_SAFETY_MARGIN_FRACTION
from apps.workloads.models import CalibratedMargin
from tests.agent_server.memory_fit_support import MIB, tiny_candidate

pytestmark = pytest.mark.django_db
SETTINGS = memory_fit.FitSettings(tokens=128, concurrency=2, max_probes=3)


def _result(candidate, agent, predicted_mib, measured_mib, *, device="cuda", group=None):
    """A succeeded, canonical memory-fit result of the candidate (its derived spec: h200, dense/bf16) whose comparison
    has the total without the margin at `predicted_mib` vs `measured_mib`, ingested by the real ingest. A "cpu" device
    runs on a node without a GPU: a rehearsal by the project's own rule."""
    spec = memory_fit.candidate_spec(candidate, SETTINGS)
    spec["device"] = device
    now = timezone.now()
    job = Job.objects.create(team=candidate.team, kind="memory_fit", spec=spec, spec_sha256="0" * 64,
                             target_pool=agent.pool, status=JobStatus.SUCCEEDED, attempt_count=1, finished_at=now,
                             group=group, group_rank=0 if group is not None else None)
    data = inventory(gpus=0 if device == "cpu" else 1, machine_id=agent.machine_id)
    snapshot = InventorySnapshot.objects.create(agent=agent, source="register", sha256=f"{job.pk:064d}", data=data,
                                                gpu_count=len(data["gpus"]))
    attempt = JobAttempt.objects.create(job=job, number=1, agent=agent, token_hash=f"t{job.pk}",
                                        status=AttemptStatus.SUCCEEDED, lease_expires_at=now, ended_at=now,
                                        start_inventory=snapshot)
    predicted, measured = predicted_mib * MIB, measured_mib * MIB
    payload = {"kind": "memory_fit", "fits_at_target": True,
               "labels": {"device_kind": device, "architecture": "dense", "precision": "bf16"},
               "comparison": [{"component": "total_without_margin", "predicted_bytes": predicted,
                               "measured_bytes": measured,
                               "error_pct": round(100 * (measured - predicted) / predicted, 2)}]}
    reasons = result_rehearsal_reasons(spec=spec, result_data=payload, attempt=attempt)
    result = Result.objects.create(job=job, attempt=attempt, status=ResultStatus.SUCCEEDED, canonical=True,
                                   result=payload, finished_at=now, spec=spec, spec_sha256=job.spec_sha256,
                                   rehearsal=bool(reasons), rehearsal_reasons=reasons)
    assert result_ingest(result_id=result.pk)
    result.refresh_from_db()
    return result


@pytest.fixture
def candidate(team):
    return tiny_candidate(team)


def _row(team):
    return CalibratedMargin.objects.get(team=team, gpu_architecture="h200", model_family="dense/bf16")


def test_below_three_results_the_default_margin_stands_and_says_how_many_are_missing(team, agent, candidate):
    """Two GPU results: the row counts them, but the margin stays the default 10 % and the spec says 2 of 3."""
    _result(candidate, agent, 1000, 1200)
    result = _result(candidate, agent, 1000, 1031)
    row = _row(team)
    assert (row.runs, row.margin_fraction, row.largest_underestimate) == (2, None, Decimal("0.2000"))
    assert result.summary["margin_calibration"] == {"gpu_architecture": "h200", "model_family": "dense/bf16",
                                                    "runs": 2, "margin_fraction": None}
    spec = memory_fit.candidate_spec(candidate, SETTINGS)
    assert spec["safety_margin"]["fraction"] == DEFAULT_SAFETY_MARGIN_FRACTION
    assert not spec["safety_margin"]["calibrated"]
    assert spec["safety_margin"]["source"] == "default 10 % (2 of 3 phase-1 runs needed on h200, dense/bf16)"


def test_three_results_set_the_margin_to_the_largest_underestimate_plus_the_cushion(team, agent, candidate):
    """Totals 1000 → 1031 MiB (+3.1 %), 1000 → 990 (−1 %), 2000 → 2040 (+2 %): largest underestimate 0.031,
    margin = 0.031 + 0.02 = 0.051. A later estimate for that GPU predicts with it: the safety-margin term is
    5.1 % of the subtotal, and the spec names the source."""
    ids = [_result(candidate, agent, predicted, measured).pk
           for predicted, measured in ((1000, 1031), (1000, 990), (2000, 2040))]
    row = _row(team)
    assert (row.runs, row.largest_underestimate, row.margin_fraction, row.capped) == (
        3, Decimal("0.0310"), Decimal("0.0510"), False)
    assert row.source == "benchmark results " + ", ".join(f"#{pk}" for pk in ids)

    later = tiny_candidate(team)  # another candidate on the same GPU model and family
    spec = memory_fit.candidate_spec(later, SETTINGS)
    assert spec["safety_margin"] == {
        "fraction": 0.051, "calibrated": True, "runs": 3,
        "source": "calibrated from 3 phase-1 runs on h200, dense/bf16: largest underestimate 3.1 % + 2 % cushion",
    }
    terms = {term["name"]: term for term in spec["predicted"]["terms"]}
    subtotal = terms["safety_margin"]["inputs"]["subtotal"]
    assert terms["safety_margin"]["inputs"]["margin"] == 0.051
    assert terms["safety_margin"]["size_bytes"] == -(-subtotal * 51 // 1000)  # ⌈0.051 · subtotal⌉


def test_rehearsals_never_count(team, agent, candidate):
    """Two GPU results and one CPU rehearsal with a 40 % underestimate: 2 results count, the default stands, and the
    rehearsal's 40 % is nowhere in the row."""
    _result(candidate, agent, 1000, 1031)
    _result(candidate, agent, 1000, 1010)
    rehearsal = _result(candidate, agent, 1000, 1400, device="cpu")
    assert rehearsal.rehearsal
    row = _row(team)
    assert (row.runs, row.largest_underestimate, row.margin_fraction) == (2, Decimal("0.0310"), None)
    assert f"#{rehearsal.pk}" not in row.source


def test_the_agents_own_results_count_on_a_gpu_node_and_not_on_a_cpu(team, pool, agent, candidate):
    """Through the whole road (plan, claim, the agent's build_result, finish, ingest): the GPU run counts, the CPU run
    (a rehearsal) does not."""
    _finish(candidate, pool, agent, "cuda", _probes(nvml_total=143771 * MIB))
    _finish(candidate, pool, agent, "cpu", _probes())
    assert _row(team).runs == 1


def test_recomputing_is_idempotent_and_audited_once(team, agent, candidate):
    """Recomputing the same results writes nothing: one audit entry for the create, none for the repeats."""
    for predicted, measured in ((1000, 1031), (1000, 990), (2000, 2040)):
        _result(candidate, agent, predicted, measured)
    row = _row(team)
    entries = ObjectChange.objects.filter(content_type=ContentType.objects.get_for_model(CalibratedMargin),
                                          object_id=str(row.pk))
    count, updated_at = entries.count(), row.updated_at
    first = memory_fit.recalibrate_margins(team=team, actor="test")
    second = memory_fit.recalibrate_margins(team=team, actor="test")
    assert first[("h200", "dense/bf16")].pk == second[("h200", "dense/bf16")].pk == row.pk
    assert entries.count() == count and CalibratedMargin.objects.filter(team=team).count() == 1
    row.refresh_from_db()
    assert row.updated_at == updated_at and row.margin_fraction == Decimal("0.0510")


def test_another_teams_results_never_calibrate_this_team(team, other_team, agent, candidate):
    other_agent, _token = register_agent(_pool_of(other_team), machine_id="machine-other")
    other_candidate = tiny_candidate(other_team)
    for measured in (1300, 1300, 1300):
        _result(other_candidate, other_agent, 1000, measured)
    assert not CalibratedMargin.objects.filter(team=team).exists()
    assert memory_fit.candidate_spec(candidate, SETTINGS)["safety_margin"]["calibrated"] is False


def _pool_of(team):
    from apps.fleet.services import pool_create

    return pool_create(team=team, name=f"pool-{team.slug}")


def test_results_that_stop_being_canonical_leave_the_margin(team, agent, candidate):
    """Three results calibrate (5.1 %); the job group of one re-runs, so its result is no longer canonical: 2 results
    count and the default stands again."""
    group = JobGroup.objects.create(team=team, kind="memory_fit", world_size=1, master_port=29500)
    _result(candidate, agent, 1000, 1031, group=group)
    _result(candidate, agent, 1000, 990)
    _result(candidate, agent, 2000, 2040)
    assert _row(team).margin_fraction == Decimal("0.0510")
    assert _group_rerun(group_id=group.pk, reason="rank 0 lost", now=timezone.now())
    row = _row(team)
    assert (row.runs, row.margin_fraction, row.largest_underestimate) == (2, None, Decimal("0.0200"))


def test_the_residuals_page_shows_the_margin_in_use_and_its_rule_state(team, agent, candidate, client,
                                                                      platform_user, outsider):
    for predicted, measured in ((1000, 1031), (1000, 990), (2000, 2040)):
        _result(candidate, agent, predicted, measured)
    CalibratedMargin.objects.create(team=team, gpu_architecture="h100", model_family="moe/fp8", runs=1,
                                    largest_underestimate=Decimal("0.0400"), source="benchmark results #999")
    client.force_login(platform_user)
    page = client.get(reverse("benchmarks:memory-fit-residuals")).content.decode()
    assert 'id="margin-in-use-rule"' in page
    calibrated = page.split('data-calibration="h200/dense/bf16"', 1)[1].split("</tr>", 1)[0]
    assert 'class="margin-in-use">5.1<' in calibrated and 'data-state="calibrated"' in calibrated
    assert "largest underestimate 3.1 % + 2 % cushion" in calibrated
    default = page.split('data-calibration="h100/moe/fp8"', 1)[1].split("</tr>", 1)[0]
    assert 'class="margin-in-use">10<' in default and 'data-state="default"' in default
    assert "2 more results needed" in default

    client.force_login(outsider)
    page = client.get(reverse("benchmarks:memory-fit-residuals")).content.decode()
    assert "data-calibration=" not in page and 'id="memory-fit-margins-in-use-none"' in page


def test_the_plan_page_shows_the_margin_source(team, agent, candidate, client, platform_user):
    client.force_login(platform_user)
    page = client.get(reverse("benchmarks:memory-fit-plan", args=[candidate.pk])).content.decode()
    assert 'id="memory-fit-safety-margin"' in page and "0 of 3 phase-1 runs needed on h200, dense/bf16" in page
