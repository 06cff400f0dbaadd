"""The `acceptance` job (benchmark phase 3, item 6): is this GPU as fast as its datasheet says, and healthy?

Per device it measures, each in absolute units and as a ratio to the datasheet figure the server sends (the catalog's
values, frozen in the spec), with the pass thresholds in data (`dossier_agent/acceptance_thresholds.json`, or the
spec's `thresholds`):

- `memory_bandwidth`: a large device-to-device copy (`dst.copy_(src)`), counting the bytes read plus the bytes
  written (2 × buffer size per copy), against the datasheet memory bandwidth;
- `matmul`: a dense square matrix product at the workload's precision (2·n³ floating-point operations per product),
  against the datasheet DENSE figure for that precision;
- `host_to_device` and `device_to_host`: pinned host memory to and from the device, one direction each, against the
  host link's per-direction figure (the datasheet's, else the PCIe link's theoretical rate from NVML's maximum
  generation and width, labelled as derived).

During the run it watches NVML (XID events, new ECC errors, clock-event/throttle reasons, the PCIe link below its
maximum while it carries the host transfers) and runs `dcgmi diag -r 1` when DCGM is installed.

On a machine without a GPU the same code measures the CPU's memory copy and matrix product; those figures are
labelled `cpu` and are NEVER compared with a GPU datasheet (ratio null, verdict `not_applicable`).

Spec (JSON object, every key optional):

    {
      "device": "auto" | "cuda" | "cpu",
      "gpus": "all" | [0, 1],                       # CUDA device indices
      "precision": "bf16",                          # the workload's precision (fp32, tf32, bf16, fp16, fp8, int8, ...)
      "datasheet": {
        "gpu": "NVIDIA H200",
        "memory_bandwidth_bytes_per_s": 4.8e12,
        "matmul_flops_per_s": {"bf16": 989e12, "fp16": 989e12, "fp8": 1979e12, "tf32": 494e12, "fp32": 67e12},
        "host_link_bytes_per_s": 63e9,              # per direction; null: derived from NVML's PCIe maximum
        "source": "catalog: NVIDIA H200 datasheet (as of ...)"
      },
      "thresholds": {... same shape as acceptance_thresholds.json, replaces it key by key ...},
      "sizes": {"copy_bytes": 1073741824, "matmul_n": 8192, "host_bytes": 536870912},
      "timing": {"target_s": 0.2, "repeats": 5, "max_iterations": 1000, "warmup": 2},
      "health": {"interval_s": 0.5},
      "dcgm": {"enabled": true, "level": 1, "timeout_s": 180},
      "cpu_threads": null
    }

Result (the finish `result`): `devices[].checks[]` with `measured` (median of the repeats), `measured_best`, `unit`,
`datasheet`, `ratio`, `threshold`, `verdict` (pass | below_threshold | no_reference | not_applicable | error) and
`label` (cuda | cpu); `health`, `dcgm`, `verdict` (pass | fail | incomplete | not_applicable) and `flags` (every
failed check and health finding, for the candidate and the quote). Events: one `measurement` per check. Artifacts:
`acceptance.json` (everything, with the repeats and NVML samples), `dcgm_diag.json` when DCGM ran.
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import statistics
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

from dossier_agent.contract.acceptance_spec import (  # noqa: F401 (names of this job since it began)
    DEFAULT_SIZES,
    DEFAULT_TIMING,
    MATMUL_PRECISIONS,
    THRESHOLDS_FILE,
    AcceptanceSpecError,
    load_thresholds,
    matmul_precision,
    parse_spec,
)
from dossier_agent.contract.verdicts import check_verdict
from dossier_agent.errors import JobCancelled
from dossier_agent.nvml_util import constant, import_pynvml, read, to_text
from dossier_agent.telemetry import TelemetrySampler

KIND = "acceptance"
REQUIRES = ("torch",)
SCHEMA = 1

SELF_TEST_SPEC: dict[str, Any] = {
    "device": "auto",
    "sizes": {"copy_bytes": 4 * 2**20, "matmul_n": 128, "host_bytes": 4 * 2**20},
    "timing": {"target_s": 0.02, "repeats": 3, "warmup": 1},
    "dcgm": {"enabled": False},
    "cpu_threads": 1,
}
SELF_TEST_TIMEOUT_S = 60

CHECKS = ("memory_bandwidth", "matmul", "host_to_device", "device_to_host")
UNITS = {"memory_bandwidth": "bytes/s", "matmul": "flop/s", "host_to_device": "bytes/s", "device_to_host": "bytes/s"}
# PCIe per-lane transfer rate (GT/s) and line-code efficiency, by generation (PCI-SIG base specifications).
_PCIE_LANE = {1: (2.5, 8 / 10), 2: (5.0, 8 / 10), 3: (8.0, 128 / 130), 4: (16.0, 128 / 130), 5: (32.0, 128 / 130),
              6: (64.0, 242 / 256)}


# ----------------------------------------------------------------------------------------------------------------------
# Thresholds, datasheet values and verdicts (pure: no torch; a check's ratio and verdict: contract.verdicts)
# ----------------------------------------------------------------------------------------------------------------------


def threshold_for(thresholds: dict[str, Any], check: str, precision: str | None = None) -> float | None:
    entry = (thresholds.get("checks") or {}).get(check) or {}
    value = entry.get("min_ratio")
    if isinstance(value, dict):
        value = value.get(precision)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def pcie_bytes_per_s(generation: int | None, width: int | None) -> float | None:
    """The theoretical per-direction data rate of a PCIe link (after line coding)."""
    if not generation or not width or generation not in _PCIE_LANE:
        return None
    gigatransfers, efficiency = _PCIE_LANE[generation]
    return gigatransfers * 1e9 * width * efficiency / 8


def datasheet_value(datasheet: dict[str, Any], check: str, precision: str | None) -> float | None:
    if check == "memory_bandwidth":
        value = datasheet.get("memory_bandwidth_bytes_per_s")
    elif check == "matmul":
        value = (datasheet.get("matmul_flops_per_s") or {}).get(precision)
    else:
        value = datasheet.get("host_link_bytes_per_s")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise AcceptanceSpecError(f"datasheet value for {check} must be a positive number, got {value!r}")
    return float(value)


def summarize_health(samples: list[dict[str, Any]], link_readings: list[dict[str, Any]],
                     rules: dict[str, Any]) -> dict[str, Any]:
    """Findings from NVML telemetry samples ({"gpus": [...]} each) and PCIe link readings taken under load."""
    per_gpu: dict[str, dict[str, Any]] = {}
    for sample in samples:
        for gpu in sample.get("gpus") or []:
            key = str(gpu.get("uuid") or gpu.get("index"))
            state = per_gpu.setdefault(key, {
                "index": gpu.get("index"), "uuid": gpu.get("uuid"), "samples": 0, "xid_events": [],
                "reasons": set(), "ecc_first": {}, "ecc_last": {}, "max_temperature_c": None, "max_power_w": None,
            })
            state["samples"] += 1
            state["xid_events"].extend(gpu.get("xid_events") or [])
            state["reasons"].update(gpu.get("clock_event_reasons") or [])
            for field in ("ecc_corrected_volatile", "ecc_uncorrected_volatile"):
                if gpu.get(field) is not None:
                    state["ecc_first"].setdefault(field, gpu[field])
                    state["ecc_last"][field] = gpu[field]
            for field, target in (("temperature_c", "max_temperature_c"), ("power_w", "max_power_w")):
                if gpu.get(field) is not None:
                    state[target] = gpu[field] if state[target] is None else max(state[target], gpu[field])
    findings: list[dict[str, Any]] = []

    def finding(severity: str, gpu: dict[str, Any], kind: str, message: str, **data: Any) -> None:
        findings.append({"severity": severity, "index": gpu.get("index"), "uuid": gpu.get("uuid"), "kind": kind,
                         "message": message, **data})

    fail_reasons = set(rules.get("fail_on_clock_event_reasons") or [])
    warn_reasons = set(rules.get("warn_on_clock_event_reasons") or [])
    info_reasons = set(rules.get("info_clock_event_reasons") or [])
    gpus = []
    for state in per_gpu.values():
        if state["xid_events"] and rules.get("fail_on_xid", True):
            finding("fail", state, "xid", f"XID error(s) during the run: {[e['xid'] for e in state['xid_events']]}",
                    xids=[event["xid"] for event in state["xid_events"]])
        first, last = state["ecc_first"], state["ecc_last"]
        uncorrected = "ecc_uncorrected_volatile"
        if uncorrected in last and last[uncorrected] - first[uncorrected] > 0 and rules.get(
                "fail_on_new_uncorrected_ecc", True):
            finding("fail", state, "ecc_uncorrected",
                    f"{last[uncorrected] - first[uncorrected]} new uncorrected ECC error(s) during the run",
                    count=last[uncorrected] - first[uncorrected])
        elif first.get(uncorrected):
            finding("warning", state, "ecc_uncorrected_before",
                    f"{first[uncorrected]} uncorrected ECC error(s) since the driver loaded", count=first[uncorrected])
        corrected = "ecc_corrected_volatile"
        new_corrected = last[corrected] - first[corrected] if corrected in last else 0
        if new_corrected > 0 and rules.get("warn_on_new_corrected_ecc", True):
            finding("warning", state, "ecc_corrected",
                    f"{last[corrected] - first[corrected]} new corrected ECC error(s) during the run",
                    count=last[corrected] - first[corrected])
        for reason in sorted(state["reasons"]):
            if reason in fail_reasons:
                finding("fail", state, "clock_event", f"clocks held down: {reason}", reason=reason)
            elif reason in warn_reasons:
                finding("warning", state, "clock_event", f"clocks held down: {reason}", reason=reason)
            elif reason in info_reasons:
                finding("info", state, "clock_event", f"clock event seen: {reason}", reason=reason)
        gpus.append({
            "index": state["index"], "uuid": state["uuid"], "samples": state["samples"],
            "clock_event_reasons_seen": sorted(state["reasons"]),
            "ecc_at_start": first, "ecc_at_end": last,
            "xid_events": state["xid_events"],
            "max_temperature_c": state["max_temperature_c"], "max_power_w": state["max_power_w"],
        })
    links: dict[str, dict[str, Any]] = {}
    for reading in link_readings:
        key = str(reading.get("uuid") or reading.get("index"))
        best = links.setdefault(key, dict(reading))
        for field in ("generation", "width"):
            if reading.get(field) is not None and (best.get(field) is None or reading[field] > best[field]):
                best[field] = reading[field]
    for link in links.values():
        below = [f"{field} {link.get(field)} of {link.get(field + '_max')}" for field in ("generation", "width")
                 if link.get(field) is not None and link.get(field + "_max") is not None
                 and link[field] < link[field + "_max"]]
        link["below_max"] = bool(below)
        if below and rules.get("warn_on_pcie_below_max", True):
            finding("warning", link, "pcie_below_max",
                    "PCIe link below its maximum while carrying the host transfers: " + ", ".join(below))
    severities = {item["severity"] for item in findings}
    verdict = "fail" if "fail" in severities else "warning" if "warning" in severities else "ok"
    if not per_gpu and not links:
        verdict = "unavailable"
    return {"verdict": verdict, "findings": findings, "gpus": gpus, "pcie_links": list(links.values()),
            "samples": len(samples)}


def overall_verdict(label: str, checks: list[dict[str, Any]], health: dict[str, Any],
                    dcgm: dict[str, Any]) -> str:
    if label != "cuda":
        return "not_applicable"
    verdicts = {check["verdict"] for check in checks}
    if "below_threshold" in verdicts or health.get("verdict") == "fail" or dcgm.get("verdict") == "fail":
        return "fail"
    if verdicts - {"pass"} or not checks:
        return "incomplete"
    return "pass"


def collect_flags(devices: list[dict[str, Any]], health: dict[str, Any], dcgm: dict[str, Any]) -> list[dict]:
    """What the server flags on the candidate and the quote: checks below threshold, health and DCGM findings."""
    flags = []
    for device in devices:
        for check in device["checks"]:
            if check["verdict"] == "below_threshold":
                flags.append({
                    "severity": "fail", "source": "check", "device": device["index"], "check": check["check"],
                    "ratio": check["ratio"], "threshold": check["threshold"],
                    "message": f"{check['check']} at {check['ratio']:.3f} of the datasheet, threshold "
                               f"{check['threshold']:.2f}",
                })
            elif check["verdict"] == "error":
                flags.append({"severity": "warning", "source": "check", "device": device["index"],
                              "check": check["check"], "message": check.get("error") or "measurement failed"})
    for item in health.get("findings") or []:
        if item["severity"] in ("fail", "warning"):
            flags.append({"severity": item["severity"], "source": "nvml", "device": item.get("index"),
                          "check": item["kind"], "message": item["message"]})
    if dcgm.get("verdict") in ("fail", "warning"):
        flags.append({"severity": dcgm["verdict"], "source": "dcgm", "device": None, "check": "dcgm_diag",
                      "message": "; ".join(dcgm.get("failed_tests") or dcgm.get("warned_tests") or [])
                      or f"dcgmi diag exited with {dcgm.get('returncode')}"})
    return flags


def parse_dcgm_json(text: str) -> dict[str, Any]:
    """Test names and statuses from `dcgmi diag -j` (the layout differs between DCGM versions: walk the tree)."""
    document = json.loads(text)
    results: list[tuple[str, str]] = []

    def walk(node: Any, name: str) -> None:
        if isinstance(node, dict):
            name = str(node.get("name") or node.get("test_name") or node.get("category") or name)
            status = node.get("status")
            if isinstance(status, str):
                results.append((name, status))
            for value in node.values():
                walk(value, name)
        elif isinstance(node, list):
            for value in node:
                walk(value, name)

    walk(document, "")
    failed = sorted({name for name, status in results if status.lower() == "fail"})
    warned = sorted({name for name, status in results if status.lower() in ("warn", "warning")})
    return {"tests": len(results), "failed_tests": failed, "warned_tests": warned,
            "passed_tests": sorted({name for name, status in results if status.lower() == "pass"})}


# ----------------------------------------------------------------------------------------------------------------------
# Measuring (torch, imported inside)
# ----------------------------------------------------------------------------------------------------------------------


def time_op(op: Callable[[], Any], sync: Callable[[], None], *, target_s: float, repeats: int, max_iterations: int,
            warmup: int, cancelled: Callable[[], bool] = lambda: False,
            after_repeat: Callable[[], None] | None = None) -> dict[str, Any]:
    """Seconds per op over `repeats` timed blocks; each block runs as many ops as fill `target_s`."""
    for _ in range(warmup):
        op()
    sync()
    began = time.perf_counter()
    op()
    sync()
    first = time.perf_counter() - began
    iterations = max(1, min(max_iterations, math.ceil(target_s / max(first, 1e-9))))
    seconds = []
    for _ in range(repeats):
        if cancelled():
            raise JobCancelled("the job was cancelled")
        sync()
        began = time.perf_counter()
        for _ in range(iterations):
            op()
        sync()
        seconds.append((time.perf_counter() - began) / iterations)
        if after_repeat is not None:
            after_repeat()
    return {"iterations_per_repeat": iterations, "seconds_per_op": seconds}


def rates(work_per_op: float, timing: dict[str, Any]) -> dict[str, float]:
    per_repeat = [work_per_op / seconds for seconds in timing["seconds_per_op"] if seconds > 0]
    return {"median": statistics.median(per_repeat), "best": max(per_repeat), "worst": min(per_repeat),
            "per_repeat": per_repeat}


def _resolve_device(torch, requested: str) -> tuple[str, str]:
    requested = requested or "auto"
    if requested not in ("auto", "cuda", "cpu"):
        raise AcceptanceSpecError(f"device must be auto, cuda or cpu, got {requested!r}")
    available = torch.cuda.is_available()
    if requested == "cuda" and not available:
        raise AcceptanceSpecError("device cuda was asked for but torch sees no CUDA device")
    if requested == "cpu":
        return "cpu", "the spec asked for the CPU"
    if available:
        return "cuda", f"torch sees {torch.cuda.device_count()} CUDA device(s)"
    return "cpu", "torch sees no CUDA device: CPU figures, not comparable with a GPU datasheet"


def _dtype(torch, precision: str):
    return {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def _release(torch, label: str) -> None:
    if label == "cuda":
        torch.cuda.empty_cache()


def measure_memory_bandwidth(torch, device, size: int, timing: dict[str, Any], sync, cancelled):
    source = torch.empty(size, dtype=torch.uint8, device=device).random_(0, 256)
    target = torch.empty_like(source)
    result = time_op(lambda: target.copy_(source), sync, cancelled=cancelled, **timing)
    if not torch.equal(target[-(1 << 20):], source[-(1 << 20):]):
        raise RuntimeError("the copy did not reproduce its source")
    return 2 * size, result, f"dst.copy_(src) of {size} bytes; work = bytes read + bytes written = 2 x {size}"


def measure_matmul(torch, device, n: int, precision: str, timing: dict[str, Any], sync, cancelled):
    generator = torch.Generator(device=device)
    generator.manual_seed(0)
    previous_precision = torch.get_float32_matmul_precision()
    try:
        if precision == "fp8":
            if not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "_scaled_mm"):
                raise RuntimeError("this torch has no float8_e4m3fn matrix product (_scaled_mm)")
            a = torch.randn(n, n, device=device, generator=generator).to(torch.float8_e4m3fn)
            b = torch.randn(n, n, device=device, generator=generator).to(torch.float8_e4m3fn).t()  # column-major
            scale = torch.ones((), device=device, dtype=torch.float32)

            def op():
                return torch._scaled_mm(a, b, scale_a=scale, scale_b=scale, out_dtype=torch.bfloat16,
                                        use_fast_accum=True)

            method = f"torch._scaled_mm, e4m3 x e4m3 -> bf16, n={n}, fast accumulation"
        else:
            dtype = _dtype(torch, precision)
            torch.set_float32_matmul_precision("high" if precision == "tf32" else "highest")  # TF32 or true fp32
            a = torch.randn(n, n, device=device, dtype=dtype, generator=generator)
            b = torch.randn(n, n, device=device, dtype=dtype, generator=generator)
            out = torch.empty(n, n, device=device, dtype=dtype)

            def op():
                return torch.matmul(a, b, out=out)

            method = f"torch.matmul of two {n}x{n} {precision} matrices"
        result = time_op(op, sync, cancelled=cancelled, **timing)
    finally:
        torch.set_float32_matmul_precision(previous_precision)
    return 2 * n**3, result, method + f"; work = 2 n^3 = {2 * n**3} floating-point operations"


def measure_host_transfer(torch, device, size: int, direction: str, timing: dict[str, Any], sync, cancelled,
                          after_repeat=None):
    host = torch.empty(size, dtype=torch.uint8, pin_memory=True).random_(0, 256)
    on_device = torch.empty(size, dtype=torch.uint8, device=device)
    target, source = (on_device, host) if direction == "host_to_device" else (host, on_device)
    result = time_op(lambda: target.copy_(source, non_blocking=True), sync, cancelled=cancelled,
                     after_repeat=after_repeat, **timing)
    return size, result, f"{size} bytes, pinned host memory, copy_(non_blocking=True); one direction"


# ----------------------------------------------------------------------------------------------------------------------
# NVML health
# ----------------------------------------------------------------------------------------------------------------------


class HealthMonitor:
    """NVML telemetry during the run (a `TelemetrySampler` collecting here) plus PCIe link readings on demand."""

    def __init__(self, interval_s: float):
        self.samples: list[dict[str, Any]] = []
        self.link_readings: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._sampler = TelemetrySampler(self._collect, interval_s)
        self._interval_s = interval_s
        self._nvml = None
        self._handles: list[tuple[int, Any, str | None]] = []
        self.unavailable_reason: str | None = None

    def _collect(self, data: dict[str, Any]) -> None:
        with self._lock:
            self.samples.append({"ts": time.time(), **data})

    def start(self) -> None:
        self._sampler.start()
        nvml, reason = import_pynvml()
        if nvml is None:
            self.unavailable_reason = reason
            return
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as error:
            self.unavailable_reason = f"NVML unavailable: {to_text(str(error))}"
            return
        self._nvml = nvml
        try:
            for index in range(nvml.nvmlDeviceGetCount()):
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                self._handles.append((index, handle, read(nvml, "nvmlDeviceGetUUID", handle)))
        except nvml.NVMLError as error:
            self.unavailable_reason = f"NVML error while listing GPUs: {to_text(str(error))}"
        self._collect({"gpus": self._ecc_snapshot()})  # the baseline: ECC counters before the load

    def _ecc_snapshot(self) -> list[dict[str, Any]]:
        nvml = self._nvml
        if nvml is None:
            return []
        corrected = constant(nvml, "NVML_MEMORY_ERROR_TYPE_CORRECTED", 0)
        uncorrected = constant(nvml, "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1)
        volatile = constant(nvml, "NVML_VOLATILE_ECC", 0)
        return [{"index": index, "uuid": uuid,
                 "ecc_corrected_volatile": read(nvml, "nvmlDeviceGetTotalEccErrors", handle, corrected, volatile),
                 "ecc_uncorrected_volatile": read(nvml, "nvmlDeviceGetTotalEccErrors", handle, uncorrected, volatile)}
                for index, handle, uuid in self._handles]

    def read_links(self, phase: str) -> None:
        nvml = self._nvml
        if nvml is None:
            return
        for index, handle, uuid in self._handles:
            self.link_readings.append({
                "index": index, "uuid": uuid, "phase": phase,
                "generation": read(nvml, "nvmlDeviceGetCurrPcieLinkGeneration", handle),
                "generation_max": read(nvml, "nvmlDeviceGetMaxPcieLinkGeneration", handle),
                "width": read(nvml, "nvmlDeviceGetCurrPcieLinkWidth", handle),
                "width_max": read(nvml, "nvmlDeviceGetMaxPcieLinkWidth", handle),
            })

    def max_link(self) -> dict[str, dict[str, Any]]:
        """Per GPU uuid: the maximum PCIe generation and width NVML reports (for a derived host-link figure)."""
        nvml = self._nvml
        if nvml is None:
            return {}
        return {str(uuid): {"index": index,
                            "generation": read(nvml, "nvmlDeviceGetMaxPcieLinkGeneration", handle),
                            "width": read(nvml, "nvmlDeviceGetMaxPcieLinkWidth", handle)}
                for index, handle, uuid in self._handles}

    def stop(self) -> None:
        if self._sampler.available:  # one more telemetry sample after the load, so late XIDs and reasons count
            with self._lock:
                seen = len(self.samples)
            deadline = time.monotonic() + 2 * self._interval_s + 1.0
            while time.monotonic() < deadline:
                with self._lock:
                    if len(self.samples) > seen:
                        break
                time.sleep(0.01)
        self._sampler.stop()
        self._collect({"gpus": self._ecc_snapshot()})  # the final reading: ECC counters after the load
        if self._nvml is not None:
            with contextlib.suppress(self._nvml.NVMLError):
                self._nvml.nvmlShutdown()
            self._nvml = None

    def summary(self, rules: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            samples = list(self.samples)
        result = summarize_health(samples, self.link_readings, rules)
        if result["verdict"] == "unavailable":
            result["reason"] = self.unavailable_reason or self._sampler.unavailable_reason
        return result


# ----------------------------------------------------------------------------------------------------------------------
# DCGM
# ----------------------------------------------------------------------------------------------------------------------


def run_dcgm(settings: dict[str, Any], executable: str | None = None) -> tuple[dict[str, Any], bytes | None]:
    if not settings.get("enabled", True):
        return {"verdict": "skipped", "reason": "disabled in the job spec"}, None
    executable = executable or shutil.which("dcgmi")
    if executable is None:
        return {"verdict": "unavailable", "reason": "DCGM is not installed (no dcgmi on PATH)"}, None
    command = [executable, "diag", "-r", str(settings["level"]), "-j"]
    began = time.monotonic()
    try:
        completed = subprocess.run(command, capture_output=True, timeout=float(settings["timeout_s"]),  # noqa: S603
                                   check=False)
    except subprocess.TimeoutExpired:
        return {"verdict": "error", "reason": f"dcgmi diag did not finish within {settings['timeout_s']} s",
                "command": command}, None
    seconds = round(time.monotonic() - began, 2)
    output = completed.stdout
    report: dict[str, Any] = {"command": command, "returncode": completed.returncode, "seconds": seconds,
                              "stderr_tail": completed.stderr.decode(errors="replace")[-2000:]}
    try:
        parsed = parse_dcgm_json(output.decode(errors="replace"))
    except ValueError:
        report.update(verdict="error", reason="dcgmi diag printed no JSON (is nv-hostengine running?)",
                      stdout_tail=output.decode(errors="replace")[-2000:])
        return report, output or None
    report.update(parsed)
    if parsed["failed_tests"]:
        report["verdict"] = "fail"
    elif completed.returncode != 0:
        report["verdict"] = "error"
    elif parsed["warned_tests"]:
        report["verdict"] = "warning"
    else:
        report["verdict"] = "pass"
    return report, output


# ----------------------------------------------------------------------------------------------------------------------
# The job
# ----------------------------------------------------------------------------------------------------------------------


def _check_record(check: str, label: str, work_per_op: float, timing: dict[str, Any] | None, method: str,
                  reference: float | None, reference_source: str | None, threshold: float | None,
                  precision: str | None = None, error: str | None = None) -> dict[str, Any]:
    measured = rates(work_per_op, timing) if timing is not None else None
    verdict, value = check_verdict(label, measured["median"] if measured else None,
                                   reference if label == "cuda" else None, threshold)
    record = {
        "check": check, "label": label, "unit": UNITS[check], "precision": precision,
        "measured": measured["median"] if measured else None,
        "measured_best": measured["best"] if measured else None,
        "measured_worst": measured["worst"] if measured else None,
        "per_repeat": measured["per_repeat"] if measured else None,
        "iterations_per_repeat": timing["iterations_per_repeat"] if timing else None,
        "work_per_op": work_per_op, "method": method,
        "datasheet": reference if label == "cuda" else None,
        "datasheet_source": reference_source if label == "cuda" else None,
        "ratio": value, "threshold": threshold if label == "cuda" else None, "verdict": verdict,
    }
    if error:
        record["error"] = error
    return record


def _cuda_devices(torch, requested: Any) -> list[int]:
    count = torch.cuda.device_count()
    indices = list(range(count)) if requested == "all" else list(requested)
    missing = [index for index in indices if index >= count]
    if missing:
        raise AcceptanceSpecError(f"gpus {missing} do not exist; torch sees {count} CUDA device(s)")
    return indices


def _device_uuid(torch, index: int) -> str | None:
    uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    return f"GPU-{uuid}" if uuid is not None and not str(uuid).startswith("GPU-") else (str(uuid) if uuid else None)


class _DeviceRun:
    """The four checks on one device (or the CPU), each reported as soon as it is measured."""

    def __init__(self, torch, ctx, plan: dict[str, Any], label: str, index: int | None, monitor: HealthMonitor | None,
                 max_links: dict[str, dict[str, Any]], progress: Callable[[str], None]):
        self.torch, self.ctx, self.plan, self.label, self.index = torch, ctx, plan, label, index
        self.monitor, self.max_links, self.progress = monitor, max_links, progress
        self.checks: list[dict[str, Any]] = []
        if label == "cuda":
            self.device = torch.device("cuda", index)
            torch.cuda.set_device(self.device)
            self.name, self.uuid = torch.cuda.get_device_name(index), _device_uuid(torch, index)
        else:
            self.device, self.uuid = torch.device("cpu"), None
            self.name = (ctx.inventory.get("host") or {}).get("cpu_model")

    def sync(self) -> None:
        if self.label == "cuda":
            self.torch.cuda.synchronize(self.device)

    def record(self, check: str, measure: Callable[[], tuple], reference: float | None, source: str | None,
               precision: str | None = None) -> None:
        if self.ctx.cancelled():
            raise JobCancelled("the job was cancelled")
        threshold = threshold_for(self.plan["thresholds"], check, precision)
        try:
            work, result, method = measure()
            entry = _check_record(check, self.label, work, result, method, reference, source, threshold, precision)
        except JobCancelled:
            raise
        except Exception as error:  # an OOM or a missing kernel fails this check, not the whole job
            entry = _check_record(check, self.label, 0, None, "", reference, source, threshold, precision,
                                  error=f"{type(error).__name__}: {error}")
        _release(self.torch, self.label)
        self.checks.append(entry)
        self.ctx.event("measurement", {key: entry[key] for key in (
            "check", "label", "unit", "precision", "measured", "measured_best", "datasheet", "ratio", "threshold",
            "verdict")} | {"device": self.index})
        self.ctx.log(f"{check}: {entry['measured']} {entry['unit']}", device=self.index, label=self.label,
                     ratio=entry["ratio"], verdict=entry["verdict"], error=entry.get("error"))
        self.progress(f"{check} on {self.label} {self.index if self.index is not None else ''}".strip())

    def read_links(self, phase: str) -> None:
        if self.monitor is not None:
            self.monitor.read_links(phase)

    def host_link_reference(self, datasheet: dict[str, Any], source: str) -> tuple[float | None, str | None]:
        reference = datasheet_value(datasheet, "host_to_device", None)
        if reference is not None:
            return reference, source
        link = self.max_links.get(str(self.uuid)) or next(
            (entry for entry in self.max_links.values() if entry["index"] == self.index), {})
        reference = pcie_bytes_per_s(link.get("generation"), link.get("width"))
        if reference is None:
            return None, None
        return reference, (f"derived: PCIe gen {link['generation']} x{link['width']} (NVML maximum), per direction "
                           "after line coding")

    def run(self, datasheet: dict[str, Any]) -> dict[str, Any]:
        torch, plan, timing, cancelled = self.torch, self.plan, self.plan["timing"], self.ctx.cancelled
        source = datasheet.get("source") or "job spec datasheet"
        self.record("memory_bandwidth", lambda: measure_memory_bandwidth(
            torch, self.device, plan["sizes"]["copy_bytes"], timing, self.sync, cancelled),
            datasheet_value(datasheet, "memory_bandwidth", None), source)
        self.record("matmul", lambda: measure_matmul(
            torch, self.device, plan["sizes"]["matmul_n"], plan["precision"], timing, self.sync, cancelled),
            datasheet_value(datasheet, "matmul", plan["precision"]), source, plan["precision"])
        for direction in ("host_to_device", "device_to_host"):
            if self.label != "cuda" or plan["sizes"]["host_bytes"] == 0:
                entry = _check_record(direction, self.label, 0, None, "", None, None, None)
                entry["verdict"] = "not_applicable" if self.label != "cuda" else "skipped"
                entry["note"] = ("no accelerator: there is no host-device link to measure" if self.label != "cuda"
                                 else "sizes.host_bytes is 0 in the job spec")
                self.checks.append(entry)
                continue
            reference, link_source = self.host_link_reference(datasheet, source)
            self.record(direction, lambda direction=direction: measure_host_transfer(
                torch, self.device, plan["sizes"]["host_bytes"], direction, timing, self.sync, cancelled,
                after_repeat=lambda: self.read_links(direction)), reference, link_source)
        return {"index": self.index, "name": self.name, "uuid": self.uuid, "label": self.label,
                "checks": self.checks}


def run(spec: dict[str, Any], ctx) -> dict[str, Any]:
    import torch

    label, device_reason = _resolve_device(torch, (spec or {}).get("device", "auto"))
    plan = parse_spec(spec or {}, label)
    if plan["cpu_threads"]:
        torch.set_num_threads(plan["cpu_threads"])
    thresholds = plan["thresholds"]
    datasheet = plan["datasheet"] if label == "cuda" else {}
    monitor = HealthMonitor(plan["health"]["interval_s"]) if label == "cuda" else None
    devices = []
    if monitor is not None:
        monitor.start()
    try:
        indices = _cuda_devices(torch, plan["gpus"]) if label == "cuda" else [None]
        max_links = monitor.max_link() if monitor is not None else {}
        steps, done = len(indices) * (4 if label == "cuda" else 2), [0]

        def progress(message: str) -> None:
            done[0] += 1
            ctx.progress(min(done[0] / steps, 1.0), message)

        for index in indices:
            devices.append(_DeviceRun(torch, ctx, plan, label, index, monitor, max_links, progress).run(datasheet))
    finally:
        if monitor is not None:
            monitor.stop()
    if monitor is not None:
        health = monitor.summary(thresholds.get("health") or {})
        dcgm, dcgm_output = run_dcgm(plan["dcgm"])
        if dcgm_output:
            ctx.add_artifact(dcgm_output, "dcgm_diag.json", "application/json")
    else:
        health = {"verdict": "not_applicable", "reason": "no GPU: NVML health applies to GPUs only", "findings": []}
        dcgm = {"verdict": "not_applicable", "reason": "no GPU"}
    all_checks = [check for device in devices for check in device["checks"]]
    measured_checks = [check for check in all_checks if check["verdict"] != "skipped"]
    result = {
        "schema": SCHEMA,
        "label": label,
        "device_reason": device_reason,
        "precision": plan["precision"],
        "precision_requested": plan["precision_requested"],
        "precision_note": plan["precision_note"],
        "datasheet": datasheet or None,
        "datasheet_note": None if label == "cuda" else "CPU figures are never compared with a GPU datasheet",
        "thresholds_source": thresholds["source"],
        "sizes": plan["sizes"],
        "cpu_threads": torch.get_num_threads(),
        "devices": devices,
        "worst_ratio": {check: min((c["ratio"] for c in all_checks if c["check"] == check and c["ratio"] is not None),
                                   default=None) for check in CHECKS},
        "health": health,
        "dcgm": dcgm,
        "verdict": overall_verdict(label, measured_checks, health, dcgm),
        "flags": collect_flags(devices, health, dcgm),
        "torch_version": torch.__version__,
    }
    artifact = dict(result)
    if monitor is not None:
        artifact["nvml_samples"] = monitor.samples
        artifact["pcie_link_readings"] = monitor.link_readings
    ctx.add_artifact(json.dumps(artifact, indent=2, sort_keys=True).encode(), "acceptance.json", "application/json")
    ctx.progress(1.0, "done")
    return result
