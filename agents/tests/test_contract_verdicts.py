"""The verdict math of the contract: an acceptance check's ratio and verdict at its edges, and the all-reduce bus
bandwidth as nccl-tests defines it. No torch, no NVML: the server imports the same functions."""

import math

import pytest
from dossier_agent.contract import verdicts


def test_ratio_is_measured_over_datasheet_and_none_without_a_usable_reference():
    assert verdicts.ratio(3.6e12, 4.8e12) == pytest.approx(0.75)
    assert verdicts.ratio(None, 4.8e12) is None
    assert verdicts.ratio(3.6e12, None) is None
    assert verdicts.ratio(3.6e12, 0.0) is None
    assert verdicts.ratio(math.nan, 4.8e12) is None


def test_a_ratio_exactly_at_the_threshold_passes():
    assert verdicts.check_verdict("cuda", 4.0, 5.0, 0.8) == ("pass", pytest.approx(0.8))
    assert verdicts.check_verdict("cuda", 3.99, 5.0, 0.8)[0] == "below_threshold"


def test_bus_bandwidth_is_the_nccl_tests_definition():
    algbw, busbw = verdicts.bus_bandwidth(2**30, 0.01, 8)
    assert algbw == pytest.approx(2**30 / 0.01)
    assert busbw == pytest.approx(algbw * 2 * 7 / 8)
    assert verdicts.bus_bandwidth(1000, 1e-3, 2) == (pytest.approx(1e6), pytest.approx(1e6))
    assert verdicts.bus_bandwidth(1000, 1e-3, 1)[1] == 0
    with pytest.raises(ValueError):
        verdicts.bus_bandwidth(1000, 0, 2)
