"""Text in a Plotly figure is Plotly's own small HTML (`<a href>`, `<b>`, `<br>` are rendered in labels, legends,
titles and hover boxes), so a candidate label or a GPU name holding `<a href="https://…">` became a clickable link in
the chart. Every chart builder returns its figure through `escaped_figure`: each string has `&`, `<` and `>` written
as entities (Plotly shows them as the characters), except the `*template` strings, which are Plotly's own format;
a builder that puts data into a template escapes it itself with `chart_text`. Pure: no Django import.
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
        return value if key.endswith("template") else chart_text(value)
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
