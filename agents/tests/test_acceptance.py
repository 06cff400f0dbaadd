"""GPU acceptance checks: ratio and threshold logic with fixed datasheet values, NVML health through the fake
`pynvml`, DCGM output parsing, and the real job on the CPU (labelled cpu, never compared with a GPU datasheet)."""

import json
import os
import stat
from pathlib import Path

import fake_pynvml
import pytest
from dossier_agent.context import JobContext
from dossier_agent.contract import verdicts
from dossier_agent.event_writer import EventWriter
from dossier_agent.jobs import acceptance
from dossier_agent.spool import Spool

H200 = {
    "gpu": "NVIDIA H200",
    "memory_bandwidth_bytes_per_s": 4.8e12,
    "matmul_flops_per_s": {"bf16": 989e12, "fp16": 989e12, "fp8": 1979e12},
    "host_link_bytes_per_s": None,
    "source": "test: NVIDIA H200 datasheet",
}


def make_context(tmp_path: Path, spec: dict, inventory: dict | None = None) -> tuple[JobContext, EventWriter]:
    attempt = Spool(tmp_path / "spool").create_attempt(
        {"job_id": "1", "attempt": 1, "job_token": None, "kind": acceptance.KIND, "spec": spec})
    events = EventWriter(attempt)
    context = JobContext(job_id="1", attempt=1, kind=acceptance.KIND, spec=spec, workdir=tmp_path / "work",
                         inventory=inventory or {"host": {"cpu_model": "test CPU"}}, events=events, spool=attempt,
                         is_cancelled=lambda: False)
    return context, events


# -- ratios and thresholds --------------------------------------------------------------------------------------
def test_a_healthy_h200_passes_and_a_slow_one_is_below_threshold():
    thresholds = acceptance.load_thresholds()
    copy_threshold = acceptance.threshold_for(thresholds, "memory_bandwidth")
    bf16_threshold = acceptance.threshold_for(thresholds, "matmul", "bf16")
    assert copy_threshold == 0.8 and bf16_threshold == 0.7

    reference = acceptance.datasheet_value(H200, "memory_bandwidth", None)
    verdict, ratio = verdicts.check_verdict("cuda", 4.32e12, reference, copy_threshold)
    assert verdict == "pass" and ratio == pytest.approx(0.9)
    verdict, ratio = verdicts.check_verdict("cuda", 3.6e12, reference, copy_threshold)
    assert verdict == "below_threshold" and ratio == pytest.approx(0.75)

    reference = acceptance.datasheet_value(H200, "matmul", "bf16")
    assert verdicts.check_verdict("cuda", 791.2e12, reference, bf16_threshold) == ("pass", pytest.approx(0.8))
    verdict, ratio = verdicts.check_verdict("cuda", 600e12, reference, bf16_threshold)
    assert verdict == "below_threshold" and ratio == pytest.approx(600 / 989)


def test_missing_reference_or_failed_measurement_never_passes():
    assert verdicts.check_verdict("cuda", 4e12, None, 0.8) == ("no_reference", None)
    assert verdicts.check_verdict("cuda", None, 4.8e12, 0.8) == ("error", None)
    verdict, ratio = verdicts.check_verdict("cuda", 4e12, 4.8e12, None)
    assert verdict == "no_reference" and ratio == pytest.approx(4 / 4.8)
    assert acceptance.datasheet_value(H200, "matmul", "tf32") is None
    with pytest.raises(acceptance.AcceptanceSpecError):
        acceptance.datasheet_value({"memory_bandwidth_bytes_per_s": -1}, "memory_bandwidth", None)


def test_cpu_figures_are_never_compared_with_a_gpu_datasheet():
    assert verdicts.check_verdict("cpu", 20e9, 4.8e12, 0.8) == ("not_applicable", None)
    record = acceptance._check_record("memory_bandwidth", "cpu", 2e6, {"iterations_per_repeat": 1,
                                      "seconds_per_op": [1e-3, 2e-3]}, "copy", 4.8e12, "datasheet", 0.8)
    assert record["label"] == "cpu" and record["ratio"] is None and record["datasheet"] is None
    assert record["threshold"] is None and record["verdict"] == "not_applicable"
    assert record["measured"] == pytest.approx((2e9 + 1e9) / 2)  # median of the per-repeat rates
    assert record["measured_best"] == pytest.approx(2e9) and record["measured_worst"] == pytest.approx(1e9)
    assert acceptance.overall_verdict("cpu", [record], {"verdict": "not_applicable"}, {}) == "not_applicable"


def test_spec_thresholds_replace_the_packaged_ones_key_by_key():
    thresholds = acceptance.load_thresholds({"checks": {"matmul": {"min_ratio": {"bf16": 0.75}}}})
    assert acceptance.threshold_for(thresholds, "matmul", "bf16") == 0.75
    assert acceptance.threshold_for(thresholds, "matmul", "fp16") == 0.7  # untouched
    assert acceptance.threshold_for(thresholds, "memory_bandwidth") == 0.8
    assert thresholds["source"].startswith("job spec over agent file")


