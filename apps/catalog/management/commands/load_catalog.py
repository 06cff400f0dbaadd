"""Load the GPU catalog from the bundled CSV: creates what is missing, never changes a recorded value."""

import datetime
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from apps.catalog.catalog_csv import (
    DEFAULT_CSV_PATH,
    DEFAULT_PRICES_CSV_PATH,
    CatalogFileError,
    attach_prices,
    read_catalog_csv,
    read_prices_csv,
)
from apps.catalog.models import SpecKey
from apps.catalog.services import catalog_load

#: The date the bundled figures were recorded from the vendors' pages (apps/catalog/data/README.md).
BUNDLED_AS_OF = datetime.date(2026, 12, 2)
#: The value columns of gpu_specs.csv: every figure but the reference price, which has its own file.
SPEC_COLUMNS = [key for key in SpecKey.values if key != SpecKey.REFERENCE_PRICE_PER_GPU_HOUR]


class Command(BaseCommand):
    help = (
        "Create the GPU models and figures of the catalog CSV that are missing. Idempotent: a value already "
        "recorded (for example one an admin corrected) is never overwritten."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--file", type=Path, default=DEFAULT_CSV_PATH, help="CSV to load (default: the bundled one)"
        )
        parser.add_argument(
            "--prices",
            type=Path,
            default=None,
            help="reference prices per GPU-hour to load with the catalog (default: the bundled "
            "gpu_reference_prices.csv when --file is the bundled catalog, else none)",
        )
        parser.add_argument(
            "--as-of",
            type=datetime.date.fromisoformat,
            default=BUNDLED_AS_OF,
            help="as-of date of the figures, YYYY-MM-DD (default: %(default)s, when the bundled figures were recorded)",
        )

    def handle(self, *args, file: Path, prices: Path | None, as_of: datetime.date, **options):
        try:
            rows = read_catalog_csv(file, value_columns=SPEC_COLUMNS)
        except (OSError, CatalogFileError) as error:
            raise CommandError(f"{file}: {error}") from error
        if prices is None and Path(file).resolve() == DEFAULT_CSV_PATH:
            prices = DEFAULT_PRICES_CSV_PATH
        if prices is not None:
            try:
                rows = attach_prices(rows, read_prices_csv(prices))
            except (OSError, CatalogFileError) as error:
                raise CommandError(f"{prices}: {error}") from error
        try:
            result = catalog_load(rows=rows, as_of=as_of)
        except CatalogFileError as error:
            raise CommandError(f"{file}: {error}") from error
        self.stdout.write(
            f"GPU catalog: GPU models created: {result.gpus_created}; figures created: {result.specs_created}; "
            f"figures already recorded, left as they are: {result.specs_kept}."
        )
