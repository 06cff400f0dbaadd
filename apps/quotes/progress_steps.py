"""The quotes' steps of a workload's progress strip (apps/workloads/progress.py, registered in QuotesConfig.ready):
the team has priced quotes, and this workload version has candidates."""

from __future__ import annotations

from django.db.models import Count, Q
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from apps.quotes.models import Candidate, Quote
from apps.workloads import progress


def candidates_of(summary, known: dict) -> list[Candidate]:
    """The candidates of this workload version (shared with the later steps through `known`)."""
    if "candidates" not in known and known.get("comparison") is not None:
        known["candidates"] = [result.candidate for result in known["comparison"].results]
    if "candidates" not in known:
        known["candidates"] = list(Candidate.objects.filter(workload_summary=summary, team_id=summary.team_id)
                                   .select_related("quote").order_by("label", "pk"))
    return known["candidates"]


def quotes_step(user, summary, known: dict) -> progress.Step:
    label = _("Quotes")
    counts = Quote.objects.filter(team_id=summary.team_id).aggregate(
        total=Count("pk", distinct=True), priced=Count("pk", filter=Q(price_versions__isnull=False), distinct=True))
    total = counts["total"]
    if not total:
        return progress.Step("quotes", label, progress.MISSING, _("No quote entered yet."),
                             reverse("quotes:quote-create"))
    unpriced = total - counts["priced"]
    url = reverse("quotes:quote-list")
    if unpriced == total:
        return progress.Step("quotes", label, progress.IN_PROGRESS,
                             ngettext("%(count)d quote has no price yet.", "%(count)d quotes have no price yet.",
                                      unpriced) % {"count": unpriced}, url)
    priced = total - unpriced
    detail = ngettext("%(count)d priced quote.", "%(count)d priced quotes.", priced) % {"count": priced}
    if unpriced:
        detail += " " + ngettext("%(count)d quote has no price yet.", "%(count)d quotes have no price yet.",
                                 unpriced) % {"count": unpriced}
    return progress.Step("quotes", label, progress.DONE, detail, url)


def candidates_step(user, summary, known: dict) -> progress.Step:
    label = _("Candidates")
    if not summary.is_ready:
        return progress.Step("candidates", label, progress.MISSING,
                             _("Mark the summary ready first: a candidate attaches to a ready version."))
    candidates = candidates_of(summary, known)
    if not candidates:
        url = reverse("quotes:candidate-create") + "?" + urlencode({"workload_summary": summary.pk})
        return progress.Step("candidates", label, progress.MISSING,
                             _("No quote is a candidate for this version yet."), url)
    count = len(candidates)
    return progress.Step(
        "candidates", label, progress.DONE,
        ngettext("%(count)d candidate.", "%(count)d candidates.", count) % {"count": count},
        reverse("quotes:candidate-list") + "?" + urlencode({"workload_summary": summary.pk}),
    )


def register() -> None:
    progress.register_step(progress.QUOTES, quotes_step)
    progress.register_step(progress.CANDIDATES, candidates_step)