def test_overall_verdict_and_flags():
    def check(name, verdict, ratio=None, threshold=None):
        return {"check": name, "verdict": verdict, "ratio": ratio, "threshold": threshold}

    good = [check("memory_bandwidth", "pass", 0.9, 0.8), check("matmul", "pass", 0.8, 0.7)]
    health_ok = {"verdict": "ok", "findings": []}
    assert acceptance.overall_verdict("cuda", good, health_ok, {"verdict": "unavailable"}) == "pass"
    slow = [*good, check("host_to_device", "below_threshold", 0.4, 0.6)]
    assert acceptance.overall_verdict("cuda", slow, health_ok, {}) == "fail"
    assert acceptance.overall_verdict("cuda", [*good, check("device_to_host", "no_reference")], health_ok,
                                      {}) == "incomplete"
    assert acceptance.overall_verdict("cuda", good, {"verdict": "fail"}, {}) == "fail"
    assert acceptance.overall_verdict("cuda", good, health_ok, {"verdict": "fail"}) == "fail"

    flags = acceptance.collect_flags([{"index": 0, "checks": slow}], {"findings": [
        {"severity": "warning", "index": 0, "kind": "pcie_below_max", "message": "gen 4 of 5"},
        {"severity": "info", "index": 0, "kind": "clock_event", "message": "sw_power_cap"}]}, {"verdict": "pass"})
    assert [(flag["severity"], flag["check"]) for flag in flags] == [("fail", "host_to_device"),
                                                                   ("warning", "pcie_below_max")]
    assert flags[0]["ratio"] == 0.4 and flags[0]["threshold"] == 0.6


def test_pcie_rate_and_precision_mapping():
    assert acceptance.pcie_bytes_per_s(5, 16) == pytest.approx(63.015e9, rel=1e-4)
    assert acceptance.pcie_bytes_per_s(4, 16) == pytest.approx(31.508e9, rel=1e-4)
    assert acceptance.pcie_bytes_per_s(None, 16) is None
    assert acceptance.matmul_precision("bfloat16", "cuda") == ("bf16", None)
    assert acceptance.matmul_precision("nf4", "cuda")[0] == "bf16"
    assert acceptance.matmul_precision("fp8", "cuda") == ("fp8", None)
    assert acceptance.matmul_precision("fp8", "cpu")[0] == "bf16"
    assert acceptance.matmul_precision("tf32", "cpu")[0] == "fp32"
    with pytest.raises(acceptance.AcceptanceSpecError):
        acceptance.matmul_precision("fp4x", "cuda")


# -- NVML health ------------------------------------------------------------------------------------------------
def _sample(index=0, uuid="GPU-a", reasons=(), corrected=0, uncorrected=0, xids=()):
    return {"gpus": [{"index": index, "uuid": uuid, "clock_event_reasons": list(reasons),
                      "ecc_corrected_volatile": corrected, "ecc_uncorrected_volatile": uncorrected,
                      "xid_events": [{"xid": xid, "ts": "t"} for xid in xids], "temperature_c": 60, "power_w": 650}]}


def test_health_findings_from_samples_and_link_readings():
    rules = acceptance.load_thresholds()["health"]
    quiet = acceptance.summarize_health([_sample(reasons=["sw_power_cap"]), _sample(reasons=["sw_power_cap"])], [],
                                        rules)
    assert quiet["verdict"] == "ok"
    assert [item["severity"] for item in quiet["findings"]] == ["info"]

    bad = acceptance.summarize_health(
        [_sample(corrected=2), _sample(corrected=5, uncorrected=1, reasons=["hw_slowdown"], xids=[79])],
        [{"index": 0, "uuid": "GPU-a", "generation": 4, "generation_max": 5, "width": 16, "width_max": 16},
         {"index": 0, "uuid": "GPU-a", "generation": 3, "generation_max": 5, "width": 16, "width_max": 16}],
        rules)
    kinds = {(item["severity"], item["kind"]) for item in bad["findings"]}
    assert {("fail", "xid"), ("fail", "ecc_uncorrected"), ("warning", "ecc_corrected"), ("fail", "clock_event"),
            ("warning", "pcie_below_max")} <= kinds
    assert bad["verdict"] == "fail"
    assert bad["pcie_links"][0]["generation"] == 4  # the best reading under load counts

    full_link = acceptance.summarize_health(
        [_sample()], [{"index": 0, "uuid": "GPU-a", "generation": 2, "generation_max": 5, "width": 16,
                       "width_max": 16},
                      {"index": 0, "uuid": "GPU-a", "generation": 5, "generation_max": 5, "width": 16,
                       "width_max": 16}], rules)
    assert full_link["verdict"] == "ok"  # an idle downshift between readings is not a finding


