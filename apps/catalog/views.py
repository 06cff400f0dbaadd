"""Browser pages of the catalog: the sortable list, a GPU's detail, and the admin-only figure edit."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _

from apps.accounts.roles import Role, has_role
from apps.catalog.filters import GpuModelFilterSet
from apps.catalog.forms import GpuSpecForm
from apps.catalog.models import SPEC_UNITS, SpecKey
from apps.catalog.selectors import gpu_catalog, gpu_get, reference_price, usable_memory_bytes
from apps.catalog.services import gpu_spec_set
from apps.common.forms import add_service_errors


def _spec_columns() -> list[dict]:
    return [{"key": key, "label": label, "unit": SPEC_UNITS[key]} for key, label in SpecKey.choices]


def catalog_list(request):
    filterset = GpuModelFilterSet(request.GET or None, queryset=gpu_catalog())
    return render(
        request,
        "catalog/gpu_list.html",
        {"filterset": filterset, "gpus": filterset.qs, "columns": _spec_columns()},
    )


def _spec_rows(gpu, *, editable: bool) -> list[dict]:
    """One row per figure in column order; admins get an edit form per row (value prefilled, source and date not)."""
    return [
        {
            "key": key,
            "label": SpecKey(key).label,
            "unit": SPEC_UNITS[key],
            "spec": spec,
            "form": _edit_form(key, spec) if editable else None,
        }
        for key, spec in gpu.specs_in_order()
    ]


def _edit_form(key: str, spec, data=None) -> GpuSpecForm:
    return GpuSpecForm(data, key=key, prefix=key, initial={"value": spec.value_display if spec else None})


def gpu_detail(request, pk: int):
    gpu = gpu_get(pk=pk)
    editable = has_role(request.user, Role.ADMIN)
    return render(
        request,
        "catalog/gpu_detail.html",
        {
            "gpu": gpu,
            "rows": _spec_rows(gpu, editable=editable),
            "editable": editable,
            "usable_memory": usable_memory_bytes(gpu),
            "reference_price": reference_price(gpu),
            "mig_profiles": gpu.mig_profiles.order_by("variant"),
        },
    )


def spec_edit(request, pk: int, key: str):
    """Admins set one figure (a new value needs a source and a date); everyone else gets 403."""
    if not has_role(request.user, Role.ADMIN):
        raise PermissionDenied
    if key not in SpecKey.values:
        raise Http404
    gpu = gpu_get(pk=pk)
    spec = gpu.spec(key)
    if request.method == "POST":
        form = _edit_form(key, spec, request.POST)
        if form.is_valid():
            try:
                saved = gpu_spec_set(actor=request.user, gpu=gpu, key=key, **form.cleaned_data)
            except ValidationError as error:
                add_service_errors(form, error)
            else:
                messages.success(
                    request,
                    _("%(figure)s of %(gpu)s is now %(value)s %(unit)s.")
                    % {
                        "figure": SpecKey(key).label,
                        "gpu": gpu.display_name,
                        "value": saved.value_display,
                        "unit": saved.unit,
                    },
                )
                return redirect(gpu)
    else:
        form = _edit_form(key, spec)
    return render(
        request,
        "catalog/spec_edit.html",
        {"gpu": gpu, "spec": spec, "key": key, "label": SpecKey(key).label, "unit": SPEC_UNITS[key], "form": form},
    )
