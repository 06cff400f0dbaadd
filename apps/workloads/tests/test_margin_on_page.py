"""The workload page and the comparison use the team's calibrated safety margin for each GPU (issue 16, item 6):
the estimate on that GPU, its layout and the margin's source beside it."""

import pytest
from django.db.models import Q

from apps.catalog.models import GpuModel
from apps.workloads import services
from apps.workloads.memory.calibration import TotalResidual, calibrate
from apps.workloads.tests.factories import ready_summary

pytestmark = pytest.mark.django_db

CHATBOT_200 = {"concurrent_sessions_peak": 200, "p95_input_tokens": 7000, "p95_output_tokens": 1192}


def _calibrate_h200(team, pairs):
    totals = [TotalResidual(index, predicted, measured) for index, (predicted, measured) in enumerate(pairs, 1)]
    return services.calibrated_margin_record(actor="test", team=team, gpu_architecture="h200",
                                             model_family="dense/bf16", calibration=calibrate(totals))


def test_a_calibrated_margin_changes_the_layout_and_is_named(client_for, finance_user, team, loaded_catalog):
    """Default 10 %: the H200 SXM (143,771 MiB) holds 200 sessions of Llama 3 8B at 8,192 tokens in 2 replicas of
    100 (≈ 16.1 GB weights + 100 × 1.07 GB KV + runtime ≈ 126 GB × 1.1 ≈ 139 GB ≤ 150.8 GB). Three phase-1 runs that
    measured 60 % above the prediction cap the margin at 50 %: 126 GB × 1.5 ≈ 189 GB no longer fits, so the page
    answers 3 replicas of 67 sessions (≈ 91 GB × 1.5 ≈ 137 GB), and names the calibration."""
    summary = ready_summary(team, **CHATBOT_200)
    client = client_for(finance_user)
    before = client.get(summary.get_absolute_url()).content.decode()
    assert "2 replicas × 1 GPU (TP 1, PP 1), 100 sessions each — 2 GPUs" in before
    assert "default 10 %" in before

    _calibrate_h200(team, [(1000, 1600), (1000, 1000), (1000, 1000)])
    after = client.get(summary.get_absolute_url()).content.decode()
    assert "3 replicas × 1 GPU (TP 1, PP 1), 67 sessions each — 3 GPUs" in after
    assert "calibrated from 3 phase-1 runs on h200, dense/bf16" in after and "capped at 50 %" in after
    h200 = GpuModel.objects.get(Q(name__endswith="H200") & Q(variant="SXM"))
    assert h200.display_name in after
