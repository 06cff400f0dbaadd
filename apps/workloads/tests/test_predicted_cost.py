"""The shortlist ranked by PREDICTED cost per accepted output (roofline throughput × the cheapest known price), and
the registry of price sources it reads."""

from __future__ import annotations

import datetime
from dataclasses import replace
from decimal import Decimal
from types import SimpleNamespace

import pytest

from apps.workloads import estimates, predictions, price_sources
from apps.workloads.memory.roofline import GpuPeaks
from apps.workloads.price_sources import QUOTE, REFERENCE, PriceRef
from apps.workloads.shortlist import (
    COST_MISSING_CURRENCY,
    COST_MISSING_DOES_NOT_FIT,
    COST_MISSING_PREDICTION,
    COST_MISSING_PRICE,
    DOES_NOT_FIT,
    build_shortlist,
    rank_by_predicted_cost,
)
from apps.workloads.tests.factories import REALTIME_READY_FIELDS
from apps.workloads.tests.test_shortlist import CATALOG

# Datasheet peaks of the bundled catalog (apps/catalog/data): TB/s, BF16 and FP8 dense TFLOPS.
PEAKS = {
    "RTX 24": GpuPeaks(1.0, 165, 330),
    "L40S 48": GpuPeaks(0.864, 362, 733),
    "A100 80": GpuPeaks(2.0, 312),
    "H100 80": GpuPeaks(3.35, 989, 1979),
    "H200 141": GpuPeaks(4.8, 989, 1979),
    "B200 180": GpuPeaks(8.0, 2250, 4500),
}


def reference(amount: str, currency: str = "USD") -> PriceRef:
    return PriceRef(Decimal(amount), currency, f"catalog reference (test sheet, as of 2026-01-01) {amount}", REFERENCE,
                    datetime.date(2026, 1, 1))


def ranked(prices, **changes):
    values = {**REALTIME_READY_FIELDS, **changes}
    summary = SimpleNamespace(**values)
    analysis = estimates.analyse(estimates.plan_for(summary), CATALOG)
    predicted = predictions.shortlist_predictions(summary, analysis, PEAKS)
    return build_shortlist(
        values["workload_type"], analysis, predictions=predicted, prices=prices,
        acceptance=values.get("quality_acceptance_rate"),
    )


def names(shortlist):
    return [entry.gpu_fit.gpu.name for entry in shortlist.entries]


def test_without_prices_real_time_serving_still_puts_the_fastest_gpu_first():
    """The old order (issue 16, item 7: "B200 first for an 8B model") is what a shortlist without costs keeps."""
    shortlist = ranked({})
    assert names(shortlist)[0] == "B200 180"
    assert shortlist.cost_currency is None
    assert all(entry.cost is None for entry in shortlist.entries)


def test_a_cheaper_gpu_with_a_lower_predicted_cost_per_output_ranks_above_the_fastest():
    """Llama-3-8B bf16, I=1200, O=250 (means), B=64 (peak sessions), acceptance 0.95; defaults η_β 0.6, η_π 0.76.

    H100 (t=1): c̄ = 1200 + 250/2 = 1325; bytes = 16,060,522,496 + 64·131,072·1325 = 27,175,428,096
      → 27,175,428,096 / (3.35e12·0.6) = 1.352011e-2 s; FLOPs = 64·(16,060,522,496 + 4·32·32·128·1325)
      = 1.072333e12 → 1.42667e-3 s: memory-bound. Prefill = 2·P·1200 + 2·32·32·128·1200² = 1.965011e13 FLOP
      → 2.61430e-2 s. Requests/s = 64 / (64·2.61430e-2 + 250·1.352011e-2) = 64 / 5.053178 = 12.6653
      → 45,595.1 responses/h; at 2.00 USD/GPU-h: 2.00 / (45,595.1 × 0.95) = 4.6173e-5 USD per accepted response.
    B200 (t=1) is ~2.4× faster but at 10.00 USD/GPU-h costs more per response, so H100 ranks first.
    """
    shortlist = ranked({"H100 80": reference("2.00"), "B200 180": reference("10.00"), "H200 141": reference("4.00")})
    assert names(shortlist)[:3] == ["H100 80", "H200 141", "B200 180"]
    assert shortlist.cost_currency == "USD"
    h100 = shortlist.entries[0]
    assert h100.cost.prediction.requests_per_s_per_replica == pytest.approx(12.6653, rel=1e-4)
    assert h100.cost.outputs_per_hour == Decimal("45595.1")
    assert h100.cost.acceptance == Decimal("0.95") and h100.cost.acceptance_stated
    assert h100.cost.cost_per_accepted_output == Decimal("2.00") / (Decimal("45595.1") * Decimal("0.95"))
    assert f"{h100.cost.cost_per_accepted_output:.5g}" == "0.000046173"
    # The ones without a price follow in their old order (fit, guide direction, bandwidth) and say why.
    rest = [entry for entry in shortlist.entries if entry.cost is None]
    assert [entry.gpu_fit.gpu.name for entry in rest][:2] == ["A100 80", "Unknown 96"]
    missing = {entry.gpu_fit.gpu.name: entry.cost_missing for entry in rest}
    assert missing["A100 80"] == COST_MISSING_PRICE and missing["Unknown 96"] == COST_MISSING_PREDICTION
    assert [entry.rank for entry in shortlist.entries] == list(range(1, len(CATALOG) + 1))


