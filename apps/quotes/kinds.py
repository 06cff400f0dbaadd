"""The kinds of quotes and candidates that pure code shares with the models: what a candidate is, what its price is
counted in, and how the cost model bills it.

Pure Python (no Django). apps/quotes/models.py builds its TextChoices on these values (labels stay there, with
gettext); the cost model (apps/comparison/cost_model.py) and the mistakes use the enums directly.
"""

from __future__ import annotations

from enum import StrEnum


class CandidateKind(StrEnum):
    GPU = "gpu"
    PURCHASE = "purchase"
    API = "api"


class PriceUnit(StrEnum):
    GPU_HOUR = "gpu_hour"
    NODE_HOUR = "node_hour"
    MILLION_TOKENS = "million_tokens"
    REQUEST = "request"
    NODE_PURCHASE = "node_purchase"


#: The units of an hourly price: the only ones the cost model takes for a rental's unit price.
HOURLY_UNITS = frozenset({PriceUnit.GPU_HOUR, PriceUnit.NODE_HOUR})
#: The price units a model/API route or a managed endpoint may use; every other model rents or buys GPUs.
USAGE_UNITS = frozenset({PriceUnit.MILLION_TOKENS, PriceUnit.REQUEST})


class BillingModel(StrEnum):
    """How the cost model bills a quote (`Quote.billing_model`): hours used, committed hours, spot hours, owned
    hardware, or tokens. Several commercial models of a quote bill alike (a dedicated cluster with committed hours
    is billed as reserved)."""

    ON_DEMAND = "on_demand"
    RESERVED = "reserved"
    SPOT = "spot"
    PURCHASE = "purchase"
    API = "api"
