"""The readiness gate: which of the fields that apply to a workload type are still empty, and why each matters.

Plain Python over any object with the summary's attributes (a saved WorkloadSummary, an unsaved one built from a
half-filled form, or a SimpleNamespace in tests). The table itself is data: rules.READINESS.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from apps.workloads import rules

# The layer shape that a parameter count can be computed from (ModelShape.has_layer_shape).
LAYER_SHAPE_FIELDS = ("num_layers", "hidden_size", "num_attention_heads", "vocab_size")
ARCHITECTURES_WITHOUT_DERIVED_COUNT = frozenset({"diffusion", "other"})


@dataclass(frozen=True)
class MissingField:
    """One empty field that the workload type needs, with the requirement that asks for it."""

    field: str
    requirement: rules.Requirement


def is_empty(value: Any) -> bool:
    return value is None or value == "" or (isinstance(value, list | tuple | set | frozenset) and not value)


def _value(summary: Any, name: str) -> Any:
    return getattr(summary, name, None)


def _has_ffn(summary: Any) -> bool:
    return not is_empty(_value(summary, "ffn_size")) or not is_empty(_value(summary, "expert_ffn_size"))


def _has_parameter_count(summary: Any) -> bool:
    if not is_empty(_value(summary, "params")):
        return True
    if _value(summary, "architecture") in ARCHITECTURES_WITHOUT_DERIVED_COUNT:
        return False
    return all(not is_empty(_value(summary, name)) for name in LAYER_SHAPE_FIELDS) and _has_ffn(summary)


CHECKS = {
    "parameter_count": _has_parameter_count,
    "ffn": _has_ffn,
}


def applicable_requirements(workload_type: str | None) -> tuple[rules.Requirement, ...]:
    """The requirements for this workload type; with no type yet, those that apply to every type."""
    if not workload_type or workload_type not in rules.ALL:
        return tuple(requirement for requirement in rules.READINESS if requirement.applies_to == rules.ALL)
    return tuple(requirement for requirement in rules.READINESS if workload_type in requirement.applies_to)


def applicable_fields(workload_type: str | None) -> frozenset[str]:
    return frozenset(name for requirement in applicable_requirements(workload_type) for name in requirement.fields)


def _conditions_hold(summary: Any, requirement: rules.Requirement) -> bool:
    return all(_value(summary, name) in accepted for name, accepted in requirement.when.items())


def missing_fields(summary: Any) -> list[MissingField]:
    """Every empty field that applies to the summary's workload type, in the order of rules.READINESS."""
    missing: list[MissingField] = []
    for requirement in applicable_requirements(_value(summary, "workload_type")):
        if not _conditions_hold(summary, requirement):
            continue
        if requirement.check != "present":
            if not CHECKS[requirement.check](summary):
                missing.extend(MissingField(name, requirement) for name in requirement.fields)
            continue
        missing.extend(
            MissingField(name, requirement) for name in requirement.fields if is_empty(_value(summary, name))
        )
    return missing


def is_ready(summary: Any) -> bool:
    return not missing_fields(summary)


def fields_of(missing: Iterable[MissingField]) -> list[str]:
    return [item.field for item in missing]
