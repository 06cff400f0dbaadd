"""The rehearsal label: every page that shows a benchmark result says when it was a rehearsal (a run on a CPU or
against the built-in mock serving stack), never a measurement of a GPU."""

from __future__ import annotations

from django import template

from apps.benchmarks.measurements import REHEARSAL_LABEL, reason_labels

register = template.Library()


@register.inclusion_tag("benchmarks/partials/rehearsal_label.html")
def rehearsal_label(result):
    """The label of a rehearsal result (nothing for a GPU measurement)."""
    return {"rehearsal": bool(getattr(result, "rehearsal", False)), "label": REHEARSAL_LABEL,
            "reasons": reason_labels(getattr(result, "rehearsal_reasons", ()))}