def test_a_gpu_that_needs_more_gpus_is_costed_for_all_of_them():
    """The RTX 24 GB needs tensor parallelism for this workload: its prediction runs on the fewest GPUs that fit and
    its cost multiplies the price by them (price × t ÷ replica outputs)."""
    shortlist = ranked({"RTX 24": reference("0.30")})
    rtx = next(entry for entry in shortlist.entries if entry.gpu_fit.gpu.name == "RTX 24")
    assert rtx.gpus_needed and rtx.gpus_needed > 1
    assert rtx.cost.gpus == rtx.gpus_needed == rtx.cost.prediction.tensor_parallel
    expected = Decimal("0.30") * rtx.gpus_needed / (rtx.cost.outputs_per_hour * Decimal("0.95"))
    assert rtx.cost.cost_per_accepted_output == expected


def test_a_price_in_another_currency_is_not_compared_and_says_so():
    shortlist = ranked({"H100 80": reference("2.00"), "H200 141": reference("3.00"), "B200 180": reference("1", "EUR")})
    b200 = next(entry for entry in shortlist.entries if entry.gpu_fit.gpu.name == "B200 180")
    assert b200.cost is None and b200.cost_missing == COST_MISSING_CURRENCY
    assert names(shortlist)[:2] == ["H100 80", "H200 141"]


def test_a_gpu_that_never_fits_gets_no_cost_even_with_a_price_and_a_prediction():
    """rank_by_predicted_cost costs only fitting entries: one marked DOES_NOT_FIT keeps no cost and says why."""
    costed = ranked({"H100 80": reference("2.00")})
    h100 = costed.entries[0]
    entries = tuple(replace(entry, fit_class=DOES_NOT_FIT) if entry is h100 else entry for entry in costed.entries)
    again = rank_by_predicted_cost(replace(costed, entries=entries), {"H100 80": h100.cost.prediction},
                                   {"H100 80": reference("2.00")})
    entry = next(entry for entry in again.entries if entry.gpu_fit.gpu.name == "H100 80")
    assert entry.cost is None and entry.cost_missing == COST_MISSING_DOES_NOT_FIT
    assert again.cost_currency is None  # nothing was costed


def test_workloads_without_generated_tokens_keep_the_old_ranking():
    summary = SimpleNamespace(**{**REALTIME_READY_FIELDS, "workload_type": "embedding", "batch_size": 32})
    analysis = estimates.analyse(estimates.plan_for(summary), CATALOG)
    assert predictions.shortlist_predictions(summary, analysis, PEAKS) is None


def test_without_a_stated_acceptance_the_cost_assumes_every_output_is_accepted():
    shortlist = ranked({"H100 80": reference("2.00")}, quality_acceptance_rate=None)
    h100 = shortlist.entries[0]
    assert h100.cost.acceptance == 1 and not h100.cost.acceptance_stated


# --- the registry ---------------------------------------------------------------------------------------------------


@pytest.fixture
def only_test_providers():
    saved = price_sources.providers()
    for name in saved:
        price_sources.unregister(name)
    yield
    for name in price_sources.providers():
        price_sources.unregister(name)
    for name, provider in saved.items():
        price_sources.register(provider, name=name)


def test_known_prices_prefer_a_quote_to_a_reference_and_the_cheaper_of_a_kind(only_test_providers):
    quote = PriceRef(Decimal("3.10"), "USD", "quote #1", QUOTE)
    cheaper_quote = PriceRef(Decimal("2.90"), "USD", "quote #2", QUOTE)
    price_sources.register(lambda team, keys: {"h100": reference("1.00"), "b200": reference("6.00")}, name="refs")
    price_sources.register(lambda team, keys: {"h100": quote}, name="quotes-a")
    price_sources.register(lambda team, keys: {"h100": cheaper_quote, "other": quote}, name="quotes-b")
    known = price_sources.known_prices(None, ["h100", "b200"])
    assert known == {"h100": cheaper_quote, "b200": reference("6.00")}  # "other" was not asked for


def test_a_price_ref_refuses_a_non_positive_or_float_amount():
    with pytest.raises(ValueError):
        PriceRef(Decimal("0"), "USD", "x", QUOTE)
    with pytest.raises(ValueError):
        PriceRef(2.5, "USD", "x", QUOTE)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        PriceRef(Decimal("1"), "USD", "x", "guess")


def test_a_catalog_reference_figure_becomes_a_labelled_reference_price():
    spec = SimpleNamespace(value=Decimal("2.9900"), source_url="https://example.test/prices", source_text="",
                           as_of=datetime.date(2026, 3, 1))
    price = price_sources.reference_price_of(spec)
    assert price == PriceRef(Decimal("2.9900"), "USD",
                             "catalog reference (https://example.test/prices, as of 2026-03-01)", REFERENCE,
                             datetime.date(2026, 3, 1))
    assert price_sources.reference_price_of(SimpleNamespace(value=Decimal(0), source_url="", source_text="x",
                                                            as_of=datetime.date(2026, 3, 1))) is None
