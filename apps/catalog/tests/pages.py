"""Helpers to read the catalog's rendered pages in tests."""

import re


def table_row(html: str, marker: str) -> str:
    """The <tr>…</tr> of a rendered table that contains `marker`."""
    for row in re.findall(r"<tr\b.*?</tr>", html, flags=re.S):
        if marker in row:
            return row
    raise AssertionError(f"no table row contains {marker!r}")
