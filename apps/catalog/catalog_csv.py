"""Read the catalog's reference CSV (apps/catalog/data/gpu_specs.csv) into plain rows. No Django, no ORM.

One line per GPU variant; a value column holds one figure, an empty cell means "not known" (no figure is created).
Every figure takes `source_url` as its source, except `usable_mib`, whose source is `usable_mib_source` (a reading
off a real card, not a datasheet).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from apps.common.decimals import DecimalInputError, parse_decimal

DEFAULT_CSV_PATH = Path(__file__).resolve().parent / "data" / "gpu_specs.csv"

DESCRIPTIVE_COLUMNS = ("gpu", "variant", "form_factor", "memory_type", "host_interface", "source_url", "note")
#: Value columns whose source is not `source_url` but a column of their own.
OWN_SOURCE_COLUMNS = {"usable_mib": "usable_mib_source"}


class CatalogFileError(ValueError):
    """The CSV cannot be loaded as it is; the message names the line and the column."""


@dataclass(frozen=True)
class SourcedValue:
    value: Decimal
    source: str


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
            source_column = OWN_SOURCE_COLUMNS.get(column, "source_url")
            source = cells[source_column]
            if not source:
                raise CatalogFileError(f"line {line}, column {column}: a value needs a source in {source_column}")
            values[column] = SourcedValue(value=_decimal(raw, line=line, column=column), source=source)

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
            )
        )
    return rows


def read_catalog_csv(path: Path = DEFAULT_CSV_PATH, *, value_columns: Sequence[str]) -> list[CatalogRow]:
    with Path(path).open(encoding="utf-8", newline="") as handle:
        return parse_rows(handle, value_columns=value_columns)
