"""Text in a Plotly figure is Plotly's own small HTML (`<a href>`, `<b>`, `<br>` are rendered in labels, legends,
titles and hover boxes), so a candidate label or a GPU name holding `<a href="https://…">` became a clickable link in
the chart. Every chart builder returns its figure through `escaped_figure`: each string has `&`, `<` and `>` written
as entities (Plotly shows them as the characters), except the `*template` strings, which are Plotly's own format;
a builder that puts data into a template escapes it itself with `chart_text`. Pure: no Django import.

`readable_chart(caption)` (outside `escaped_figure`) gives a figure the one-line caption the page shows under it and
sets automargin on its axes; every builder it decorates is listed in CHART_BUILDERS for the tests.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Callable
from typing import Any, TypeVar

Builder = TypeVar("Builder", bound=Callable[..., Any])


def chart_text(text: str) -> str:
    """`&`, `<` and `>` as HTML entities: shown as typed in a Plotly label, never read as markup."""
    return html.escape(text, quote=False)


def escape_figure_text(value: Any, key: str = "") -> Any:
    """A copy of a figure (dicts, lists, strings, numbers) with every string escaped, `*template` keys excepted."""
    if isinstance(value, str):
        # A caption (readable_chart) is page text that Django escapes, never Plotly's: left as written.
        return value if key.endswith("template") or key == "caption" else chart_text(value)
    if isinstance(value, dict):
        return {name: escape_figure_text(item, str(name)) for name, item in value.items()}
    if isinstance(value, list | tuple):
        return [escape_figure_text(item, key) for item in value]
    return value


def escaped_figure(builder: Builder) -> Builder:
    """Decorator for a chart builder: the figure it returns (or None) with its text escaped."""

    @functools.wraps(builder)
    def build(*args, **kwargs):
        figure = builder(*args, **kwargs)
        return None if figure is None else escape_figure_text(figure)

    return build  # type: ignore[return-value]


#: Every chart builder, registered by `readable_chart`: the tests check each one states a caption.
CHART_BUILDERS: list[Callable[..., Any]] = []
#: The figure key holding the caption: one sentence saying what to read from the chart, rendered under it by the
#: page (Django escapes it there); the scripts pass only `data` and `layout` to Plotly, which never sees it.
CAPTION = "caption"
AXES = ("xaxis", "yaxis", "yaxis2")


def readable_chart(caption: Callable[[dict], str]) -> Callable[[Builder], Builder]:
    """Decorator (outside `escaped_figure`) for a chart builder a finance reader must understand: the figure gets
    `caption(figure)` under the key CAPTION, and every axis automargin (long labels grow the margin, never clipped).
    The builder is registered in CHART_BUILDERS with its caption function as `builder.caption`."""

    def decorate(builder: Builder) -> Builder:
        @functools.wraps(builder)
        def build(*args, **kwargs):
            figure = builder(*args, **kwargs)
            if figure is None:
                return None
            layout = figure.setdefault("layout", {})
            for axis in AXES:
                if axis in layout or axis != "yaxis2":
                    layout.setdefault(axis, {}).setdefault("automargin", True)
            # setdefault: a builder that returns another builder's figure keeps that builder's caption.
            figure.setdefault(CAPTION, str(caption(figure)))
            return figure

        build.caption = caption  # type: ignore[attr-defined]
        CHART_BUILDERS.append(build)
        return build  # type: ignore[return-value]

    return decorate
