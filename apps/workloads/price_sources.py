"""Known prices per GPU-hour for the shortlist's predicted cost per accepted output.

Workloads sit below quotes, so the prices come through a registry: a provider is `provider(team, gpu_keys) ->
{gpu_key: PriceRef}`, registered in an AppConfig.ready() (the quotes app registers the team's cheapest current quote
per GPU model; this app registers the catalog's reference price, `catalog_reference_prices`). `known_prices` asks every
provider and keeps one price per GPU: the cheapest quote when the team has one (it is what the team can buy at), else
the cheapest reference price, each with its source.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

QUOTE = "quote"
REFERENCE = "reference"
KIND_ORDER = {QUOTE: 0, REFERENCE: 1}
# The catalog figure (GpuSpec.key) a reference price is stored under; read by its string so this works before the
# catalog's SpecKey names it.
REFERENCE_PRICE_KEY = "reference_price_per_gpu_hour"
REFERENCE_PRICE_CURRENCY = "USD"  # the catalog's unit for that figure: USD/h


@dataclass(frozen=True)
class PriceRef:
    """A price per GPU-hour with where it comes from: a team's quote or a catalog reference price."""

    amount: Decimal  # per GPU-hour
    currency: str
    source: str  # a label for people: "quote Q (vendor, price version n)" or "catalog reference (URL, as of …)"
    kind: str  # QUOTE or REFERENCE
    as_of: datetime.date | None = None

    def __post_init__(self) -> None:
        if self.kind not in KIND_ORDER:
            raise ValueError(f"kind must be {QUOTE!r} or {REFERENCE!r}, got {self.kind!r}")
        if not isinstance(self.amount, Decimal) or not self.amount.is_finite() or self.amount <= 0:
            raise ValueError(f"a price per GPU-hour is a positive Decimal, got {self.amount!r}")


PriceProvider = Callable[[Any, list[Any]], Mapping[Any, PriceRef]]
_PROVIDERS: dict[str, PriceProvider] = {}


def register(provider: PriceProvider, *, name: str | None = None) -> None:
    """Add a provider (idempotent: the same name registered twice keeps the last)."""
    _PROVIDERS[name or f"{provider.__module__}.{provider.__qualname__}"] = provider


def unregister(name: str) -> None:
    _PROVIDERS.pop(name, None)


def providers() -> dict[str, PriceProvider]:
    return dict(_PROVIDERS)


def _preferred(current: PriceRef | None, candidate: PriceRef) -> PriceRef:
    if current is None:
        return candidate
    current_key = (KIND_ORDER[current.kind], current.currency, current.amount)
    candidate_key = (KIND_ORDER[candidate.kind], candidate.currency, candidate.amount)
    # A quote beats a reference; between two of a kind in one currency the cheaper wins; in two currencies the first
    # found stays (they cannot be compared without a rate).
    if candidate_key[0] != current_key[0]:
        return candidate if candidate_key[0] < current_key[0] else current
    if candidate.currency == current.currency and candidate.amount < current.amount:
        return candidate
    return current


def known_prices(team, gpu_keys: Iterable[Any]) -> dict[Any, PriceRef]:
    """One price per GPU-hour for each GPU some provider knows: the cheapest quote, else the cheapest reference."""
    keys = list(gpu_keys)
    found: dict[Any, PriceRef] = {}
    if not keys:
        return found
    for provider in _PROVIDERS.values():
        for key, price in provider(team, keys).items():
            if key in keys:
                found[key] = _preferred(found.get(key), price)
    return found


def catalog_reference_prices(team, gpu_keys: list[Any]) -> dict[Any, PriceRef]:
    """The catalog's reference price per GPU-hour (GpuSpec `reference_price_per_gpu_hour`, in USD/h) of each GPU
    that has one, labelled with its source and as-of date. GPUs without the figure are left out."""
    from apps.catalog.models import GpuSpec

    prices = {}
    for spec in GpuSpec.objects.filter(gpu_id__in=gpu_keys, key=REFERENCE_PRICE_KEY):
        price = reference_price_of(spec)
        if price is not None:
            prices[spec.gpu_id] = price
    return prices


def reference_price_of(spec) -> PriceRef | None:
    """A catalog reference-price figure as a PriceRef (None when it is zero: no price)."""
    if spec.value is None or spec.value <= 0:
        return None
    source = spec.source_url or spec.source_text
    return PriceRef(
        amount=Decimal(spec.value),
        currency=REFERENCE_PRICE_CURRENCY,
        source=f"catalog reference ({source}, as of {spec.as_of.isoformat()})",
        kind=REFERENCE,
        as_of=spec.as_of,
    )
