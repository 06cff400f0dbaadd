"""Provenance badges: how a figure's source (measured, quoted, estimated) and its reference are shown, with a link to
where the reference can be read. The comparison's badges reuse these."""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import NoReverseMatch, reverse
from django.utils.translation import gettext_lazy

from apps.evidence.models import CandidateFigure, FigureSource

SOURCE_LABELS = {
    "measured": gettext_lazy("measured"),
    "quoted": gettext_lazy("quoted"),
    "estimated": gettext_lazy("estimated"),
}


@dataclass(frozen=True)
class Badge:
    kind: str
    label: str
    title: str  # the references, data (shown in a translate="no" wrapper)
    url: str


def reference_url(reference: str, quote_url: str) -> str:
    """Where a provenance reference can be read: a price version, a cost line, a rate, a benchmark job or a URL."""
    kind, _colon, key = reference.partition(":")
    if reference.startswith(("https://", "http://")):
        return reference
    if not key.isdigit():
        return ""
    if kind == "price-version":
        return f"{quote_url}#price-{key}"
    if kind == "cost-line":
        return f"{quote_url}#cost-{key}"
    if kind == "quote":
        return quote_url
    if kind == "exchange-rate":
        return reverse("quotes:rate-list") + f"#rate-{key}"
    if kind == "job":
        try:
            return reverse("benchmarks:job-detail", args=[int(key)])
        except NoReverseMatch:
            return ""
    return ""


def input_badge(item: CandidateFigure, quote_url: str) -> Badge:
    estimated = item.source == FigureSource.ESTIMATED
    title = f"{item.estimated_by}: {item.estimate_reason}" if estimated else item.reference
    return Badge(item.source, str(SOURCE_LABELS[item.source]), title, reference_url(item.reference, quote_url))
