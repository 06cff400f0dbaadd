"""Inventory through the real NVML code path, with a fake `pynvml` module standing in for the driver."""

import fake_pynvml
from dossier_agent import gpu_inventory, software_inventory
from dossier_agent.inventory import collect_inventory, inventory_sha256
from fake_pynvml import FakeGpu

MIB = 1024 * 1024


def test_every_gpu_field_comes_from_nvml(monkeypatch):
    fake_pynvml.install(monkeypatch, [
        FakeGpu(uuid="GPU-aaaa"),
        FakeGpu(name="NVIDIA A100-SXM4-80GB", uuid="GPU-bbbb", memory_total=81920 * MIB, pcie=(3, 4, 8, 16),
                nvlinks=[True] * 6 + [False] * 6, nvlink_version=3, architecture=fake_pynvml.NVML_DEVICE_ARCH_AMPERE,
                compute_capability=(8, 0), persistence=0, ecc=(0, 1), power_limit_mw=400000),
    ])

    inventory = gpu_inventory.collect_gpu_inventory()

    assert inventory["gpu_present"] is True
    assert inventory["gpu_error"] is None
    assert inventory["driver_version"] == "550.54.15"
    assert inventory["cuda_driver_version"] == "12.4"
    h200, a100 = inventory["gpus"]
    assert h200["name"] == "NVIDIA H200"
    assert h200["memory_total_mib"] == 143771  # as the driver reports it, not a datasheet figure
    assert h200["memory_total_bytes"] == 143771 * MIB
    assert h200["pci_bus_id"] == "00000000:19:00.0"  # bytes from older bindings become text
    assert h200["ecc_mode_current"] is True
    assert h200["mig_mode_current"] is False
    assert h200["persistence_mode"] is True
    assert h200["compute_mode"] == "default"
    assert h200["power_limit_w"] == 700.0
    assert h200["power_limit_max_w"] == 700.0
    assert (h200["max_sm_clock_mhz"], h200["max_memory_clock_mhz"]) == (1980, 3201)
    assert h200["nvlink_active_links"] == 18
    assert h200["nvlink"][0] == {"link": 0, "active": True, "version": 4, "remote_pci_bus_id": "00000000:80:00.0"}
    assert h200["architecture"] == "hopper"
    assert h200["cuda_compute_capability"] == "9.0"
    assert a100["memory_total_mib"] == 81920
    assert (a100["pcie_generation_current"], a100["pcie_generation_max"]) == (3, 4)
    assert (a100["pcie_width_current"], a100["pcie_width_max"]) == (8, 16)
    assert a100["nvlink_active_links"] == 6
    assert len(a100["nvlink"]) == 12
    assert a100["nvlink"][7]["remote_pci_bus_id"] is None  # inactive link: no remote end
    assert a100["ecc_mode_current"] is False and a100["ecc_mode_pending"] is True
    assert a100["persistence_mode"] is False
    assert a100["power_limit_w"] == 400.0
    assert a100["architecture"] == "ampere"
    assert fake_pynvml.STATE.initialised == 0  # NVML shut down again


def test_unsupported_fields_are_null_and_the_rest_is_still_read(monkeypatch):
    fake_pynvml.install(monkeypatch, [FakeGpu(
        nvlinks=None,
        unsupported={"nvmlDeviceGetEccMode", "nvmlDeviceGetPowerManagementLimit", "nvmlDeviceGetSerial",
                     "nvmlDeviceGetArchitecture"},
    )])

    gpu = gpu_inventory.collect_gpu_inventory()["gpus"][0]

    assert gpu["ecc_mode_current"] is None and gpu["ecc_mode_pending"] is None
    assert gpu["power_limit_w"] is None
    assert gpu["serial"] is None
    assert gpu["architecture"] is None
    assert gpu["nvlink_supported"] is False and gpu["nvlink"] == [] and gpu["nvlink_active_links"] == 0
    assert gpu["memory_total_mib"] == 143771
    assert gpu["power_limit_default_w"] == 700.0


