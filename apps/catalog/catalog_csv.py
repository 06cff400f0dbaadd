"""Read the catalog's reference CSVs (apps/catalog/data/gpu_specs.csv, gpu_reference_prices.csv) into plain rows.
No Django, no ORM.

One line per device; a value column holds one figure, an empty cell means "not known" (no figure is created).
Every figure takes `source_url` as its source (with the optional `source_text` as its detail, or alone when there is
no web page, e.g. a CPU host's stated memory), except `usable_mib`, whose source is `usable_mib_source` (a reading off
a real card, not a datasheet) and whose as-of date is `usable_mib_as_of` when given.

A source cell that starts with a web address and goes on ("https://… nvidia-smi on …") is split into the address
and its detail. Optional columns: `vendor`, `device_kind` (gpu | mig | cpu), `parent_gpu` / `parent_variant` and the
share `compute_slices` / `compute_slices_of` / `memory_slices` / `memory_slices_of` of a MIG profile.
"""

from __future__ import annotations

import csv
import datetime
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path

from apps.common.decimals import DecimalInputError, parse_decimal

DEFAULT_CSV_PATH = Path(__file__).resolve().parent / "data" / "gpu_specs.csv"
DEFAULT_PRICES_CSV_PATH = Path(__file__).resolve().parent / "data" / "gpu_reference_prices.csv"

DESCRIPTIVE_COLUMNS = ("gpu", "variant", "form_factor", "memory_type", "host_interface", "source_url", "note")
#: Value columns whose source is not `source_url` but a column of their own.
OWN_SOURCE_COLUMNS = {"usable_mib": "usable_mib_source"}
#: Value columns with an as-of date of their own (else the load's date applies).
OWN_AS_OF_COLUMNS = {"usable_mib": "usable_mib_as_of"}
DEVICE_KINDS = ("gpu", "mig", "cpu")
SHARE_COLUMNS = ("compute_slices", "compute_slices_of", "memory_slices", "memory_slices_of")
#: The key a reference price is stored under (apps.catalog.models.SpecKey.REFERENCE_PRICE_PER_GPU_HOUR).
REFERENCE_PRICE_KEY = "reference_price_per_gpu_hour"
PRICE_COLUMNS = ("gpu", "variant", "amount", "currency", "source_url", "source_text", "as_of")
PRICE_CURRENCIES = ("USD",)


class CatalogFileError(ValueError):
    """The CSV cannot be loaded as it is; the message names the line and the column."""


@dataclass(frozen=True)
class SourcedValue:
    value: Decimal
    source: str  # a URL or a description
    detail: str = ""  # what the URL shows, or the arithmetic behind the value (stored as the source description)
    as_of: datetime.date | None = None  # None: the load's date


@dataclass(frozen=True)
class Share:
    """A MIG profile's share of its parent card: compute slices out of N, memory slices out of M."""

    compute_slices: int
    compute_slices_of: int
    memory_slices: int
    memory_slices_of: int


@dataclass(frozen=True)
class CatalogRow:
    line: int
    vendor: str
    name: str
    variant: str
    form_factor: str
    memory_type: str
    host_interface: str
    datasheet_url: str
    note: str
    values: dict[str, SourcedValue] = field(default_factory=dict)
    device_kind: str = "gpu"
    parent: tuple[str, str] | None = None  # (name, variant) of a MIG profile's parent GPU
    share: Share | None = None


@dataclass(frozen=True)
class PriceRow:
    line: int
    name: str
    variant: str
    price: SourcedValue
    currency: str = "USD"


def split_cited(cell: str) -> tuple[str, str]:
    """(source, detail): "https://x/y nvidia-smi on …" → ("https://x/y", "nvidia-smi on …"); other text stays whole."""
    cell = (cell or "").strip()
    if cell.lower().startswith(("http://", "https://")) and len(cell.split(maxsplit=1)) == 2:
        url, detail = cell.split(maxsplit=1)
        return url, detail.strip()
    return cell, ""


def _date(raw: str, *, line: int, column: str) -> datetime.date:
    try:
        return datetime.date.fromisoformat(raw)
    except ValueError:
        raise CatalogFileError(f"line {line}, column {column}: {raw!r} is not a date (YYYY-MM-DD)") from None


def _slices(cells: dict[str, str], *, line: int) -> Share:
    numbers = {}
    for column in SHARE_COLUMNS:
        raw = cells.get(column, "")
        if not raw.isdigit() or int(raw) < 1:
            raise CatalogFileError(f"line {line}, column {column}: a MIG profile needs a whole number ≥ 1")
        numbers[column] = int(raw)
    share = Share(**numbers)
    if share.compute_slices > share.compute_slices_of or share.memory_slices > share.memory_slices_of:
        raise CatalogFileError(f"line {line}: a MIG profile cannot have more slices than its card")
    return share


def _decimal(raw: str, *, line: int, column: str) -> Decimal:
    where = f"line {line}, column {column}"
    try:
        value = parse_decimal(raw, field=where)
    except DecimalInputError as error:
        raise CatalogFileError(str(error)) from None
    if value < 0:
        raise CatalogFileError(f"{where}: {raw!r} must be a finite number ≥ 0")
    return value


