"""Request-length distributions (dossier_agent.contract.lengths): the workload's own mean and p95 always become a
distribution the agent can draw, and the load spec's check refuses, naming the field, what it could not."""

import math

import numpy as np
import pytest
from dossier_agent.contract import lengths
from dossier_agent.contract.load_spec import LoadSpec, SpecError
from dossier_agent.loadgen import prompts

BASE = {"endpoint": {"url": "http://10.0.0.7:8000", "api": "chat"}, "profile": {"kind": "constant", "rate": 1}}


def test_a_mean_and_p95_a_log_normal_can_have_stay_log_normal():
    """p95/mean = 1200/500 = 2.4 ≤ exp(1.645²/2) ≈ 3.87."""
    assert lengths.synthetic_lengths("input_tokens", 500, 1200) == {"input_tokens_mean": 500,
                                                                     "input_tokens_p95": 1200}


def test_the_workloads_own_shape_that_the_agent_refused_becomes_quantile_knots():
    """The issue's shape: mean 1500, p95 7680 (ratio 5.12 > 3.87) — refused by the log-normal before, now knots
    (0, 1), (0.5, m), (0.95, 7680), (1, 7680) with m solved so that the mean is 1500."""
    with pytest.raises(lengths.LengthError, match="too far above the mean"):
        lengths.lognormal_parameters(1500, 7680)
    fields = lengths.synthetic_lengths("input_tokens", 1500, 7680)
    knots = lengths.check_knots(fields["input_tokens_quantiles"])
    assert "input_tokens_p95" not in fields and fields["input_tokens_mean"] == 1500
    assert knots[2] == (0.95, 7680.0) and 1 < knots[1][1] < 7680
    assert math.isclose(lengths.knots_mean(knots), 1500, rel_tol=1e-3)
    assert lengths.length_at(knots, 0.95) == pytest.approx(7680)


def test_drawn_lengths_have_the_workloads_mean_and_p95():
    fields = lengths.synthetic_lengths("input_tokens", 1500, 7680)
    drawn = prompts.quantile_lengths(np.random.default_rng(7), fields["input_tokens_quantiles"], 200_000)
    assert drawn.mean() == pytest.approx(1500, rel=0.02)
    assert np.percentile(drawn, 95) == pytest.approx(7680, rel=0.01)


def test_a_mean_too_far_below_its_p95_for_any_distribution_is_refused():
    """With p95 8000 the knots' smallest mean is 0.5·1 + 0.45·7999/ln 8000 + 0.05·8000 ≈ 800.9."""
    with pytest.raises(lengths.LengthError, match="at least 801"):
        lengths.synthetic_lengths("input_tokens", 100, 8000)


def test_the_load_spec_check_names_the_field_the_agent_would_refuse():
    spec = {**BASE, "prompts": {"synthetic": {"input_tokens_mean": 1500, "input_tokens_p95": 7680}}}
    with pytest.raises(SpecError, match=r"prompts\.synthetic\.input_tokens_p95: p95 7680 is too far above"):
        LoadSpec.from_dict(spec)
    knots = lengths.synthetic_lengths("input_tokens", 1500, 7680)
    LoadSpec.from_dict({**BASE, "prompts": {"synthetic": knots}})


def test_bad_knots_are_refused_with_their_field():
    spec = {**BASE, "prompts": {"synthetic": {"input_tokens_mean": 10,
                                              "input_tokens_quantiles": [[0, 5], [0.5, 3], [1, 9]]}}}
    with pytest.raises(SpecError, match=r"prompts\.synthetic\.input_tokens_quantiles: lengths must not decrease"):
        LoadSpec.from_dict(spec)


def test_synthetic_prompts_draw_from_the_knots(tmp_path):
    fields = lengths.synthetic_lengths("input_tokens", 1500, 7680)
    counter = prompts.TokenCounter()
    items = prompts.synthetic_prompts({**fields, "output_tokens_mean": 64}, 50, counter, seed=3)
    assert max(item.input_tokens for item in items) <= 7680 and min(item.input_tokens for item in items) >= 1
