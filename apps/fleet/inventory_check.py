"""Does a node's reported inventory match what the quote promised? (GPU model, memory, count, interconnect.)

Pure: takes the inventory object of docs/agent-protocol.md §6 and the expected node, returns the mismatches.
The quotes app calls it with the candidate's node and flags the candidate when the list is not empty.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

#: words in a marketing or driver name that say nothing about which GPU it is
_NOISE_WORDS = frozenset({"nvidia", "tesla", "geforce", "amd", "instinct", "gpu", "graphics"})
#: words that name a form factor or memory type: checked through the interconnect and memory, not the name
_FORM_FACTOR_WORDS = frozenset({"sxm", "sxm2", "sxm4", "sxm5", "sxm6", "pcie", "nvl", "hbm", "hbm2", "hbm2e",
                                "hbm3", "hbm3e", "oam", "superchip"})
_MEMORY_SIZE_WORD = re.compile(r"^\d+(gb|gib)$")


class Interconnect(StrEnum):
    NVLINK = "nvlink"
    PCIE = "pcie"


class MismatchField(StrEnum):
    GPU_PRESENT = "gpu_present"
    GPU_MODEL = "gpu_model"
    GPU_COUNT = "gpu_count"
    MEMORY = "memory"
    INTERCONNECT = "interconnect"


@dataclass(frozen=True)
class ExpectedNode:
    """What the quote says the node has. None means 'not stated': that part is not checked."""

    gpu_model: str | None = None
    gpu_count: int | None = None
    #: memory per GPU as the driver reports it (MiB); compare with the catalog's usable MiB where recorded
    memory_mib: int | None = None
    #: relative tolerance on memory: drivers reserve a little, datasheet "GB" are rounded
    memory_tolerance: float = 0.05
    interconnect: Interconnect | None = None
    #: NVLink links each GPU should have active (e.g. 18 on H100/H200 SXM); None: at least one
    nvlink_links_per_gpu: int | None = None


@dataclass(frozen=True)
class Mismatch:
    field: MismatchField
    expected: Any
    found: Any
    gpu_index: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"field": str(self.field), "expected": self.expected, "found": self.found, "gpu_index": self.gpu_index}


def name_words(name: str) -> list[str]:
    """The identifying words of a GPU name: lower case, without vendor, form-factor and memory-size words."""
    words = re.findall(r"[a-z0-9]+", name.lower())
    return [
        word
        for word in words
        if word not in _NOISE_WORDS and word not in _FORM_FACTOR_WORDS and not _MEMORY_SIZE_WORD.match(word)
    ]


def model_matches(expected_model: str, reported_name: str) -> bool:
    """True when every identifying word of the expected model appears in the reported name.

    'H200' matches 'NVIDIA H200'; 'H100 SXM' matches 'NVIDIA H100 80GB HBM3'; 'H100' does not match 'NVIDIA H200'.
    """
    expected = name_words(expected_model)
    reported = set(name_words(reported_name))
    return bool(expected) and all(word in reported for word in expected)


def _gpus(inventory: dict[str, Any]) -> list[dict[str, Any]]:
    gpus = inventory.get("gpus") or []
    return [gpu for gpu in gpus if isinstance(gpu, dict)]


def check_inventory(inventory: dict[str, Any], expected: ExpectedNode) -> list[Mismatch]:
    """Every way the reported inventory differs from the expected node (an empty list: it matches)."""
    gpus = _gpus(inventory)
    mismatches: list[Mismatch] = []
    expects_gpus = expected.gpu_model is not None or (expected.gpu_count or 0) > 0 or expected.memory_mib is not None
    if expects_gpus and (not inventory.get("gpu_present") or not gpus):
        mismatches.append(Mismatch(MismatchField.GPU_PRESENT, True, inventory.get("gpu_error") or False))
        if expected.gpu_count is not None:
            mismatches.append(Mismatch(MismatchField.GPU_COUNT, expected.gpu_count, 0))
        return mismatches

    if expected.gpu_count is not None and len(gpus) != expected.gpu_count:
        mismatches.append(Mismatch(MismatchField.GPU_COUNT, expected.gpu_count, len(gpus)))

    for position, gpu in enumerate(gpus):
        index = gpu.get("index", position)
        name = str(gpu.get("name") or "")
        if expected.gpu_model is not None and not model_matches(expected.gpu_model, name):
            mismatches.append(Mismatch(MismatchField.GPU_MODEL, expected.gpu_model, name or None, index))
        if expected.memory_mib is not None:
            reported = gpu.get("memory_total_mib")
            if not isinstance(reported, int | float) or isinstance(reported, bool):
                mismatches.append(Mismatch(MismatchField.MEMORY, expected.memory_mib, None, index))
            elif abs(reported - expected.memory_mib) > expected.memory_tolerance * expected.memory_mib:
                mismatches.append(Mismatch(MismatchField.MEMORY, expected.memory_mib, reported, index))
        if expected.interconnect == Interconnect.NVLINK:
            links = gpu.get("nvlink_active_links")
            wanted = expected.nvlink_links_per_gpu
            too_few = not isinstance(links, int) or links < (wanted if wanted is not None else 1)
            if too_few:
                mismatches.append(Mismatch(MismatchField.INTERCONNECT, wanted or Interconnect.NVLINK.value, links,
                                           index))
    return mismatches
