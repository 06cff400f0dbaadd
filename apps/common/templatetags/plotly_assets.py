"""Plotly served locally, with its own interface in the page's language: `{% plotly_scripts %}` loads plotly.min.js
and the translations of the mode bar's tooltips ("Zoom", "Download plot as a PNG", …), which Plotly would otherwise
show in English on every French or Indonesian chart."""

from __future__ import annotations

import json

from django import template
from django.utils.translation import gettext as _

register = template.Library()


def mode_bar_dictionary() -> dict[str, str]:
    """Plotly's English (the key it looks up) → ours, for the buttons and hints of a 2-D chart's mode bar."""
    return {
        "Autoscale": _("Autoscale"),
        "Box Select": _("Box Select"),
        "Compare data on hover": _("Compare data on hover"),
        "Double-click on legend to isolate one trace": _("Double-click on legend to isolate one trace"),
        "Double-click to zoom back out": _("Double-click to zoom back out"),
        "Download plot": _("Download plot"),
        "Download plot as a PNG": _("Download plot as a PNG"),
        "Lasso Select": _("Lasso Select"),
        "Pan": _("Pan"),
        "Reset axes": _("Reset axes"),
        "Reset view": _("Reset view"),
        "Reset views": _("Reset views"),
        "Share chart...": _("Share chart..."),
        "Show closest data on hover": _("Show closest data on hover"),
        "Toggle show closest data on hover": _("Toggle show closest data on hover"),
        "Toggle Spike Lines": _("Toggle Spike Lines"),
        "Zoom": _("Zoom"),
        "Zoom in": _("Zoom in"),
        "Zoom out": _("Zoom out"),
    }


@register.inclusion_tag("common/plotly_scripts.html")
def plotly_scripts():
    return {"dictionary": json.dumps(mode_bar_dictionary(), ensure_ascii=False)}
