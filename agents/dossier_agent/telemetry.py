"""GPU telemetry during a job: a sampler thread reads NVML every interval and emits one `telemetry` event.

Without a GPU (or without NVML) the sampler starts, says so once, and emits nothing.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

from dossier_agent.nvml_util import constant, import_pynvml, read, to_text
from dossier_agent.structured_log import log
from dossier_agent.timeutil import utc_now_iso

logger = logging.getLogger(__name__)

# Bit → name for nvmlDeviceGetCurrentClocksEventReasons (same bits as the older "throttle reasons").
CLOCK_EVENT_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def decode_clock_event_reasons(mask: int | None) -> list[str] | None:
    if mask is None:
        return None
    return [name for bit, name in CLOCK_EVENT_REASONS.items() if mask & bit]


class TelemetrySampler:
    def __init__(self, emit: Callable[[dict[str, Any]], None], interval_s: float = 1.0):
        self._emit = emit
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._nvml: ModuleType | None = None
        self._handles: list[tuple[int, Any, str | None]] = []
        self._event_set: Any = None
        self._pending_xids: dict[str, list[dict[str, Any]]] = {}
        self.samples_emitted = 0
        self.unavailable_reason: str | None = None

    @property
    def available(self) -> bool:
        return bool(self._handles)

    def start(self) -> None:
        self._open_nvml()
        if not self.available:
            log(logger, logging.INFO, "telemetry off", reason=self.unavailable_reason)
            return
        self._thread = threading.Thread(target=self._run, name="telemetry-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self._interval_s + 5)
        self._close_nvml()

    def __enter__(self) -> TelemetrySampler:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _open_nvml(self) -> None:
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
            self._handles.clear()
        if not self._handles and self.unavailable_reason is None:
            self.unavailable_reason = "NVML found no GPU"
        self._register_xid_events()

    def _register_xid_events(self) -> None:
        nvml = self._nvml
        if not self._handles or not hasattr(nvml, "nvmlEventSetCreate"):
            return
        try:
            self._event_set = nvml.nvmlEventSetCreate()
        except nvml.NVMLError:
            return
        xid_type = constant(nvml, "nvmlEventTypeXidCriticalError", 8)
        for _, handle, _ in self._handles:
            try:
                nvml.nvmlDeviceRegisterEvents(handle, xid_type, self._event_set)
            except nvml.NVMLError:
                continue  # XID events are not supported on every board (or need root)

    def _close_nvml(self) -> None:
        nvml = self._nvml
        if nvml is None:
            return
        if self._event_set is not None:
            with contextlib.suppress(nvml.NVMLError):
                nvml.nvmlEventSetFree(self._event_set)
        with contextlib.suppress(nvml.NVMLError):
            nvml.nvmlShutdown()
        self._nvml = None

    def _collect_xid_events(self) -> None:
        nvml = self._nvml
        if self._event_set is None:
            return
        while True:
            try:
                data = nvml.nvmlEventSetWait_v2(self._event_set, 0)
            except nvml.NVMLError:
                return  # timeout: nothing more waiting
            uuid = read(nvml, "nvmlDeviceGetUUID", data.device)
            self._pending_xids.setdefault(uuid, []).append({"xid": int(data.eventData), "ts": utc_now_iso()})

    def sample(self) -> list[dict[str, Any]]:
        """One sample per GPU; each field None when the driver does not support it."""
        nvml = self._nvml
        self._collect_xid_events()
        mib = 1024 * 1024
        corrected = constant(nvml, "NVML_MEMORY_ERROR_TYPE_CORRECTED", 0)
        uncorrected = constant(nvml, "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1)
        volatile = constant(nvml, "NVML_VOLATILE_ECC", 0)
        samples = []
        for index, handle, uuid in self._handles:
            memory = read(nvml, "nvmlDeviceGetMemoryInfo", handle)
            utilization = read(nvml, "nvmlDeviceGetUtilizationRates", handle)
            reasons = read(nvml, "nvmlDeviceGetCurrentClocksEventReasons", handle)
            if reasons is None:
                reasons = read(nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", handle)
            samples.append({
                "index": index,
                "uuid": uuid,
                "memory_used_mib": memory.used // mib if memory is not None else None,
                "memory_total_mib": memory.total // mib if memory is not None else None,
                "utilization_gpu_pct": utilization.gpu if utilization is not None else None,
                "utilization_memory_pct": utilization.memory if utilization is not None else None,
                "power_w": read(nvml, "nvmlDeviceGetPowerUsage", handle, convert=lambda value: value / 1000.0),
                "energy_mj": read(nvml, "nvmlDeviceGetTotalEnergyConsumption", handle),
                "sm_clock_mhz": read(nvml, "nvmlDeviceGetClockInfo", handle, constant(nvml, "NVML_CLOCK_SM", 1)),
                "memory_clock_mhz": read(nvml, "nvmlDeviceGetClockInfo", handle, constant(nvml, "NVML_CLOCK_MEM", 2)),
                "graphics_clock_mhz": read(
                    nvml, "nvmlDeviceGetClockInfo", handle, constant(nvml, "NVML_CLOCK_GRAPHICS", 0)
                ),
                "temperature_c": read(
                    nvml, "nvmlDeviceGetTemperature", handle, constant(nvml, "NVML_TEMPERATURE_GPU", 0)
                ),
                "clock_event_reasons_mask": reasons,
                "clock_event_reasons": decode_clock_event_reasons(reasons),
                "ecc_corrected_volatile": read(nvml, "nvmlDeviceGetTotalEccErrors", handle, corrected, volatile),
                "ecc_uncorrected_volatile": read(nvml, "nvmlDeviceGetTotalEccErrors", handle, uncorrected, volatile),
                "xid_events": self._pending_xids.pop(uuid, []),
            })
        return samples

    def _run(self) -> None:
        while True:
            try:
                self._emit({"gpus": self.sample()})
                self.samples_emitted += 1
            except Exception:  # a failing sample must never end the job; the next one may work
                logger.exception("telemetry sample failed", extra={"fields": {}})
            if self._stop.wait(self._interval_s):
                return
