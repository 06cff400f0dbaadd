"""Browser pages of the quotes app: vendors, quotes with their prices, cost lines, documents and checklist, the
comparison table, import/export, exchange rates, stale prices and candidates.

Reads are open to every role of the owning team; writes need the platform or admin role (finance and product get
403). Every object is fetched through a `for_user` queryset, so a user of another team gets 404.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from apps.accounts.roles import Role, has_role
from apps.common import page_parts
from apps.common.forms import add_service_errors
from apps.quotes import checklist_prefill, exporting, importing, selectors, services
from apps.quotes.filters import CandidateFilterSet, QuoteFilterSet
from apps.quotes.forms import (
    CandidateForm,
    ChecklistFormSet,
    CostLineForm,
    DocumentForm,
    ExchangeRateForm,
    ImportForm,
    PriceVersionForm,
    QuoteForm,
    VendorForm,
)
from apps.quotes.models import (
    CostLine,
    PriceComponent,
    Quote,
    QuoteDocument,
)
from apps.workloads import progress


def can_write(user) -> bool:
    return has_role(user, Role.PLATFORM, Role.ADMIN)


def _require_writer(request) -> None:
    if not can_write(request.user):
        raise PermissionDenied(_("Only the platform and admin roles may change quotes."))


def _active_team(request):
    team = getattr(request, "active_team", None)
    if not team:
        raise PermissionDenied(_("You belong to no team yet: ask an admin."))
    return team


# ---------------------------------------------------------------------------------------------------------------
# Vendors


def vendor_list(request):
    team = getattr(request, "active_team", None)
    vendors = selectors.vendors_for(request.user)
    if team:
        vendors = vendors.filter(team=team)
    return render(request, "quotes/vendor_list.html", {"vendors": vendors, "can_write": can_write(request.user)})


def vendor_detail(request, pk: int):
    vendor = get_object_or_404(selectors.vendors_for(request.user), pk=pk)
    quotes = selectors.quotes_for(request.user).filter(vendor=vendor)
    return render(
        request,
        "quotes/vendor_detail.html",
        {
            "vendor": vendor,
            "rows": selectors.comparison_rows(quotes, vendor.team),
            "can_write": can_write(request.user),
        },
    )


def vendor_create(request):
    _require_writer(request)
    team = _active_team(request)
    form = VendorForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            vendor = services.vendor_create(actor=request.user, team=team, **form.cleaned_data)
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, _("Vendor %(name)s saved.") % {"name": vendor.name})
            if request.GET.get("next") == "quote":
                return redirect("quotes:quote-create")
            return redirect(vendor)
    return render(request, "quotes/vendor_form.html", {"form": form, "vendor": None})


def vendor_edit(request, pk: int):
    _require_writer(request)
    vendor = get_object_or_404(selectors.vendors_for(request.user), pk=pk)
    form = VendorForm(request.POST or None, instance=vendor)
    if request.method == "POST" and form.is_valid():
        try:
            services.vendor_update(actor=request.user, vendor=vendor, **form.cleaned_data)
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, _("Vendor %(name)s saved.") % {"name": vendor.name})
            return redirect(vendor)
    return render(request, "quotes/vendor_form.html", {"form": form, "vendor": vendor})


# ---------------------------------------------------------------------------------------------------------------
# Quotes: the comparison table, detail, create and edit


def quote_list(request):
    """The comparison table of the active team's quotes, sortable, in the team's reporting currency."""
    team = getattr(request, "active_team", None)
    queryset = selectors.quotes_for(request.user)
    queryset = queryset.filter(team=team) if team else queryset.none()
    filterset = QuoteFilterSet(request.GET or None, queryset=queryset, request=request)
    rows = selectors.comparison_rows(filterset.qs, team) if team else []
    return render(
        request,
        "quotes/quote_list.html",
        {"filterset": filterset, "rows": rows, "team": team, "can_write": can_write(request.user)},
    )


def _quote_context(request, quote: Quote) -> dict:
    now = timezone.now()
    prices = selectors.current_prices(quote)
    days = quote.team.stale_price_age_days
    current = [
        {
            "price": price,
            "freshness": selectors.freshness_of(price, stale_after_days=days, now=now),
        }
        for component in PriceComponent.values
        if (price := prices.get(component)) is not None
    ]
    cost_lines = list(
        CostLine.objects.filter(quote=quote).select_related("estimated_by", "candidate", "entered_by", "replaced_by")
    )
    rates = selectors.RateBook(quote.team)
    return {
        "quote": quote,
        "current_prices": current,
        "history": selectors.price_history(quote),
        "freshness": selectors.quote_freshness(quote, now=now),
        "missing_prices": selectors.missing_prices(quote, prices),
        "current_cost_lines": [line for line in cost_lines if line.is_current],
        "old_cost_lines": [line for line in cost_lines if not line.is_current],
        "documents": QuoteDocument.objects.filter(quote=quote).select_related("uploaded_by"),
        "progress": selectors.checklist_progress(quote),
        "policy": selectors.policy_check(quote, rates=rates),
        "candidates": quote.candidates.all(),
        "can_write": can_write(request.user),
        # What higher apps show on this page (candidates whose GPU acceptance check fell short).
        "parts": {"flags": page_parts.render("quotes.quote.flags", request, quote=quote)},
        "labor_missing": quote.is_api_route is False
        and not any(line.kind == "platform_labor" and line.amount > 0 for line in cost_lines if line.is_current),
    }


def quote_detail(request, pk: int):
    quote = selectors.quote_get(request.user, pk)
    return render(request, "quotes/quote_detail.html", _quote_context(request, quote))


def quote_create(request):
    _require_writer(request)
    team = _active_team(request)
    form = QuoteForm(request.POST or None, team=team)
    if request.method == "POST" and form.is_valid():
        try:
            quote = services.quote_create(actor=request.user, team=team, **form.cleaned_data)
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(
                request, _("Quote saved. Now record its prices and answer the procurement checklist.")
            )
            return redirect("quotes:quote-checklist", pk=quote.pk)
    return render(request, "quotes/quote_form.html", {"form": form, "quote": None})


def quote_edit(request, pk: int):
    _require_writer(request)
    quote = selectors.quote_get(request.user, pk)
    form = QuoteForm(request.POST or None, instance=quote, team=quote.team)
    if request.method == "POST" and form.is_valid():
        try:
            services.quote_update(actor=request.user, quote=quote, **form.cleaned_data)
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, _("Quote saved."))
            return redirect(quote)
    return render(request, "quotes/quote_form.html", {"form": form, "quote": quote})


# ---------------------------------------------------------------------------------------------------------------
# Prices, documents and cost lines


def price_create(request, pk: int):
    _require_writer(request)
    quote = selectors.quote_get(request.user, pk)
    initial = {"component": request.GET.get("component")} if request.GET.get("component") else None
    form = PriceVersionForm(request.POST or None, request.FILES or None, quote=quote, initial=initial)
    if request.method == "POST" and form.is_valid():
        values, upload = form.service_values()
        try:
            if upload is not None:
                version = services.price_record_citing_upload(
                    actor=request.user, quote=quote, upload=upload, **values
                )
            else:
                version = services.price_record(actor=request.user, quote=quote, **values)
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(
                request,
                _("%(item)s recorded as version %(number)s; earlier versions stay in the history.")
                % {"item": version.get_component_display(), "number": version.number},
            )
            return redirect(quote)
    return render(request, "quotes/price_form.html", {"form": form, "quote": quote, "multipart": True})


def document_upload(request, pk: int):
    _require_writer(request)
    quote = selectors.quote_get(request.user, pk)
    form = DocumentForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            document = services.document_attach(
                actor=request.user,
                quote=quote,
                upload=form.cleaned_data["file"],
                description=form.cleaned_data["description"],
            )
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, _("%(name)s attached.") % {"name": document.original_name})
            return redirect(quote)
    return render(request, "quotes/document_form.html", {"form": form, "quote": quote, "multipart": True})


def document_download(request, pk: int):
    document = get_object_or_404(QuoteDocument.objects.for_user(request.user), pk=pk)
    try:
        handle = document.file.open("rb")
    except FileNotFoundError:
        raise Http404 from None
    return FileResponse(handle, as_attachment=True, filename=document.original_name)


def cost_line_create(request, pk: int):
    _require_writer(request)
    quote = selectors.quote_get(request.user, pk)
    form = CostLineForm(request.POST or None, quote=quote, initial={"kind": request.GET.get("kind")})
    if request.method == "POST" and form.is_valid():
        try:
            services.cost_line_add(actor=request.user, quote=quote, **form.service_values())
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, _("Cost line saved."))
            return redirect(quote)
    return render(request, "quotes/cost_line_form.html", {"form": form, "quote": quote, "line": None})


def cost_line_edit(request, pk: int):
    _require_writer(request)
    line = get_object_or_404(CostLine.objects.for_user(request.user).current().select_related("quote"), pk=pk)
    quote = line.quote
    form = CostLineForm(request.POST or None, instance=line, quote=quote)
    if request.method == "POST" and form.is_valid():
        try:
            services.cost_line_replace(actor=request.user, line=line, **form.service_values())
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, _("Cost line replaced; the old line stays in the history."))
            return redirect(quote)
    return render(request, "quotes/cost_line_form.html", {"form": form, "quote": quote, "line": line})


@require_POST
def cost_line_remove(request, pk: int):
    _require_writer(request)
    line = get_object_or_404(CostLine.objects.for_user(request.user).current().select_related("quote"), pk=pk)
    services.cost_line_remove(actor=request.user, line=line)
    messages.success(request, _("Cost line removed; it stays in the history."))
    return redirect(line.quote)


# ---------------------------------------------------------------------------------------------------------------
# The checklist: every question on one page, saved in one transaction (a section alone can be saved too, by htmx)


def _checklist_formset(quote: Quote, data=None) -> ChecklistFormSet:
    sections = selectors.checklist_sections(quote)
    return ChecklistFormSet(data, quote=quote, sections=sections, facts=checklist_prefill.quote_facts(quote))


def _save_checklist(request, quote: Quote, formset: ChecklistFormSet) -> bool:
    """Validate every form, then save every answer given, or none. True when saved."""
    if not formset.is_valid():
        return False
    try:
        services.checklist_answers_set(actor=request.user, quote=quote, answers=formset.answer_inputs())
    except ValidationError as error:
        formset.add_refusal(error)
        return False
    return True


def _section_context(request, quote: Quote, section, forms) -> dict:
    return {
        "quote": quote,
        "section": section,
        "forms": forms,
        "can_write": can_write(request.user),
        "progress": selectors.checklist_progress(quote),
    }


def quote_checklist(request, pk: int):
    """GET: every question, one form. POST (platform/admin): save all the answers given in one transaction; a refusal
    saves nothing and shows each error on its question (400)."""
    quote = selectors.quote_get(request.user, pk)
    formset = None
    if request.method == "POST":
        _require_writer(request)
        formset = _checklist_formset(quote, request.POST)
        if _save_checklist(request, quote, formset):
            messages.success(request, _("Checklist saved."))
            return redirect("quotes:quote-checklist", pk=quote.pk)
    formset = formset or _checklist_formset(quote)
    return render(
        request,
        "quotes/checklist.html",
        {
            "quote": quote,
            "formset": formset,
            "refused": formset.has_errors,
            "sections": [
                _section_context(request, quote, section, forms) for section, forms in formset.sections
            ],
            "progress": selectors.checklist_progress(quote),
            "policy": selectors.policy_check(quote),
            "can_write": can_write(request.user),
        },
        status=400 if formset.has_errors else 200,
    )


# ---------------------------------------------------------------------------------------------------------------
# Import and export


def quote_import(request):
    _require_writer(request)
    team = _active_team(request)
    form = ImportForm(request.POST or None, request.FILES or None)
    report = None
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        report = importing.import_quotes(actor=request.user, team=team, upload=upload)
        if report.ok:
            messages.success(
                request, _("%(count)s quotes imported.") % {"count": len(report.created)}
            )
            return redirect("quotes:quote-list")
    return render(
        request,
        "quotes/import.html",
        {"form": form, "report": report, "columns": importing.COLUMNS},
        status=400 if report is not None and not report.ok else 200,
    )


def import_template(request):
    response = HttpResponse(importing.template_csv(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="dossier-quotes-template.csv"'
    return response


def _export_rows(request):
    team = _active_team(request)
    queryset = selectors.quotes_for(request.user).filter(team=team)
    filterset = QuoteFilterSet(request.GET or None, queryset=queryset, request=request)
    return team, selectors.comparison_rows(filterset.qs, team)


def export_csv(request):
    team, rows = _export_rows(request)
    response = HttpResponse(exporting.comparison_csv(rows, team), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="dossier-quotes-{team.slug}.csv"'
    return response


def export_xlsx(request):
    team, rows = _export_rows(request)
    response = HttpResponse(
        exporting.comparison_xlsx(rows, team),
        content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    )
    response["Content-Disposition"] = f'attachment; filename="dossier-quotes-{team.slug}.xlsx"'
    return response


# ---------------------------------------------------------------------------------------------------------------
# Exchange rates and stale prices


def rate_list(request):
    team = getattr(request, "active_team", None)
    rates = selectors.exchange_rates_for(request.user)
    rates = rates.filter(team=team) if team else rates.none()
    form = ExchangeRateForm(team=team) if team and can_write(request.user) else None
    return render(request, "quotes/rate_list.html", {"rates": rates, "form": form, "team": team})


def rate_create(request):
    _require_writer(request)
    team = _active_team(request)
    form = ExchangeRateForm(request.POST or None, team=team)
    if request.method == "POST" and form.is_valid():
        try:
            services.exchange_rate_record(actor=request.user, team=team, **form.cleaned_data)
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, _("Exchange rate saved."))
            return redirect("quotes:rate-list")
    return render(request, "quotes/rate_form.html", {"form": form, "team": team})


def stale_prices(request):
    flags = selectors.open_stale_flags(request.user)
    team = getattr(request, "active_team", None)
    flags = flags.filter(team=team) if team else flags.none()
    now = timezone.now()
    rows = [
        {
            "flag": flag,
            "freshness": selectors.freshness_of(
                flag.price, stale_after_days=flag.price.quote.team.stale_price_age_days, now=now
            ),
        }
        for flag in flags
    ]
    return render(request, "quotes/stale_prices.html", {"rows": rows, "team": team})


# ---------------------------------------------------------------------------------------------------------------
# Candidates


def candidate_list(request):
    team = getattr(request, "active_team", None)
    queryset = selectors.candidates_for(request.user)
    queryset = queryset.filter(team=team) if team else queryset.none()
    filterset = CandidateFilterSet(request.GET or None, queryset=queryset, request=request)
    rows = selectors.candidate_rows(filterset.qs)
    return render(
        request,
        "quotes/candidate_list.html",
        {"filterset": filterset, "rows": rows, "can_write": can_write(request.user)},
    )


def candidate_detail(request, pk: int):
    candidate = get_object_or_404(selectors.candidates_for(request.user), pk=pk)
    row = selectors.candidate_rows([candidate])[0]
    newer = candidate.workload_summary.newer_versions().last()
    return render(
        request,
        "quotes/candidate_detail.html",
        {
            "candidate": candidate, "row": row, "newer_version": newer, "can_write": can_write(request.user),
            # What higher apps show on this page (the agents on its node, measured results, the memory fit).
            "parts": {
                slot: page_parts.render(f"quotes.candidate.{slot}", request, candidate=candidate)
                for slot in ("agents", "results", "memory_fit")
            },
            # The progress strip of the candidate's workload version (apps/workloads/progress.py).
            "progress": progress.render_strip(request, candidate.workload_summary),
        },
    )


def candidate_create(request):
    _require_writer(request)
    team = _active_team(request)
    initial = {name: request.GET[name] for name in ("quote", "workload_summary") if request.GET.get(name)}
    form = CandidateForm(request.POST or None, team=team, initial=initial)
    policy = None
    if request.method == "POST" and form.is_valid():
        values = dict(form.cleaned_data)
        quote = values.pop("quote")
        summary = values.pop("workload_summary")
        if not values.get("label"):
            values.pop("label")
        try:
            candidate = services.candidate_create(
                actor=request.user, team=team, quote=quote, workload_summary=summary, **values
            )
        except services.PolicyNotMet as error:
            policy = error.policy
            form.add_error(None, _("This quote is below the commitment policy: answer the questions listed below."))
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, _("Candidate saved."))
            return redirect(candidate)
    return render(request, "quotes/candidate_form.html", {"form": form, "policy": policy, "candidate": None})


def candidate_edit(request, pk: int):
    _require_writer(request)
    candidate = get_object_or_404(selectors.candidates_for(request.user), pk=pk)
    form = CandidateForm(request.POST or None, instance=candidate, team=candidate.team)
    form.fields["quote"].disabled = True
    form.fields["workload_summary"].disabled = True
    if request.method == "POST" and form.is_valid():
        values = dict(form.cleaned_data)
        values.pop("quote", None)
        values.pop("workload_summary", None)
        values["label"] = values.get("label") or candidate.label
        try:
            services.candidate_update(actor=request.user, candidate=candidate, **values)
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, _("Candidate saved."))
            return redirect(candidate)
    return render(request, "quotes/candidate_form.html", {"form": form, "policy": None, "candidate": candidate})

