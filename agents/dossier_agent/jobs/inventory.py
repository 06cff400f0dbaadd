"""The `inventory` job: what this node really is (GPUs through NVML, host, software), as result and artifact."""

from __future__ import annotations

import json
from typing import Any

from dossier_agent.inventory import collect_inventory

KIND = "inventory"
SELF_TEST_SPEC: dict[str, Any] = {}


def run(spec: dict[str, Any], ctx) -> dict[str, Any]:
    ctx.progress(0.0, "collecting the inventory")
    inventory = collect_inventory()
    ctx.add_artifact(
        json.dumps(inventory, indent=2, sort_keys=True).encode(), "inventory.json", "application/json"
    )
    ctx.log(
        "inventory collected",
        gpu_present=inventory["gpu_present"],
        gpus=len(inventory["gpus"]),
        gpu_error=inventory["gpu_error"],
        cpu=inventory["host"]["cpu_model"],
    )
    ctx.progress(1.0, "done")
    return inventory
