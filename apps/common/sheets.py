"""Reading an uploaded CSV or XLSX sheet, streamed and bounded: the one reader of the quote import
(apps/quotes/importing.py) and the actuals upload (apps/actuals/parsing.py).

Pure Python (no Django): bytes in, `(headers, [(sheet row number, {header: cell})])` out, for the non-empty data rows.
An XLSX is its first worksheet, opened read-only with openpyxl and streamed: its declared size is refused before a row
is read, the rows are counted while they stream and the unpacked size is capped; a CSV is UTF-8. Reading stops at the
first row past the limits, never after reading the whole file.

A file that cannot be read raises `SheetUnreadable` with a code and its parameters (and how many rows were taken);
each caller words the codes in its reader's language:

    not_csv_or_xlsx, empty, not_utf8, not_csv, not_xlsx, no_worksheet, too_big_unpacked (size, in MB),
    too_many_rows (max), too_long (row, max), declares_too_many_rows (rows, max),
    declares_too_many_columns (columns, max), cells_past_columns (row, max)
"""

from __future__ import annotations

import csv
import io
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

Rows = list[tuple[int, dict]]


@dataclass(frozen=True)
class SheetLimits:
    max_rows: int  # data rows
    max_columns: int  # columns read from an XLSX; blank-headed helper columns are allowed, and ignored
    max_empty_rows: int  # tolerated among and after the data rows (a formatted tail, say)
    max_unpacked_bytes: int = 64 * 1024 * 1024  # a small upload can unpack to gigabytes

    @property
    def last_row(self) -> int:
        return self.max_rows + self.max_empty_rows + 1  # + the header


class SheetUnreadable(Exception):
    """The file as a whole cannot be read; `rows_read` is how many rows had been taken from it when reading stopped."""

    def __init__(self, code: str, *, rows_read: int = 0, **params: Any) -> None:
        super().__init__(code)
        self.code = code
        self.params = params
        self.rows_read = rows_read


def read_sheet(name: str, content: bytes, limits: SheetLimits) -> tuple[list[str], Rows]:
    """(headers, [(sheet row number, {header: cell})]) of the non-empty data rows of a .csv or .xlsx file."""
    lower = (name or "").lower()
    if lower.endswith(".xlsx"):
        return _read_xlsx(content, limits)
    if lower.endswith(".csv"):
        return _read_csv(content, limits)
    raise SheetUnreadable("not_csv_or_xlsx")


def blank(cell: Any) -> bool:
    return cell is None or (isinstance(cell, str) and not cell.strip())


def _collect(numbered_rows: Iterable[tuple[int, Any]], headers: list[str], limits: SheetLimits) -> Rows:
    """The non-empty data rows, refusing as soon as a limit is passed."""
    rows, read = [], 0
    for number, cells in numbered_rows:
        read += 1
        if number > limits.last_row:
            raise SheetUnreadable("too_long", rows_read=read, row=limits.last_row, max=limits.max_rows)
        if all(blank(cell) for cell in cells):
            continue
        rows.append((number, dict(zip(headers, cells, strict=False))))
        if len(rows) > limits.max_rows:
            raise SheetUnreadable("too_many_rows", rows_read=read, max=limits.max_rows)
    return rows


def _read_csv(content: bytes, limits: SheetLimits) -> tuple[list[str], Rows]:
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SheetUnreadable("not_utf8") from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        headers = [header.strip() for header in next(reader)]
        # reader.line_num is read after each row is taken: a row spanning lines is numbered by its last line.
        return headers, _collect(((reader.line_num, cells) for cells in reader), headers, limits)
    except StopIteration:
        raise SheetUnreadable("empty") from None
    except csv.Error:
        raise SheetUnreadable("not_csv") from None


_XLSX_ERRORS = (zipfile.BadZipFile, zlib.error, KeyError, OSError, ValueError, TypeError, SyntaxError, EOFError,
                IndexError)


