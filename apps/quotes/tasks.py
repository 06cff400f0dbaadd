"""Celery tasks of the quotes app: thin wrappers around services."""

from celery import shared_task

from apps.quotes import services


@shared_task(name="quotes.flag_stale_prices", ignore_result=True)
def flag_stale_prices() -> dict:
    """Beat task: open a flag for every current price that turned stale or expired, clear those that no longer are."""
    report = services.stale_prices_flag()
    return {"flagged": report.flagged, "cleared": report.cleared, "open": report.open}
