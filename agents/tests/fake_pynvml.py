"""A small stand-in for `pynvml` (nvidia-ml-py) with the same names, return shapes and error class, so the real
inventory and telemetry code runs unchanged on a machine without a GPU. Install with `install(monkeypatch, ...)`.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

NVML_SUCCESS = 0
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_LIBRARY_NOT_FOUND = 12

NVML_CLOCK_GRAPHICS = 0
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_TEMPERATURE_GPU = 0
NVML_MEMORY_ERROR_TYPE_CORRECTED = 0
NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_VOLATILE_ECC = 0
NVML_FEATURE_DISABLED = 0
NVML_FEATURE_ENABLED = 1
NVML_NVLINK_MAX_LINKS = 18
NVML_DEVICE_ARCH_AMPERE = 7
NVML_DEVICE_ARCH_HOPPER = 9
nvmlEventTypeXidCriticalError = 8

_MESSAGES = {
    NVML_ERROR_INVALID_ARGUMENT: "Invalid Argument",
    NVML_ERROR_NOT_SUPPORTED: "Not Supported",
    NVML_ERROR_NOT_FOUND: "Not Found",
    NVML_ERROR_TIMEOUT: "Timeout",
    NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
}


class NVMLError(Exception):
    def __init__(self, value: int):
        self.value = value
        super().__init__(value)

    def __str__(self) -> str:
        return _MESSAGES.get(self.value, f"Unknown Error {self.value}")


@dataclass
class FakeGpu:
    name: str = "NVIDIA H200"
    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"
    serial: str = "1650000000000"
    bus_id: bytes = b"00000000:19:00.0"
    memory_total: int = 143771 * 1024 * 1024
    memory_used: int = 512 * 1024 * 1024
    ecc: tuple[int, int] = (1, 1)
    mig: tuple[int, int] = (0, 0)
    mig_devices: list[dict[str, Any]] = field(default_factory=list)
    persistence: int = 1
    compute_mode: int = 0
    power_limit_mw: int = 700000
    power_default_mw: int = 700000
    power_constraints_mw: tuple[int, int] = (200000, 700000)
    power_usage_mw: int = 120500
    max_clocks: dict[int, int] = field(default_factory=lambda: {0: 1980, 1: 1980, 2: 3201})
    clocks: dict[int, int] = field(default_factory=lambda: {0: 1755, 1: 1755, 2: 3201})
    pcie: tuple[int, int, int, int] = (5, 5, 16, 16)  # current gen, max gen, current width, max width
    nvlinks: list[bool] | None = field(default_factory=lambda: [True] * 18)
    nvlink_version: int = 4
    architecture: int = NVML_DEVICE_ARCH_HOPPER
    compute_capability: tuple[int, int] = (9, 0)
    utilization: tuple[int, int] = (87, 41)
    temperature: int = 61
    clock_event_reasons: int = 0x4 | 0x20  # sw_power_cap, sw_thermal_slowdown
    ecc_errors: tuple[int, int] = (3, 0)
    unsupported: set[str] = field(default_factory=set)
    energy_mj: int = 1_000_000


@dataclass
class FakeState:
    gpus: list[FakeGpu] = field(default_factory=list)
    init_error: int | None = None
    driver_version: str = "550.54.15"
    cuda_driver_version: int = 12040
    initialised: int = 0
    pending_xids: list[tuple[int, int]] = field(default_factory=list)
    registered_for_xid: set[int] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)


STATE = FakeState()


@dataclass(frozen=True)
class Handle:
    index: int
    mig_index: int | None = None


def _gpu(handle: Handle, function: str) -> FakeGpu:
    if STATE.initialised <= 0:
        raise NVMLError(1)  # uninitialised
    gpu = STATE.gpus[handle.index]
    if function in gpu.unsupported:
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
    return gpu


# -- library ----------------------------------------------------------------------------------------------------
def nvmlInit() -> None:
    if STATE.init_error is not None:
        raise NVMLError(STATE.init_error)
    STATE.initialised += 1


def nvmlShutdown() -> None:
    STATE.initialised -= 1


def nvmlSystemGetDriverVersion() -> str:
    return STATE.driver_version


def nvmlSystemGetCudaDriverVersion_v2() -> int:
    return STATE.cuda_driver_version


def nvmlSystemGetNVMLVersion() -> str:
    return "12." + STATE.driver_version


def nvmlDeviceGetCount() -> int:
    return len(STATE.gpus)


def nvmlDeviceGetHandleByIndex(index: int) -> Handle:
    if not 0 <= index < len(STATE.gpus):
        raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
    return Handle(index)


# -- identity and configuration ---------------------------------------------------------------------------------
def nvmlDeviceGetName(handle: Handle) -> str:
    gpu = _gpu(handle, "nvmlDeviceGetName")
    if handle.mig_index is not None:
        return gpu.mig_devices[handle.mig_index]["name"]
    return gpu.name


def nvmlDeviceGetUUID(handle: Handle) -> str:
    gpu = _gpu(handle, "nvmlDeviceGetUUID")
    if handle.mig_index is not None:
        return gpu.mig_devices[handle.mig_index]["uuid"]
    return gpu.uuid


def nvmlDeviceGetSerial(handle: Handle) -> str:
    return _gpu(handle, "nvmlDeviceGetSerial").serial


def nvmlDeviceGetPciInfo(handle: Handle) -> SimpleNamespace:
    return SimpleNamespace(busId=_gpu(handle, "nvmlDeviceGetPciInfo").bus_id)


def nvmlDeviceGetMemoryInfo(handle: Handle) -> SimpleNamespace:
    gpu = _gpu(handle, "nvmlDeviceGetMemoryInfo")
    if handle.mig_index is not None:
        total = gpu.mig_devices[handle.mig_index]["memory_total"]
        return SimpleNamespace(total=total, used=0, free=total)
    return SimpleNamespace(total=gpu.memory_total, used=gpu.memory_used, free=gpu.memory_total - gpu.memory_used)


def nvmlDeviceGetEccMode(handle: Handle) -> list[int]:
    return list(_gpu(handle, "nvmlDeviceGetEccMode").ecc)


def nvmlDeviceGetMigMode(handle: Handle) -> list[int]:
    return list(_gpu(handle, "nvmlDeviceGetMigMode").mig)


def nvmlDeviceGetMaxMigDeviceCount(handle: Handle) -> int:
    _gpu(handle, "nvmlDeviceGetMaxMigDeviceCount")
    return 7


def nvmlDeviceGetMigDeviceHandleByIndex(handle: Handle, index: int) -> Handle:
    gpu = _gpu(handle, "nvmlDeviceGetMigDeviceHandleByIndex")
    if index >= len(gpu.mig_devices):
        raise NVMLError(NVML_ERROR_NOT_FOUND)
    return Handle(handle.index, index)


def nvmlDeviceGetPersistenceMode(handle: Handle) -> int:
    return _gpu(handle, "nvmlDeviceGetPersistenceMode").persistence


def nvmlDeviceGetComputeMode(handle: Handle) -> int:
    return _gpu(handle, "nvmlDeviceGetComputeMode").compute_mode


def nvmlDeviceGetPowerManagementLimit(handle: Handle) -> int:
    return _gpu(handle, "nvmlDeviceGetPowerManagementLimit").power_limit_mw


def nvmlDeviceGetPowerManagementDefaultLimit(handle: Handle) -> int:
    return _gpu(handle, "nvmlDeviceGetPowerManagementDefaultLimit").power_default_mw


def nvmlDeviceGetPowerManagementLimitConstraints(handle: Handle) -> list[int]:
    return list(_gpu(handle, "nvmlDeviceGetPowerManagementLimitConstraints").power_constraints_mw)


def nvmlDeviceGetMaxClockInfo(handle: Handle, clock: int) -> int:
    return _gpu(handle, "nvmlDeviceGetMaxClockInfo").max_clocks[clock]


def nvmlDeviceGetCurrPcieLinkGeneration(handle: Handle) -> int:
    return _gpu(handle, "nvmlDeviceGetCurrPcieLinkGeneration").pcie[0]


def nvmlDeviceGetMaxPcieLinkGeneration(handle: Handle) -> int:
    return _gpu(handle, "nvmlDeviceGetMaxPcieLinkGeneration").pcie[1]


def nvmlDeviceGetCurrPcieLinkWidth(handle: Handle) -> int:
    return _gpu(handle, "nvmlDeviceGetCurrPcieLinkWidth").pcie[2]


def nvmlDeviceGetMaxPcieLinkWidth(handle: Handle) -> int:
    return _gpu(handle, "nvmlDeviceGetMaxPcieLinkWidth").pcie[3]


def nvmlDeviceGetNvLinkState(handle: Handle, link: int) -> int:
    gpu = _gpu(handle, "nvmlDeviceGetNvLinkState")
    if gpu.nvlinks is None:
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
    if link >= len(gpu.nvlinks):
        raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
    return NVML_FEATURE_ENABLED if gpu.nvlinks[link] else NVML_FEATURE_DISABLED


def nvmlDeviceGetNvLinkVersion(handle: Handle, link: int) -> int:
    return _gpu(handle, "nvmlDeviceGetNvLinkVersion").nvlink_version


def nvmlDeviceGetNvLinkRemotePciInfo(handle: Handle, link: int) -> SimpleNamespace:
    _gpu(handle, "nvmlDeviceGetNvLinkRemotePciInfo")
    return SimpleNamespace(busId=f"00000000:{0x80 + link:02x}:00.0".encode())


def nvmlDeviceGetArchitecture(handle: Handle) -> int:
    return _gpu(handle, "nvmlDeviceGetArchitecture").architecture


def nvmlDeviceGetCudaComputeCapability(handle: Handle) -> tuple[int, int]:
    return _gpu(handle, "nvmlDeviceGetCudaComputeCapability").compute_capability


# -- telemetry --------------------------------------------------------------------------------------------------
def nvmlDeviceGetUtilizationRates(handle: Handle) -> SimpleNamespace:
    gpu_pct, memory_pct = _gpu(handle, "nvmlDeviceGetUtilizationRates").utilization
    return SimpleNamespace(gpu=gpu_pct, memory=memory_pct)


def nvmlDeviceGetPowerUsage(handle: Handle) -> int:
    return _gpu(handle, "nvmlDeviceGetPowerUsage").power_usage_mw


def nvmlDeviceGetTotalEnergyConsumption(handle: Handle) -> int:
    gpu = _gpu(handle, "nvmlDeviceGetTotalEnergyConsumption")
    with STATE.lock:
        gpu.energy_mj += 120_500  # about 120 W for one second per read
        return gpu.energy_mj


def nvmlDeviceGetClockInfo(handle: Handle, clock: int) -> int:
    return _gpu(handle, "nvmlDeviceGetClockInfo").clocks[clock]


def nvmlDeviceGetTemperature(handle: Handle, sensor: int) -> int:
    return _gpu(handle, "nvmlDeviceGetTemperature").temperature


def nvmlDeviceGetCurrentClocksEventReasons(handle: Handle) -> int:
    return _gpu(handle, "nvmlDeviceGetCurrentClocksEventReasons").clock_event_reasons


def nvmlDeviceGetTotalEccErrors(handle: Handle, error_type: int, counter_type: int) -> int:
    return _gpu(handle, "nvmlDeviceGetTotalEccErrors").ecc_errors[error_type]


def nvmlEventSetCreate() -> object:
    return object()


def nvmlDeviceRegisterEvents(handle: Handle, event_types: int, event_set: object) -> None:
    _gpu(handle, "nvmlDeviceRegisterEvents")
    STATE.registered_for_xid.add(handle.index)


def nvmlEventSetWait_v2(event_set: object, timeout_ms: int) -> SimpleNamespace:
    with STATE.lock:
        for position, (index, xid) in enumerate(STATE.pending_xids):
            if index in STATE.registered_for_xid:
                del STATE.pending_xids[position]
                return SimpleNamespace(device=Handle(index), eventType=nvmlEventTypeXidCriticalError, eventData=xid)
    raise NVMLError(NVML_ERROR_TIMEOUT)


def nvmlEventSetFree(event_set: object) -> None:
    return None


# -- installing it ----------------------------------------------------------------------------------------------
def install(monkeypatch, gpus: list[FakeGpu] | None = None, init_error: int | None = None) -> FakeState:
    """Make `import pynvml` return this module, with a fresh state holding `gpus`."""
    global STATE
    STATE = FakeState(gpus=list(gpus or []), init_error=init_error)
    monkeypatch.setitem(sys.modules, "pynvml", sys.modules[__name__])
    return STATE