def test_mig_instances_are_listed_when_mig_is_on(monkeypatch):
    fake_pynvml.install(monkeypatch, [FakeGpu(mig=(1, 1), mig_devices=[
        {"name": "NVIDIA H200 MIG 1g.18gb", "uuid": "MIG-1", "memory_total": 16384 * MIB},
        {"name": "NVIDIA H200 MIG 3g.71gb", "uuid": "MIG-2", "memory_total": 71 * 1024 * MIB},
    ])])

    gpu = gpu_inventory.collect_gpu_inventory()["gpus"][0]

    assert gpu["mig_mode_current"] is True
    assert [device["uuid"] for device in gpu["mig_devices"]] == ["MIG-1", "MIG-2"]
    assert gpu["mig_devices"][0]["memory_total_mib"] == 16384


def test_without_the_nvidia_driver_it_says_so_and_still_describes_the_host(monkeypatch):
    fake_pynvml.install(monkeypatch, init_error=fake_pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    monkeypatch.setattr(software_inventory, "probe_torch", lambda: {"torch_version": None, "torch_error": "skipped"})

    inventory = collect_inventory()

    assert inventory["gpu_present"] is False
    assert inventory["gpus"] == []
    assert "NVML Shared Library Not Found" in inventory["gpu_error"]
    host = inventory["host"]
    assert host["cpu_cores_logical"] >= 1
    assert host["memory_total_bytes"] > 0
    assert host["hostname"] and host["machine_id"] and host["kernel"] and host["python_version"]
    assert host["disks"] and host["disks"][0]["total_bytes"] > 0


def test_without_pynvml_installed_it_says_so(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "pynvml", None)  # makes `import pynvml` raise ImportError

    inventory = gpu_inventory.collect_gpu_inventory()

    assert inventory["gpu_present"] is False
    assert "nvidia-ml-py" in inventory["gpu_error"]


def test_nvml_with_no_gpu_is_not_a_gpu_node(monkeypatch):
    fake_pynvml.install(monkeypatch, [])

    inventory = gpu_inventory.collect_gpu_inventory()

    assert inventory["gpu_present"] is False
    assert inventory["gpu_error"] == "NVML found no GPU"


def test_inventory_hash_ignores_collection_time_and_free_space_but_not_hardware(monkeypatch):
    fake_pynvml.install(monkeypatch, [FakeGpu()])
    monkeypatch.setattr(software_inventory, "probe_torch", lambda: {"torch_version": "2.11.0"})
    first = collect_inventory()
    second = collect_inventory()
    second["collected_at"] = "2030-01-01T00:00:00.000Z"
    for disk in second["host"]["disks"]:
        disk["free_bytes"] = 1
    assert inventory_sha256(first) == inventory_sha256(second)

    second["gpus"][0]["memory_total_mib"] = 1
    assert inventory_sha256(first) != inventory_sha256(second)


def test_torch_versions_are_probed_in_a_child_interpreter_without_importing_torch_here():
    import sys

    had_torch = "torch" in sys.modules
    versions = software_inventory.probe_torch.__wrapped__()

    assert ("torch" in sys.modules) == had_torch
    try:
        import importlib.util

        torch_installed = importlib.util.find_spec("torch") is not None
    except ImportError:
        torch_installed = False
    if torch_installed:
        assert versions["torch_error"] is None
        assert versions["torch_version"]
    else:
        assert versions["torch_error"] == "torch is not installed"


def test_torch_missing_is_reported_not_raised(monkeypatch):
    monkeypatch.setattr(software_inventory.importlib.util, "find_spec", lambda name: None)

    versions = software_inventory.probe_torch.__wrapped__()

    assert versions["torch_version"] is None
    assert versions["torch_error"] == "torch is not installed"