def parse_rows(lines: Iterable[str], *, value_columns: Sequence[str], vendor: str = "NVIDIA") -> list[CatalogRow]:
    """Parse CSV text lines (header first). Raises CatalogFileError on a missing column or a bad number."""
    reader = csv.DictReader(lines)
    header = reader.fieldnames or []
    required = [*DESCRIPTIVE_COLUMNS, *value_columns]
    required += [OWN_SOURCE_COLUMNS[column] for column in value_columns if column in OWN_SOURCE_COLUMNS]
    missing = [column for column in required if column not in header]
    if missing:
        raise CatalogFileError(f"missing column(s): {', '.join(missing)}")

    rows: list[CatalogRow] = []
    seen: set[tuple[str, str]] = set()
    for record in reader:
        line = reader.line_num
        cells = {key: (value or "").strip() for key, value in record.items() if key is not None}
        name, variant = cells["gpu"], cells["variant"]
        if not name or not variant:
            raise CatalogFileError(f"line {line}: gpu and variant are required")
        if (name, variant) in seen:
            raise CatalogFileError(f"line {line}: {name} {variant} appears twice")
        seen.add((name, variant))

        values: dict[str, SourcedValue] = {}
        for column in value_columns:
            raw = cells[column]
            if not raw:
                continue
            if column in OWN_SOURCE_COLUMNS:
                source_column = OWN_SOURCE_COLUMNS[column]
                source, detail = split_cited(cells[source_column])
            else:
                source_column = "source_url"
                source, detail = cells["source_url"], cells.get("source_text", "")
                if not source:
                    source, detail = detail, ""
            if not source:
                raise CatalogFileError(f"line {line}, column {column}: a value needs a source in {source_column}")
            own_as_of = cells.get(OWN_AS_OF_COLUMNS.get(column, ""), "")
            values[column] = SourcedValue(
                value=_decimal(raw, line=line, column=column),
                source=source,
                detail=detail,
                as_of=_date(own_as_of, line=line, column=OWN_AS_OF_COLUMNS[column]) if own_as_of else None,
            )

        device_kind = cells.get("device_kind") or "gpu"
        if device_kind not in DEVICE_KINDS:
            raise CatalogFileError(f"line {line}, column device_kind: {device_kind!r} is not one of {DEVICE_KINDS}")
        parent = share = None
        if device_kind == "mig":
            parent = (cells.get("parent_gpu", ""), cells.get("parent_variant", ""))
            if not all(parent):
                raise CatalogFileError(f"line {line}: a MIG profile needs parent_gpu and parent_variant")
            share = _slices(cells, line=line)

        rows.append(
            CatalogRow(
                line=line,
                vendor=cells.get("vendor") or vendor,
                name=name,
                variant=variant,
                form_factor=cells["form_factor"],
                memory_type=cells["memory_type"],
                host_interface=cells["host_interface"],
                datasheet_url=cells["source_url"],
                note=cells["note"],
                values=values,
                device_kind=device_kind,
                parent=parent,
                share=share,
            )
        )
    known = {(row.name, row.variant) for row in rows}
    for row in rows:
        if row.parent is not None and row.parent not in known:
            raise CatalogFileError(f"line {row.line}: parent {' '.join(row.parent)} is not in the file")
    return rows


def parse_price_rows(lines: Iterable[str]) -> list[PriceRow]:
    """Parse the reference-price CSV (header first): one price per GPU-hour per device, with its source and date."""
    reader = csv.DictReader(lines)
    missing = [column for column in PRICE_COLUMNS if column not in (reader.fieldnames or [])]
    if missing:
        raise CatalogFileError(f"missing column(s): {', '.join(missing)}")
    rows: list[PriceRow] = []
    seen: set[tuple[str, str]] = set()
    for record in reader:
        line = reader.line_num
        cells = {key: (value or "").strip() for key, value in record.items() if key is not None}
        name, variant = cells["gpu"], cells["variant"]
        if not name or not variant:
            raise CatalogFileError(f"line {line}: gpu and variant are required")
        if (name, variant) in seen:
            raise CatalogFileError(f"line {line}: {name} {variant} has two reference prices")
        seen.add((name, variant))
        if cells["currency"] not in PRICE_CURRENCIES:
            raise CatalogFileError(f"line {line}, column currency: only {', '.join(PRICE_CURRENCIES)} is supported")
        source, detail = cells["source_url"], cells["source_text"]
        if not source:
            source, detail = detail, ""
        if not source:
            raise CatalogFileError(f"line {line}: a reference price needs a source (source_url or source_text)")
        if not cells["as_of"]:
            raise CatalogFileError(f"line {line}, column as_of: a reference price needs its as-of date")
        rows.append(
            PriceRow(
                line=line,
                name=name,
                variant=variant,
                currency=cells["currency"],
                price=SourcedValue(
                    value=_decimal(cells["amount"], line=line, column="amount"),
                    source=source,
                    detail=detail,
                    as_of=_date(cells["as_of"], line=line, column="as_of"),
                ),
            )
        )
    return rows


def attach_prices(rows: Sequence[CatalogRow], prices: Sequence[PriceRow]) -> list[CatalogRow]:
    """The catalog rows with each reference price added as a figure of its device; a price for no row is refused."""
    by_device = {(price.name, price.variant): price for price in prices}
    unknown = [price for key, price in by_device.items() if key not in {(row.name, row.variant) for row in rows}]
    if unknown:
        raise CatalogFileError(f"line {unknown[0].line}: {unknown[0].name} {unknown[0].variant} is not in the catalog")
    return [
        replace(row, values={**row.values, REFERENCE_PRICE_KEY: by_device[(row.name, row.variant)].price})
        if (row.name, row.variant) in by_device
        else row
        for row in rows
    ]


def read_catalog_csv(path: Path = DEFAULT_CSV_PATH, *, value_columns: Sequence[str]) -> list[CatalogRow]:
    with Path(path).open(encoding="utf-8", newline="") as handle:
        return parse_rows(handle, value_columns=value_columns)


def read_prices_csv(path: Path = DEFAULT_PRICES_CSV_PATH) -> list[PriceRow]:
    with Path(path).open(encoding="utf-8", newline="") as handle:
        return parse_price_rows(handle)
