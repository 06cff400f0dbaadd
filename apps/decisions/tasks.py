"""Celery tasks of the decisions app: thin wrappers around services, idempotent, taking ids."""

from celery import shared_task


@shared_task(name="decisions.flag_records_for_revisit", ignore_result=True)
def flag_records_for_revisit() -> dict:
    """Beat task beside `quotes.flag_stale_prices`: flag accepted records to revisit (expired quotes, cited prices
    moved beyond the team's percentage, a newer workload version, the revisit date) and withdraw the approvals of
    proposed records whose inputs changed."""
    from apps.decisions import services

    report = services.records_flag_for_revisit()
    return {"flagged": report.flagged, "cleared": report.cleared, "withdrawn": report.withdrawn}


@shared_task(name="decisions.email_notification", ignore_result=True)
def email_notification(notification_id: int) -> bool:
    """Send one notification by email (once: a second run finds it sent and does nothing)."""
    from apps.decisions import notifications

    return notifications.send_notification_email(notification_id)
