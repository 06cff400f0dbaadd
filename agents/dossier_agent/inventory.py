"""The inventory object of the protocol (docs/agent-protocol.md §6): GPUs, host and software in one dict."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from dossier_agent.gpu_inventory import collect_gpu_inventory
from dossier_agent.host_inventory import collect_host_inventory
from dossier_agent.software_inventory import collect_software_inventory
from dossier_agent.timeutil import utc_now_iso

INVENTORY_SCHEMA = 1


def collect_inventory() -> dict[str, Any]:
    return {
        "schema": INVENTORY_SCHEMA,
        "collected_at": utc_now_iso(),
        **collect_gpu_inventory(),
        "host": collect_host_inventory(),
        "software": collect_software_inventory(),
    }


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def inventory_sha256(inventory: dict[str, Any]) -> str:
    """Hash of what identifies the node, leaving out what changes by itself (collection time, free disk space)."""
    stable = copy.deepcopy(inventory)
    stable.pop("collected_at", None)
    for disk in stable.get("host", {}).get("disks", []):
        disk.pop("free_bytes", None)
    return hashlib.sha256(canonical_json(stable)).hexdigest()
