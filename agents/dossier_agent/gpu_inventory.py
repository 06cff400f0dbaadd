"""What NVML says about this node's GPUs: identity, memory, modes, limits, clocks, PCIe and NVLink.

Without the NVIDIA driver (or without pynvml) it returns `gpu_present: false` with the reason.
"""

from __future__ import annotations

import contextlib
from types import ModuleType
from typing import Any

from dossier_agent.nvml_util import constant, import_pynvml, read, to_text

_COMPUTE_MODES = {0: "default", 1: "exclusive_thread", 2: "prohibited", 3: "exclusive_process"}


def format_cuda_driver_version(value: int | None) -> str | None:
    """NVML gives 12040 for CUDA 12.4."""
    if value is None:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def _architecture_names(nvml: ModuleType) -> dict[int, str]:
    prefix = "NVML_DEVICE_ARCH_"
    return {
        getattr(nvml, name): name[len(prefix):].lower()
        for name in dir(nvml)
        if name.startswith(prefix) and isinstance(getattr(nvml, name), int)
    }


def _enabled_pair(value: Any) -> tuple[bool | None, bool | None]:
    if value is None:
        return None, None
    current, pending = value
    return bool(current), bool(pending)


def _nvlinks(nvml: ModuleType, handle: Any) -> tuple[bool, list[dict[str, Any]]]:
    links = []
    max_links = constant(nvml, "NVML_NVLINK_MAX_LINKS", 18)
    enabled = constant(nvml, "NVML_FEATURE_ENABLED", 1)
    for link in range(max_links):
        try:
            state = nvml.nvmlDeviceGetNvLinkState(handle, link)
        except nvml.NVMLError:
            break  # not supported on this board, or past the last link
        active = state == enabled
        remote = None
        if active:
            remote = read(
                nvml, "nvmlDeviceGetNvLinkRemotePciInfo", handle, link, convert=lambda info: to_text(info.busId)
            )
        links.append({
            "link": link,
            "active": active,
            "version": read(nvml, "nvmlDeviceGetNvLinkVersion", handle, link),
            "remote_pci_bus_id": remote,
        })
    return bool(links), links


def _mig_devices(nvml: ModuleType, handle: Any) -> list[dict[str, Any]]:
    devices = []
    count = read(nvml, "nvmlDeviceGetMaxMigDeviceCount", handle) or 0
    for index in range(count):
        try:
            mig_handle = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, index)
        except nvml.NVMLError:
            continue  # an empty slot
        memory = read(nvml, "nvmlDeviceGetMemoryInfo", mig_handle)
        devices.append({
            "index": index,
            "name": read(nvml, "nvmlDeviceGetName", mig_handle),
            "uuid": read(nvml, "nvmlDeviceGetUUID", mig_handle),
            "memory_total_mib": memory.total // (1024 * 1024) if memory is not None else None,
        })
    return devices