def _first_sheet(content: bytes, limits: SheetLimits):
    """The workbook's first worksheet, read-only, opened without reading its rows.

    openpyxl's load_workbook(read_only=True) sizes every sheet when it opens the file, and a sheet that declares no
    size is parsed to its end for that: a sheet of millions of rows ties the worker up before a row is counted.
    This opens the package with openpyxl's own reader steps and sizes only the first sheet, from the declaration
    before its data (or not at all). (openpyxl 3.1, pinned in pyproject.toml.)"""
    from openpyxl.reader.excel import ExcelReader
    from openpyxl.styles.stylesheet import apply_stylesheet
    from openpyxl.worksheet._read_only import ReadOnlyWorksheet
    from openpyxl.worksheet._reader import DATA_TAG, DIMENSION_TAG
    from openpyxl.worksheet.dimensions import SheetDimension
    from openpyxl.xml.functions import iterparse

    class FirstSheet(ReadOnlyWorksheet):
        def _get_size(self):
            with self._get_source() as source:
                for _event, element in iterparse(source, events=("start",)):
                    if element.tag == DIMENSION_TAG:
                        bounds = SheetDimension.from_tree(element).boundaries
                        self._min_column, self._min_row, self._max_column, self._max_row = bounds
                        return
                    if element.tag == DATA_TAG:
                        return  # no declaration: the rows are counted while they stream

    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        if sum(item.file_size for item in archive.infolist()) > limits.max_unpacked_bytes:
            raise SheetUnreadable("too_big_unpacked", size=limits.max_unpacked_bytes // (1024 * 1024))
    reader = ExcelReader(io.BytesIO(content), read_only=True, data_only=True)
    try:
        reader.read_manifest()
        reader.read_strings()
        reader.read_workbook()
        apply_stylesheet(reader.archive, reader.wb)
        for sheet, relation in reader.parser.find_sheets():
            if relation.target in reader.valid_files and "chartsheet" not in relation.Type:
                return reader.archive, FirstSheet(reader.wb, sheet.name, relation.target, reader.shared_strings)
    except BaseException:
        reader.archive.close()
        raise
    reader.archive.close()
    raise SheetUnreadable("no_worksheet")


def _within_columns(cells: tuple, number: int, limits: SheetLimits) -> tuple:
    if len(cells) > limits.max_columns and not blank(cells[limits.max_columns]):
        raise SheetUnreadable("cells_past_columns", rows_read=number, row=number, max=limits.max_columns)
    return cells[:limits.max_columns]


def _read_xlsx(content: bytes, limits: SheetLimits) -> tuple[list[str], Rows]:
    try:
        archive, sheet = _first_sheet(content, limits)
    except _XLSX_ERRORS:
        raise SheetUnreadable("not_xlsx") from None
    try:
        # The declared size first: a sheet that says it is too big is refused before a row is read.
        if sheet.max_row is not None and sheet.max_row > limits.last_row:
            raise SheetUnreadable("declares_too_many_rows", rows=sheet.max_row - 1, max=limits.max_rows)
        if sheet.max_column is not None and sheet.max_column > limits.max_columns:
            raise SheetUnreadable("declares_too_many_columns", columns=sheet.max_column, max=limits.max_columns)
        # Then count while streaming, whatever the declaration said (it may be missing, or too small: openpyxl would
        # stop at a too-small one and silently drop the rest).
        sheet.reset_dimensions()
        iterator = enumerate(sheet.iter_rows(max_col=limits.max_columns + 1, values_only=True), start=1)
        try:
            _number, header_cells = next(iterator)
        except StopIteration:
            raise SheetUnreadable("empty") from None
        headers = [str(cell).strip() if cell is not None else "" for cell in _within_columns(header_cells, 1, limits)]
        while headers and not headers[-1]:
            headers.pop()
        rows = _collect(((number, _within_columns(cells, number, limits)) for number, cells in iterator), headers,
                        limits)
    except _XLSX_ERRORS:
        raise SheetUnreadable("not_xlsx") from None
    finally:
        archive.close()
    return headers, rows
