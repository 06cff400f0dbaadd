"""Notifications about decision records: in the app and by email (Django's email backend: the console by default,
SMTP when EMAIL_BACKEND and its settings say so). Each person chooses which kinds they receive, and where.

A notification stores an event code and its parameters, never a sentence: the text is made when it is read, in the
reader's language (an e-mail: the language the recipient chose, apps/accounts/language.py). The e-mail's link is
absolute, on DOSSIER_SITE_URL (apps/common/site.py). Emails are sent by the task `decisions.email_notification`,
queued when the transaction commits.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from apps.accounts.language import language_of
from apps.common.site import absolute_url
from apps.decisions.models import DecisionRecord, Notification, NotificationKind, NotificationPreference, StageKind

#: The kind (what the preferences choose) of each event.
EVENT_KINDS = {
    "stage_requested": NotificationKind.APPROVAL_REQUEST,
    "approvals_withdrawn": NotificationKind.APPROVAL_REQUEST,
    "accepted": NotificationKind.DECISION,
    "rejected": NotificationKind.DECISION,
    "superseded": NotificationKind.DECISION,
    "revisit_flagged": NotificationKind.REVISIT,
}


#: Line breaks an email header must not contain (Django refuses CR and LF with BadHeaderError; the others would let
#: a mail client start a new line too).
_LINE_BREAKS = re.compile(r"[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]+")


def single_line(text: str) -> str:
    """The text on one line, every run of line breaks a space: for an email subject or any other header."""
    return _LINE_BREAKS.sub(" ", text).strip()


def preference_for(user) -> NotificationPreference:
    """The person's preferences (the defaults, unsaved, when they never changed them)."""
    found = NotificationPreference.objects.filter(user_id=user.pk).first()
    return found if found is not None else NotificationPreference(user=user)


def notification_text(notification: Notification) -> str:
    """The sentence of a notification in the active language."""
    params = dict(notification.params or {})
    params.setdefault("record", "")
    if "stage" in params:
        params["stage"] = str(StageKind(params["stage"]).label) if params["stage"] in StageKind.values else ""
    event = notification.event
    if event == "stage_requested":
        return _("%(record)s waits for your sign-off: %(stage)s.") % params
    if event == "approvals_withdrawn":
        return _(
            "The inputs of %(record)s changed after it was proposed: the approvals given so far were withdrawn "
            "and it must be proposed again."
        ) % params
    if event == "accepted":
        return _("%(record)s was accepted.") % params
    if event == "rejected":
        return _("%(record)s was rejected at the stage %(stage)s by %(reviewer)s: %(reason)s") % {
            "reviewer": "", "reason": "", **params
        }
    if event == "superseded":
        return _("%(record)s was superseded by %(new)s.") % {"new": "", **params}
    if event == "revisit_flagged":
        return _("%(record)s should be revisited: %(count)s new reason(s).") % {"count": 0, **params}
    return event


def team_members_with_role(team, role: str):
    """The active members of `team` holding `role` (superusers are not reviewers by default)."""
    return (
        get_user_model()
        .objects.filter(memberships__team=team, groups__name=role, is_active=True)
        .distinct()
        .order_by("username")
    )


def notify(
    *,
    record: DecisionRecord,
    recipients: Iterable,
    event: str,
    params: dict | None = None,
    exclude: Iterable = (),
) -> list[Notification]:
    """One notification per distinct recipient who wants this kind in the app or by email."""
    from apps.decisions.tasks import email_notification

    kind = EVENT_KINDS[event]
    excluded = {user.pk for user in exclude if getattr(user, "pk", None)}
    payload = {"record": str(record), **(params or {})}
    created = []
    seen: set[int] = set()
    for user in recipients:
        if user is None or user.pk in seen or user.pk in excluded or not user.is_active:
            continue
        seen.add(user.pk)
        preference = preference_for(user)
        in_app = preference.wants(kind, "in_app")
        email = preference.wants(kind, "email") and bool(user.email)
        if not (in_app or email):
            continue
        notification = Notification.objects.create(
            recipient=user, record=record, kind=kind, event=event, params=payload, in_app=in_app, email_wanted=email
        )
        created.append(notification)
        if email:
            email_notification.delay_on_commit(notification.pk)
    return created


def send_notification_email(notification_id: int) -> bool:
    """Send one notification's email once: the row is claimed with a conditional UPDATE before sending."""
    claimed = Notification.objects.filter(
        pk=notification_id, email_wanted=True, emailed_at__isnull=True
    ).update(emailed_at=timezone.now())
    if claimed != 1:
        return False
    notification = Notification.objects.select_related("recipient", "record").get(pk=notification_id)
    # In the language the recipient chose (the worker's default when they never chose), with a link that opens from
    # a mail client (DOSSIER_SITE_URL).
    with translation.override(language_of(notification.recipient) or translation.get_language()):
        text = notification_text(notification)
        link = absolute_url(notification.record.get_absolute_url())
        body = "\n\n".join([text, _("Open the record: %(path)s") % {"path": link}])
    try:
        send_mail(
            # The product's name, then the sentence in the reader's language, on one line: a record title or a
            # rejection reason may hold line breaks, which a header must not (it failed with BadHeaderError).
            subject=f"[Dossier] {single_line(text)[:150]}",
            message=body,
            from_email=settings.DEFAULT_FROM_EMAIL,
            recipient_list=[notification.recipient.email],
        )
    except Exception:
        # Unclaim it so the next try sends it, then let the worker see the failure.
        Notification.objects.filter(pk=notification_id).update(emailed_at=None)
        raise
    return True


def mark_read(*, user, notification_ids: Iterable[int] | None = None) -> int:
    """Mark the user's notifications read (all of them when no ids are given)."""
    unread = Notification.objects.filter(recipient_id=user.pk, read_at__isnull=True)
    if notification_ids is not None:
        unread = unread.filter(pk__in=list(notification_ids))
    return unread.update(read_at=timezone.now())


@transaction.atomic
def preference_set(*, user, **choices: bool) -> NotificationPreference:
    unknown = set(choices) - {
        f"{kind}_{channel}" for kind in NotificationKind.values for channel in ("in_app", "email")
    }
    if unknown:
        raise TypeError(f"not notification preferences: {sorted(unknown)}")
    preference, _created = NotificationPreference.objects.get_or_create(user=user)
    for name, value in choices.items():
        setattr(preference, name, bool(value))
    preference.full_clean()
    preference.save()
    return preference
