"""The form that enters one phase-4 input with its provenance (the service validates; the form only types)."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from apps.evidence.models import CapacityUnit, FigureMetric, FigureSource
from apps.evidence.services import measured_refused_message

#: What a person may choose: measured figures come from benchmark results, never typed.
ENTERED_SOURCES = [(value, label) for value, label in FigureSource.choices if value != FigureSource.MEASURED]


class CandidateFigureForm(forms.Form):
    metric = forms.ChoiceField(label=_("Figure"), choices=FigureMetric.choices)
    value = forms.DecimalField(
        label=_("Value"), min_value=0, max_digits=24, decimal_places=12,
        help_text=_("Rates and margins as a fraction: 0.02 means 2 %. Latencies in milliseconds."),
    )
    capacity_unit = forms.ChoiceField(
        label=_("Capacity unit"), choices=[("", "—"), *CapacityUnit.choices], required=False,
        help_text=_("Only for the capacity at the SLO."),
    )
    # Every source is a valid choice so that "measured" gets its own clear error (clean_source); the menu offers only
    # the sources a person may enter.
    source = forms.ChoiceField(label=_("Source"), choices=FigureSource.choices,
                               help_text=_("Measured figures come from benchmark results."))
    reference = forms.CharField(
        label=_("Reference"), max_length=500, required=False,
        help_text=_("Quoted: the document or message that states it."),
    )
    estimated_by = forms.CharField(
        label=_("Estimated by"), max_length=200, required=False, help_text=_("Empty: you.")
    )
    estimate_reason = forms.CharField(
        label=_("Why this estimate"), required=False, widget=forms.Textarea(attrs={"rows": 2})
    )

    def __init__(self, *args, metric_fixed: bool = False, metric_choices: list | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        if metric_choices is not None and not metric_fixed:
            self.fields["metric"].choices = metric_choices
        if metric_fixed:
            self.fields["metric"].disabled = True
        self.fields["source"].widget.choices = ENTERED_SOURCES

    def clean_source(self) -> str:
        source = self.cleaned_data["source"]
        if source == FigureSource.MEASURED:
            raise forms.ValidationError(measured_refused_message())
        return source
