"""Signals the quotes app sends for the layers above it, which may not be imported from here (CONTRIBUTING.md: arrows
point down only). A higher app connects its receivers in its own `AppConfig.ready()`.
"""

from __future__ import annotations

import logging

from django.dispatch import Signal

logger = logging.getLogger(__name__)

#: Sent once the transaction that added a price version has committed (never for a rolled-back one).
#: sender: the PriceVersion class; keyword argument `price_version`: the new version (saved, committed).
price_version_committed = Signal()


def send_price_version_committed(price_version) -> None:
    """Tell the receivers about a committed price version. A receiver that fails is logged and does not stop the
    others nor the request that recorded the price: the price is committed already, and the daily tasks catch up."""
    from apps.quotes.models import PriceVersion

    for receiver, response in price_version_committed.send_robust(sender=PriceVersion, price_version=price_version):
        if isinstance(response, Exception):
            logger.error(
                "price_version_committed receiver %r failed for price version %s",
                receiver, price_version.pk, exc_info=response,
            )
