"""What the quotes show on the pages of lower apps (registered in QuotesConfig.ready, see apps/common/page_parts.py):
the fitting candidate with the lowest hourly price, on the workload version's page."""

from __future__ import annotations

from django.template.loader import render_to_string

from apps.common import page_parts
from apps.quotes.selectors import candidates_by_hourly_price
from apps.workloads.memory.breakdown import EstimateKind


def lowest_hourly_fitting_candidate(user, summary, report):
    """The candidate with the lowest hourly GPU price whose GPU holds one replica of this workload on one node (the
    cheapest fitting memory layout's t·pp GPUs; replicas may spread over nodes).

    Labelled as an hourly price on the page: the cost per accepted output is the comparison's to compute.
    """
    analysis = report.analysis
    if analysis is None or not summary.is_ready:
        return None
    serving = analysis.kind is EstimateKind.INFERENCE  # a training job needs all its data-parallel GPUs together
    gpus_needed = {
        item.gpu.key: (
            item.layout.gpus_per_replica
            if serving and item.layout is not None
            else 1
            if item.fit.fits
            else item.fewest_gpus
        )
        for item in analysis.fits
        if item.fit.fits or item.fewest_gpus is not None or (serving and item.layout is not None)
    }
    for row in candidates_by_hourly_price(user, summary):
        needed = gpus_needed.get(row.candidate.quote.gpu_id)
        if needed is not None and needed <= row.candidate.quote.gpus_per_node:
            return row
    return None


def lowest_hourly_on_summary(request, *, summary, report) -> str:
    row = lowest_hourly_fitting_candidate(request.user, summary, report)
    return render_to_string("quotes/partials/lowest_hourly.html", {"lowest_hourly": row}, request=request)


def register() -> None:
    page_parts.register("workloads.summary.lowest_hourly", lowest_hourly_on_summary)
