"""An estimate as a sum of named terms, each with its formula and inputs, and the CUDA-runtime and safety-margin
terms every estimate ends with."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction
from typing import Any

from apps.workloads.memory.errors import gettext_noop
from apps.workloads.memory.precisions import BYTES_PER_GIB

InputValue = int | float | str | bool


@dataclass(frozen=True)
class Term:
    """One addend of an estimate: its bytes, the formula that produced them and the values that went in."""

    name: str
    size_bytes: int
    formula: str
    inputs: Mapping[str, InputValue] = field(default_factory=dict)

    @property
    def size_gib(self) -> float:
        return self.size_bytes / BYTES_PER_GIB

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "size_bytes": self.size_bytes,
            "size_gib": self.size_gib,
            "formula": self.formula,
            "inputs": dict(self.inputs),
        }


# English labels for the UI; the web layer translates them (strings marked for makemessages). A media pipeline's
# other models add one "weights:<component>" term each (e.g. "weights:text_encoder_2"), shown by that name.
TERM_LABELS: dict[str, str] = {
    "weights": gettext_noop("Weights"),
    "frozen_base_weights": gettext_noop("Frozen base weights"),
    "gradients": gettext_noop("Gradients"),
    "optimizer_states": gettext_noop("Optimizer states (fp32 master, Adam moments)"),
    "kv_cache": gettext_noop("KV cache"),
    "linear_attention_state": gettext_noop("Linear-attention state (per session)"),
    "activation_peak": gettext_noop("Activation peak"),
    "activations": gettext_noop("Activations (transformer layers)"),
    "output_activations": gettext_noop("Activations (output layer and loss)"),
    "cuda_runtime": gettext_noop("CUDA context and runtime"),
    "safety_margin": gettext_noop("Safety margin"),
}


class EstimateKind(StrEnum):
    INFERENCE = "inference"
    TRAINING = "training"


@dataclass(frozen=True)
class Breakdown:
    """The memory each GPU needs: a sum of terms. `gpus` is how many GPUs share the job (t, or t × N)."""

    kind: EstimateKind
    terms: tuple[Term, ...]
    gpus: int = 1

    @property
    def total_bytes(self) -> int:
        return sum(term.size_bytes for term in self.terms)

    @property
    def total_gib(self) -> float:
        return self.total_bytes / BYTES_PER_GIB

    def term(self, name: str) -> Term:
        for term in self.terms:
            if term.name == name:
                return term
        raise KeyError(name)

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "gpus": self.gpus,
            "total_bytes": self.total_bytes,
            "total_gib": self.total_gib,
            "terms": [term.as_dict() for term in self.terms],
        }


# CUDA context with PyTorch, cuBLAS and attention kernels loaded: a bare PyTorch process shows about 0.5–0.75 GiB on
# the device before the first tensor (PyTorch forum, "GPU memory floor"), more with many kernels: 1 GiB.
DEFAULT_CUDA_CONTEXT_BYTES = 1 * BYTES_PER_GIB
# vLLM's default gpu_memory_utilization is 0.9: it keeps 10 % of the device free; the estimate adds the same margin.
DEFAULT_SAFETY_MARGIN_FRACTION = 0.10
# Upper bound of a stated overhead (CUDA context, runtime, activation peak): 1 TiB.
MAX_OVERHEAD_BYTES = 2**40


def runtime_term(cuda_context_bytes: int, runtime_overhead_bytes: int) -> Term:
    """The CUDA context and the runtime beyond the allocator (workspaces, CUDA graphs), as one term."""
    return Term(
        "cuda_runtime",
        cuda_context_bytes + runtime_overhead_bytes,
        "CUDA context + runtime (allocator, workspaces, CUDA graphs)",
        {"CUDA context": cuda_context_bytes, "runtime": runtime_overhead_bytes},
    )


def with_safety_margin(terms: list[Term], fraction: float) -> tuple[Term, ...]:
    """`terms` with the safety margin appended: `fraction` of their sum, rounded up."""
    subtotal = sum(term.size_bytes for term in terms)
    margin = math.ceil(subtotal * Fraction(fraction))
    terms.append(Term("safety_margin", margin, "margin·subtotal", {"margin": fraction, "subtotal": subtotal}))
    return tuple(terms)
