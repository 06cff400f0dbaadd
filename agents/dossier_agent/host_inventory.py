"""What this host is: CPU, memory, disks, OS, kernel, Python, container/VM hints, host name and machine id.

Uses psutil when installed and falls back to /proc and the standard library, so it also works when the agent runs
from its source folder on a machine without a package registry.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import socket
import uuid
from pathlib import Path
from typing import Any

_VIRTUAL_FILESYSTEMS = {"tmpfs", "devtmpfs", "overlay", "squashfs", "proc", "sysfs", "cgroup", "cgroup2", "nsfs"}
_HYPERVISOR_VENDORS = {
    "qemu": "kvm", "kvm": "kvm", "vmware": "vmware", "xen": "xen", "amazon ec2": "aws", "google": "gcp",
    "microsoft corporation": "hyperv", "innotek": "virtualbox", "openstack": "openstack", "oracle": "oracle",
}


def _read_text(path: str) -> str | None:
    try:
        return Path(path).read_text(errors="replace").strip()
    except OSError:
        return None


def machine_id() -> str:
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        value = _read_text(path)
        if value:
            return value
    fallback = f"{socket.gethostname()}-{uuid.getnode():012x}"
    return hashlib.sha256(fallback.encode()).hexdigest()[:32]


def cpu_model() -> str | None:
    cpuinfo = _read_text("/proc/cpuinfo") or ""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in {"model name", "Model", "Processor"} and value.strip():
            return value.strip()
    return platform.processor() or None


def cpu_cores() -> tuple[int | None, int | None]:
    try:
        import psutil

        return psutil.cpu_count(logical=False), psutil.cpu_count(logical=True)
    except ImportError:
        return None, os.cpu_count()


def memory_total_bytes() -> int | None:
    try:
        import psutil

        return psutil.virtual_memory().total
    except ImportError:
        pass
    for line in (_read_text("/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def disks() -> list[dict[str, Any]]:
    try:
        import psutil
    except ImportError:
        usage = shutil.disk_usage("/")
        return [{"mountpoint": "/", "device": None, "fstype": None, "total_bytes": usage.total,
                 "free_bytes": usage.free}]
    found = []
    for partition in psutil.disk_partitions(all=False):
        if partition.fstype in _VIRTUAL_FILESYSTEMS or partition.mountpoint.startswith(("/snap/", "/boot/efi")):
            continue
        try:
            usage = psutil.disk_usage(partition.mountpoint)
        except OSError:
            continue
        found.append({
            "mountpoint": partition.mountpoint,
            "device": partition.device,
            "fstype": partition.fstype,
            "total_bytes": usage.total,
            "free_bytes": usage.free,
        })
    return found


def os_name() -> str:
    try:
        release = platform.freedesktop_os_release()
        return release.get("PRETTY_NAME") or release.get("NAME") or platform.system()
    except OSError:
        return f"{platform.system()} {platform.release()}"


def container_hint() -> str | None:
    if Path("/.dockerenv").exists():
        return "docker"
    if Path("/run/.containerenv").exists():
        return "podman"
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    cgroup = _read_text("/proc/1/cgroup") or ""
    for marker, name in (("kubepods", "kubernetes"), ("docker", "docker"), ("containerd", "containerd"),
                         ("lxc", "lxc"), ("libpod", "podman")):
        if marker in cgroup:
            return name
    return None


def virtualization_hint() -> str | None:
    vendor = " ".join(
        filter(None, (_read_text("/sys/class/dmi/id/sys_vendor"), _read_text("/sys/class/dmi/id/product_name")))
    ).lower()
    for marker, name in _HYPERVISOR_VENDORS.items():
        if marker in vendor:
            return name
    cpuinfo = _read_text("/proc/cpuinfo") or ""
    if any(line.startswith("flags") and " hypervisor" in line for line in cpuinfo.splitlines()):
        return "unknown_hypervisor"
    return None


def collect_host_inventory() -> dict[str, Any]:
    physical, logical = cpu_cores()
    return {
        "hostname": socket.gethostname(),
        "machine_id": machine_id(),
        "os": os_name(),
        "kernel": platform.release(),
        "architecture": platform.machine(),
        "cpu_model": cpu_model(),
        "cpu_cores_physical": physical,
        "cpu_cores_logical": logical,
        "memory_total_bytes": memory_total_bytes(),
        "disks": disks(),
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "container": container_hint(),
        "virtualization": virtualization_hint(),
    }
