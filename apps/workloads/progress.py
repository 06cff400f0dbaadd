"""The progress strip of a workload version: summary ready → quotes → candidates → memory fit → throughput →
resilience → comparison → record, each step linking to the page that does it and saying what is missing.

Workloads sit below every app that owns a step, so the steps come through a registry (like apps/common/page_parts.py
and price_sources.py): the app that owns a step registers its provider in its AppConfig.ready() with
`register_step(order, provider)`; a provider is `provider(user, summary, known) -> Step | None` (None: nothing to
say for this workload). `known` is a dict the page may fill with what it has already computed (the comparison page
passes its `comparison`) and providers may share within one strip. The lower app never imports the higher one.

A rehearsal (a CPU or the built-in mock serving stack) is never a GPU measurement: a step whose only results are
rehearsals is REHEARSAL_ONLY, never DONE.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

DONE = "done"
IN_PROGRESS = "in_progress"
REHEARSAL_ONLY = "rehearsal_only"
MISSING = "missing"
STATES = (DONE, IN_PROGRESS, REHEARSAL_ONLY, MISSING)
STATE_LABELS = {
    DONE: gettext_lazy("done"),
    IN_PROGRESS: gettext_lazy("in progress"),
    REHEARSAL_ONLY: gettext_lazy("rehearsal only"),
    MISSING: gettext_lazy("missing"),
}

#: The order numbers of the steps, owned here so that the apps registering them agree on the sequence.
SUMMARY, QUOTES, CANDIDATES, MEMORY_FIT, THROUGHPUT, RESILIENCE, COMPARISON, RECORD = 10, 20, 30, 40, 50, 60, 70, 80


@dataclass(frozen=True)
class Step:
    """One step of the strip: its state, what is there or missing (`detail`), and the page that does it."""

    key: str
    label: str
    state: str
    detail: str = ""
    url: str = ""
    current: bool = False

    def __post_init__(self) -> None:
        if self.state not in STATES:
            raise ValueError(f"state must be one of {STATES}, got {self.state!r}")

    @property
    def state_label(self) -> str:
        return str(STATE_LABELS[self.state])

    @property
    def is_done(self) -> bool:
        return self.state == DONE


Provider = Callable[[Any, Any, dict], "Step | None"]
_providers: dict[int, Provider] = {}


def register_step(order: int, provider: Provider) -> None:
    """Put `provider` at position `order` (idempotent: registering the same order again keeps the last)."""
    _providers[order] = provider


def unregister_step(order: int) -> None:
    _providers.pop(order, None)


def registered() -> dict[int, Provider]:
    return dict(sorted(_providers.items()))


def steps(user, summary, known: dict | None = None) -> list[Step]:
    """Every registered step for this workload version, in order; the first step not done is the current one."""
    known = {} if known is None else known
    found = [step for _order, provider in sorted(_providers.items())
             if (step := provider(user, summary, known)) is not None]
    for index, step in enumerate(found):
        if not step.is_done:
            found[index] = replace(step, current=True)
            break
    return found


def render_strip(request, summary, known: dict | None = None) -> SafeString:
    """The strip as HTML (an ordered list, aria-current on the current step; no script needed)."""
    return render_to_string("workloads/partials/progress_strip.html",
                            {"steps": steps(request.user, summary, known), "summary": summary}, request=request)


def summary_step(user, summary, known: dict) -> Step:
    """Step 1, owned here: the summary is ready (frozen), or which fields are still empty."""
    from apps.workloads import readiness

    label = _("Summary ready")
    if summary.is_ready:
        return Step("summary", label, DONE, _("Version %(version)s is ready.") % {"version": summary.version},
                    summary.get_absolute_url())
    missing = readiness.missing_fields(summary)
    url = reverse("workloads:edit", args=[summary.pk])
    if missing:
        count = len(missing)
        detail = ngettext("%(count)d field is still empty.", "%(count)d fields are still empty.", count) % {
            "count": count}
        return Step("summary", label, IN_PROGRESS, detail, url)
    return Step("summary", label, IN_PROGRESS, _("Every field is filled: mark this version ready."),
                summary.get_absolute_url())