def test_health_monitor_reads_the_real_nvml_code_path(monkeypatch):
    state = fake_pynvml.install(monkeypatch, gpus=[fake_pynvml.FakeGpu(clock_event_reasons=0x8, pcie=(4, 5, 16, 16))])
    monitor = acceptance.HealthMonitor(interval_s=0.05)
    monitor.start()
    state.pending_xids.append((0, 48))
    monitor.read_links("host_to_device")
    assert monitor.max_link()[fake_pynvml.FakeGpu().uuid] == {"index": 0, "generation": 5, "width": 16}
    monitor.stop()
    summary = monitor.summary(acceptance.load_thresholds()["health"])
    kinds = {(item["severity"], item["kind"]) for item in summary["findings"]}
    assert ("fail", "xid") in kinds and ("fail", "clock_event") in kinds and ("warning", "pcie_below_max") in kinds
    assert summary["verdict"] == "fail" and summary["samples"] >= 2


# -- DCGM -------------------------------------------------------------------------------------------------------
DCGM_OUTPUT = {"DCGM GPU Diagnostic": {"test_categories": [
    {"category": "Deployment", "tests": [{"name": "Denylist", "results": [{"status": "Pass"}]},
                                         {"name": "NVML Library", "results": [{"status": "Pass"}]}]},
    {"category": "Hardware", "tests": [{"name": "GPU Memory", "results": [{"gpu_id": "0", "status": "Fail",
                                                                           "warnings": [{"warning": "x"}]}]}]}]}}


def test_dcgm_output_is_parsed_and_a_failure_fails(tmp_path):
    parsed = acceptance.parse_dcgm_json(json.dumps(DCGM_OUTPUT))
    assert parsed["failed_tests"] == ["GPU Memory"] and "Denylist" in parsed["passed_tests"]

    script = tmp_path / "dcgmi"
    (tmp_path / "out.json").write_text(json.dumps(DCGM_OUTPUT))
    script.write_text(f"#!/bin/sh\n[ \"$1 $2 $3 $4\" = 'diag -r 1 -j' ] || exit 9\ncat {tmp_path / 'out.json'}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    report, output = acceptance.run_dcgm({"enabled": True, "level": 1, "timeout_s": 10}, executable=str(script))
    assert report["verdict"] == "fail" and report["returncode"] == 0 and json.loads(output) == DCGM_OUTPUT
    assert acceptance.run_dcgm({"enabled": False})[0]["verdict"] == "skipped"


def test_without_dcgm_the_check_says_so(monkeypatch):
    monkeypatch.setenv("PATH", os.defpath if "dcgmi" not in os.defpath else "")
    report, output = acceptance.run_dcgm({"enabled": True, "level": 1, "timeout_s": 10})
    assert report["verdict"] == "unavailable" and output is None


# -- the job on the CPU -----------------------------------------------------------------------------------------
def test_the_job_on_the_cpu_measures_and_labels_cpu(tmp_path):
    spec = {**acceptance.SELF_TEST_SPEC, "device": "cpu", "datasheet": H200, "precision": "bf16"}
    context, events = make_context(tmp_path, spec)
    result = acceptance.run(spec, context)
    events.close()

    assert result["label"] == "cpu" and result["verdict"] == "not_applicable" and result["datasheet"] is None
    checks = {check["check"]: check for check in result["devices"][0]["checks"]}
    assert set(checks) == set(acceptance.CHECKS)
    for name in ("memory_bandwidth", "matmul"):
        assert checks[name]["label"] == "cpu" and checks[name]["measured"] > 0
        assert checks[name]["ratio"] is None and checks[name]["verdict"] == "not_applicable"
        assert checks[name]["datasheet"] is None
    assert checks["memory_bandwidth"]["work_per_op"] == 2 * spec["sizes"]["copy_bytes"]
    assert checks["matmul"]["work_per_op"] == 2 * 128**3 and checks["matmul"]["precision"] == "bf16"
    assert checks["host_to_device"]["measured"] is None and checks["host_to_device"]["verdict"] == "not_applicable"
    assert result["health"]["verdict"] == "not_applicable" and result["flags"] == []
    assert result["devices"][0]["name"] == "test CPU"
    assert [artifact["name"] for artifact in context.artifacts] == ["acceptance.json"]


def test_a_bad_spec_is_refused_with_its_name(tmp_path):
    context, events = make_context(tmp_path, {})
    with pytest.raises(acceptance.AcceptanceSpecError, match=r"timing\.repeats"):
        acceptance.run({"device": "cpu", "timing": {"repeats": 0}}, context)
    with pytest.raises(acceptance.AcceptanceSpecError, match="unknown spec key"):
        acceptance.run({"device": "cpu", "command": "rm -rf /"}, context)
    events.close()
