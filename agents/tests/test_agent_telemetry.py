"""The telemetry sampler through the real NVML code path (fake pynvml), and without any GPU."""

import threading
import time

import fake_pynvml
from dossier_agent.telemetry import TelemetrySampler, decode_clock_event_reasons
from fake_pynvml import FakeGpu


def _collect(interval_s=0.02):
    samples, arrived = [], threading.Event()

    def emit(data):
        samples.append(data)
        if len(samples) >= 3:
            arrived.set()

    return samples, arrived, emit


def test_samples_every_gpu_with_every_field(monkeypatch):
    state = fake_pynvml.install(monkeypatch, [FakeGpu(uuid="GPU-0"), FakeGpu(uuid="GPU-1", temperature=70)])
    samples, arrived, emit = _collect()

    with TelemetrySampler(emit, interval_s=0.02) as sampler:
        assert arrived.wait(5)
    assert sampler.available

    first = samples[0]["gpus"]
    assert [gpu["uuid"] for gpu in first] == ["GPU-0", "GPU-1"]
    gpu = first[0]
    assert gpu["memory_used_mib"] == 512
    assert gpu["memory_total_mib"] == 143771
    assert (gpu["utilization_gpu_pct"], gpu["utilization_memory_pct"]) == (87, 41)
    assert gpu["power_w"] == 120.5
    assert gpu["sm_clock_mhz"] == 1755 and gpu["memory_clock_mhz"] == 3201
    assert gpu["temperature_c"] == 61 and first[1]["temperature_c"] == 70
    assert gpu["clock_event_reasons"] == ["sw_power_cap", "sw_thermal_slowdown"]
    assert gpu["ecc_corrected_volatile"] == 3 and gpu["ecc_uncorrected_volatile"] == 0
    energies = [sample["gpus"][0]["energy_mj"] for sample in samples[:3]]
    assert energies == sorted(energies) and energies[0] < energies[-1]  # a counter, read fresh each time
    assert state.initialised == 0


def test_xid_errors_appear_once_on_the_gpu_that_raised_them(monkeypatch):
    state = fake_pynvml.install(monkeypatch, [FakeGpu(uuid="GPU-0"), FakeGpu(uuid="GPU-1")])
    sampler = TelemetrySampler(lambda data: None, interval_s=60)
    sampler._open_nvml()
    try:
        state.pending_xids.append((1, 79))  # "GPU has fallen off the bus"
        first = sampler.sample()
        second = sampler.sample()
    finally:
        sampler._close_nvml()

    assert first[0]["xid_events"] == []
    assert [event["xid"] for event in first[1]["xid_events"]] == [79]
    assert second[1]["xid_events"] == []


def test_without_a_gpu_the_sampler_emits_nothing_and_says_why(monkeypatch):
    fake_pynvml.install(monkeypatch, init_error=fake_pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    samples = []

    with TelemetrySampler(samples.append, interval_s=0.01) as sampler:
        time.sleep(0.1)

    assert samples == []
    assert not sampler.available
    assert "NVML Shared Library Not Found" in sampler.unavailable_reason


def test_a_failing_sample_does_not_stop_the_sampler(monkeypatch):
    fake_pynvml.install(monkeypatch, [FakeGpu()])
    calls, arrived = [], threading.Event()

    def emit(data):
        calls.append(data)
        if len(calls) == 1:
            raise OSError("disk full for a moment")
        arrived.set()

    with TelemetrySampler(emit, interval_s=0.01):
        assert arrived.wait(5)
    assert len(calls) >= 2


def test_clock_event_reason_bits_decode_to_names():
    assert decode_clock_event_reasons(0) == []
    assert decode_clock_event_reasons(0x1 | 0x40 | 0x80) == [
        "gpu_idle", "hw_thermal_slowdown", "hw_power_brake_slowdown"
    ]
    assert decode_clock_event_reasons(None) is None
