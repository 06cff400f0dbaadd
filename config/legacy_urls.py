"""Browser addresses that moved when the comparison and the candidate figures got apps of their own. Each old
address answers a permanent redirect to the new one, so bookmarks keep working; the object is looked up first, with
the same scoping as the page, so another team's id still answers 404. The query string travels with the redirect."""

from django.http import HttpResponsePermanentRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse

from apps.comparison.selectors import summary_get
from apps.evidence.selectors import figures_for
from apps.quotes.selectors import candidates_for


def _redirect(request, url_name: str, **kwargs) -> HttpResponsePermanentRedirect:
    target = reverse(url_name, kwargs=kwargs)
    query = request.META.get("QUERY_STRING", "")
    return HttpResponsePermanentRedirect(f"{target}?{query}" if query else target)


def comparison(url_name: str):
    def view(request, pk: int):
        summary_get(request.user, pk)
        return _redirect(request, url_name, pk=pk)

    return view


def candidate_figures(request, pk: int):
    get_object_or_404(candidates_for(request.user), pk=pk)
    return _redirect(request, "evidence:candidate-figures", pk=pk)


def figure_edit(request, pk: int):
    get_object_or_404(figures_for(request.user), pk=pk)
    return _redirect(request, "evidence:figure-edit", pk=pk)


urlpatterns = [
    path("decisions/workloads/<int:pk>/comparison/", comparison("comparison:comparison"),
         name="legacy-comparison"),
    path("decisions/workloads/<int:pk>/comparison/print/", comparison("comparison:comparison-print"),
         name="legacy-comparison-print"),
    path("decisions/workloads/<int:pk>/comparison.csv", comparison("comparison:comparison-csv"),
         name="legacy-comparison-csv"),
    path("decisions/workloads/<int:pk>/comparison.xlsx", comparison("comparison:comparison-xlsx"),
         name="legacy-comparison-xlsx"),
    path("decisions/candidates/<int:pk>/inputs/", candidate_figures, name="legacy-candidate-inputs"),
    path("decisions/inputs/<int:pk>/edit/", figure_edit, name="legacy-input-edit"),
]
