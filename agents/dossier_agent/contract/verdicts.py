"""Verdict math the agent and the server both apply to a measurement: an acceptance check's ratio to its datasheet
figure and its verdict, and an all-reduce's bus bandwidth as nccl-tests defines it (`doc/PERFORMANCE.md` there).

The agent judges on the node; the server re-judges the agent's numbers with the same functions at ingest.
"""

from __future__ import annotations

import math

# ----------------------------------------------------------------------------------------------------------------------
# Acceptance checks: measured against the datasheet
# ----------------------------------------------------------------------------------------------------------------------


def ratio(measured: float | None, datasheet: float | None) -> float | None:
    """measured / datasheet, or None when either is missing (or the datasheet value is not positive)."""
    if measured is None or datasheet is None or not datasheet > 0 or not math.isfinite(measured):
        return None
    return measured / datasheet


def check_verdict(label: str, measured: float | None, datasheet: float | None,
                  threshold: float | None) -> tuple[str, float | None]:
    """(verdict, ratio). A CPU figure is never compared with a GPU datasheet."""
    if label != "cuda":
        return "not_applicable", None
    if measured is None:
        return "error", None
    value = ratio(measured, datasheet)
    if value is None:
        return "no_reference", None
    if threshold is None:
        return "no_reference", value
    return ("pass" if value >= threshold else "below_threshold"), value


# ----------------------------------------------------------------------------------------------------------------------
# All-reduce
# ----------------------------------------------------------------------------------------------------------------------


def bus_bandwidth(size_bytes: int, seconds: float, ranks: int) -> tuple[float, float]:
    """(algbw, busbw) in bytes/s for one all-reduce of `size_bytes` over `ranks` ranks taking `seconds`."""
    if seconds <= 0 or ranks < 1:
        raise ValueError("seconds must be positive and ranks at least 1")
    algbw = size_bytes / seconds
    return algbw, algbw * 2 * (ranks - 1) / ranks
