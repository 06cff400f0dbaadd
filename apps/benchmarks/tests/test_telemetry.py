"""Telemetry summaries per GPU."""

from hypothesis import given
from hypothesis import strategies as st

from apps.benchmarks.telemetry import summarise_samples, telemetry_samples


def test_peaks_means_energy_reasons_and_xids_per_gpu():
    samples = [
        {"index": 0, "memory_used_mib": 1000, "power_w": 300.0, "energy_mj": 5_000, "utilization_gpu_pct": 50,
         "clock_event_reasons": ["sw_power_cap"], "xid_events": []},
        {"index": 0, "memory_used_mib": 3000, "power_w": 500.0, "energy_mj": 9_000, "utilization_gpu_pct": 100,
         "clock_event_reasons": ["hw_slowdown", "sw_power_cap"], "xid_events": [{"xid": 79, "ts": "…"}]},
        {"index": 1, "memory_used_mib": None, "power_w": None},
    ]
    summary = summarise_samples(samples)
    assert summary["0"]["samples"] == 2
    assert summary["0"]["peak_memory_used_mib"] == 3000 and summary["0"]["peak_power_w"] == 500.0
    assert summary["0"]["mean_power_w"] == 400.0 and summary["0"]["mean_utilization_gpu_pct"] == 75.0
    assert summary["0"]["energy_used_mj"] == 4000
    assert summary["0"]["clock_event_reasons"] == ["hw_slowdown", "sw_power_cap"]
    assert summary["0"]["xid_errors"] == [79]
    assert summary["1"] == {"samples": 1, "clock_event_reasons": [], "xid_errors": []}


def test_samples_are_read_out_of_telemetry_events():
    events = [{"gpus": [{"index": 0}, {"index": 1}]}, {"gpus": "broken"}, "not a dict", {"other": 1}]
    assert [sample["index"] for sample in telemetry_samples(events)] == [0, 1]


@given(st.lists(st.integers(min_value=0, max_value=200_000), min_size=1, max_size=50))
def test_the_peak_is_the_largest_reading(readings):
    summary = summarise_samples({"index": 0, "memory_used_mib": value} for value in readings)
    assert summary["0"]["peak_memory_used_mib"] == max(readings)
    assert summary["0"]["samples"] == len(readings)
