"""The comparison's step of a workload's progress strip (apps/workloads/progress.py, registered in
ComparisonConfig.ready): every candidate normalised to a cost per accepted output, and the six-mistakes check clear
(or its findings waived)."""

from __future__ import annotations

from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from apps.comparison.selectors import comparison_for
from apps.quotes.progress_steps import candidates_of
from apps.workloads import progress


def comparison_step(user, summary, known: dict) -> progress.Step:
    label = _("Comparison")
    if not summary.is_ready or not candidates_of(summary, known):
        return progress.Step("comparison", label, progress.MISSING, _("Needs candidates first."))
    url = reverse("comparison:comparison", args=[summary.pk])
    comparison = known.get("comparison")
    if comparison is None:
        comparison = known["comparison"] = comparison_for(user, summary, details=False)
    unpriced = [result for result in comparison.results if result.row is None and result.training_row is None]
    if comparison.demand_problem is not None or unpriced:
        parts = []
        if comparison.demand_problem is not None:
            parts.append(_("The workload's demand is incomplete: %(message)s") % {
                "message": comparison.demand_problem.text})
        if unpriced:
            parts.append(ngettext("%(count)d candidate cannot be normalised yet (an input is missing).",
                                  "%(count)d candidates cannot be normalised yet (an input is missing).",
                                  len(unpriced)) % {"count": len(unpriced)})
        return progress.Step("comparison", label, progress.IN_PROGRESS, " ".join(parts), url)
    raised = comparison.raised_codes
    if raised:
        return progress.Step("comparison", label, progress.IN_PROGRESS,
                             ngettext("%(count)d rule of the mistakes check is raised.",
                                      "%(count)d rules of the mistakes check are raised.", len(raised))
                             % {"count": len(raised)}, url)
    count = len(comparison.results)
    return progress.Step("comparison", label, progress.DONE,
                         ngettext("%(count)d candidate normalised.", "%(count)d candidates normalised.", count)
                         % {"count": count}, url)


def register() -> None:
    progress.register_step(progress.COMPARISON, comparison_step)