def describe_gpu(nvml: ModuleType, index: int, architectures: dict[int, str]) -> dict[str, Any]:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    memory = read(nvml, "nvmlDeviceGetMemoryInfo", handle)
    ecc_current, ecc_pending = _enabled_pair(read(nvml, "nvmlDeviceGetEccMode", handle))
    mig_current, mig_pending = _enabled_pair(read(nvml, "nvmlDeviceGetMigMode", handle))
    power_constraints = read(nvml, "nvmlDeviceGetPowerManagementLimitConstraints", handle)
    compute_capability = read(nvml, "nvmlDeviceGetCudaComputeCapability", handle)
    persistence = read(nvml, "nvmlDeviceGetPersistenceMode", handle)
    compute_mode = read(nvml, "nvmlDeviceGetComputeMode", handle)
    architecture = read(nvml, "nvmlDeviceGetArchitecture", handle)
    nvlink_supported, nvlinks = _nvlinks(nvml, handle)

    def milliwatts_to_watts(value: int) -> float:
        return value / 1000.0

    clock_sm = constant(nvml, "NVML_CLOCK_SM", 1)
    clock_memory = constant(nvml, "NVML_CLOCK_MEM", 2)
    clock_graphics = constant(nvml, "NVML_CLOCK_GRAPHICS", 0)
    return {
        "index": index,
        "name": read(nvml, "nvmlDeviceGetName", handle),
        "uuid": read(nvml, "nvmlDeviceGetUUID", handle),
        "serial": read(nvml, "nvmlDeviceGetSerial", handle),
        "pci_bus_id": read(nvml, "nvmlDeviceGetPciInfo", handle, convert=lambda info: to_text(info.busId)),
        "memory_total_mib": memory.total // (1024 * 1024) if memory is not None else None,
        "memory_total_bytes": memory.total if memory is not None else None,
        "ecc_mode_current": ecc_current,
        "ecc_mode_pending": ecc_pending,
        "mig_mode_current": mig_current,
        "mig_mode_pending": mig_pending,
        "mig_devices": _mig_devices(nvml, handle) if mig_current else [],
        "persistence_mode": bool(persistence) if persistence is not None else None,
        "compute_mode": _COMPUTE_MODES.get(compute_mode) if compute_mode is not None else None,
        "power_limit_w": read(nvml, "nvmlDeviceGetPowerManagementLimit", handle, convert=milliwatts_to_watts),
        "power_limit_default_w": read(
            nvml, "nvmlDeviceGetPowerManagementDefaultLimit", handle, convert=milliwatts_to_watts
        ),
        "power_limit_max_w": milliwatts_to_watts(power_constraints[1]) if power_constraints else None,
        "max_sm_clock_mhz": read(nvml, "nvmlDeviceGetMaxClockInfo", handle, clock_sm),
        "max_memory_clock_mhz": read(nvml, "nvmlDeviceGetMaxClockInfo", handle, clock_memory),
        "max_graphics_clock_mhz": read(nvml, "nvmlDeviceGetMaxClockInfo", handle, clock_graphics),
        "pcie_generation_current": read(nvml, "nvmlDeviceGetCurrPcieLinkGeneration", handle),
        "pcie_generation_max": read(nvml, "nvmlDeviceGetMaxPcieLinkGeneration", handle),
        "pcie_width_current": read(nvml, "nvmlDeviceGetCurrPcieLinkWidth", handle),
        "pcie_width_max": read(nvml, "nvmlDeviceGetMaxPcieLinkWidth", handle),
        "nvlink_supported": nvlink_supported,
        "nvlink": nvlinks,
        "nvlink_active_links": sum(1 for link in nvlinks if link["active"]),
        "architecture": architectures.get(architecture, "unknown") if architecture is not None else None,
        "cuda_compute_capability": f"{compute_capability[0]}.{compute_capability[1]}" if compute_capability else None,
    }


def no_gpu(reason: str) -> dict[str, Any]:
    return {
        "gpu_present": False,
        "gpu_error": reason,
        "driver_version": None,
        "cuda_driver_version": None,
        "nvml_version": None,
        "gpus": [],
    }


def collect_gpu_inventory() -> dict[str, Any]:
    nvml, reason = import_pynvml()
    if nvml is None:
        return no_gpu(reason)
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as error:
        return no_gpu(f"NVML unavailable: {to_text(str(error))}")
    try:
        count = nvml.nvmlDeviceGetCount()
        architectures = _architecture_names(nvml)
        gpus = [describe_gpu(nvml, index, architectures) for index in range(count)]
        return {
            "gpu_present": bool(gpus),
            "gpu_error": None if gpus else "NVML found no GPU",
            "driver_version": read(nvml, "nvmlSystemGetDriverVersion"),
            "cuda_driver_version": format_cuda_driver_version(read(nvml, "nvmlSystemGetCudaDriverVersion_v2")),
            "nvml_version": read(nvml, "nvmlSystemGetNVMLVersion"),
            "gpus": gpus,
        }
    except nvml.NVMLError as error:
        return no_gpu(f"NVML error while listing GPUs: {to_text(str(error))}")
    finally:
        with contextlib.suppress(nvml.NVMLError):
            nvml.nvmlShutdown()
