"""Notifications about decision records: approval requests, decisions and revisit flags, in the app and by email,
each kind and channel chosen by each person."""

import socketserver
import threading

import pytest
from django.core import mail
from django.urls import reverse

from apps.decisions import notifications
from apps.decisions.models import Notification, NotificationPreference, StageKind
from apps.decisions.tests import records_builders as build
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _tasks_run_inline():
    """.delay() runs the task here instead of publishing to a broker."""
    from config.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = previous


def _events(user):
    return sorted(Notification.objects.filter(recipient=user).values_list("event", flat=True))


def test_proposing_asks_the_platform_reviewers_in_the_app_and_by_email(team, django_capture_on_commit_callbacks):
    who = build.people(team)
    second = UserFactory(username="second-platform", roles=["platform"], teams=[team])
    with django_capture_on_commit_callbacks(execute=True):
        setup = build.proposed(team, who)
    assert _events(who.reviewer) == ["stage_requested"] and _events(second) == ["stage_requested"]
    assert _events(who.author) == [] and _events(who.finance) == []
    recipients = sorted(address for message in mail.outbox for address in message.to)
    assert recipients == sorted([who.reviewer.email, second.email])
    message = next(message for message in mail.outbox if who.reviewer.email in message.to)
    assert setup.record.reference in message.subject and setup.record.get_absolute_url() in message.body
    notification = Notification.objects.get(recipient=who.reviewer)
    assert notification.emailed_at is not None
    # Sending again sends nothing: the email is claimed once.
    assert notifications.send_notification_email(notification.pk) is False


def test_each_signature_asks_the_next_stage_and_the_decision_tells_the_people_of_the_record(
    team, django_capture_on_commit_callbacks
):
    setup = build.proposed(team)
    build.sign(setup, StageKind.PLATFORM)
    assert _events(setup.people.finance) == ["stage_requested"]
    build.sign(setup, StageKind.FINANCE)
    assert Notification.objects.filter(recipient=setup.people.product, event="stage_requested").exists()
    with django_capture_on_commit_callbacks(execute=True):
        build.sign(setup, StageKind.PRODUCT)
    assert "accepted" in _events(setup.people.author)
    assert "accepted" in _events(setup.people.finance)  # informed, and a reviewer
    assert "accepted" not in _events(setup.people.product)  # the one who just signed
    assert any("was accepted" in message.subject for message in mail.outbox)


def test_a_person_chooses_which_notifications_reach_them_and_where(team, client, django_capture_on_commit_callbacks):
    who = build.people(team)
    client.force_login(who.reviewer)
    response = client.post(reverse("records:notification-preferences"), data={
        "approval_request_in_app": "on", "decision_in_app": "on", "decision_email": "on",
        "revisit_in_app": "on", "revisit_email": "on",  # approval requests: in the app only
    })
    assert response.status_code == 302
    preference = NotificationPreference.objects.get(user=who.reviewer)
    assert preference.approval_request_in_app and not preference.approval_request_email

    with django_capture_on_commit_callbacks(execute=True):
        build.proposed(team, who)
    assert _events(who.reviewer) == ["stage_requested"]
    assert mail.outbox == []

    notifications.preference_set(user=who.reviewer, approval_request_in_app=False)
    assert notifications.preference_for(who.reviewer).wants("approval_request", "in_app") is False


def test_nothing_is_stored_for_a_person_who_wants_neither_channel(team):
    who = build.people(team)
    notifications.preference_set(user=who.reviewer, approval_request_in_app=False, approval_request_email=False)
    build.proposed(team, who)
    assert _events(who.reviewer) == []


def test_the_notifications_page_lists_ones_own_and_marks_them_read(team, client):
    setup = build.proposed(team)
    client.force_login(setup.people.reviewer)
    page = client.get(reverse("records:notifications")).content.decode()
    assert f"{setup.record} waits for your sign-off: Platform review." in page
    assert client.get(reverse("records:list")).content.decode().count('id="unread-count"') == 1

    client.post(reverse("records:notifications-read"))
    assert not Notification.objects.filter(recipient=setup.people.reviewer, read_at__isnull=True).exists()

    client.force_login(setup.people.finance)  # someone else's notifications are not shown
    assert "waits for your sign-off" not in client.get(reverse("records:notifications")).content.decode()


def test_marking_read_touches_only_ones_own_notifications(team, client):
    setup = build.proposed(team)
    theirs = Notification.objects.get(recipient=setup.people.reviewer)
    client.force_login(setup.people.finance)
    client.post(reverse("records:notifications-read"), data={"notification": [theirs.pk]})
    theirs.refresh_from_db()
    assert theirs.read_at is None


class _SmtpHandler(socketserver.StreamRequestHandler):
    """Just enough of an SMTP server to receive one message (EHLO, MAIL, RCPT, DATA, QUIT)."""

    def handle(self):
        self.wfile.write(b"220 records-test ESMTP\r\n")
        lines: list[bytes] = []
        receiving = False
        while line := self.rfile.readline():
            if receiving:
                if line.rstrip(b"\r\n") == b".":
                    self.server.messages.append(b"".join(lines).decode("utf-8", "replace"))
                    receiving, lines = False, []
                    self.wfile.write(b"250 queued\r\n")
                else:
                    lines.append(line)
                continue
            command = line[:4].upper()
            if command == b"DATA":
                receiving = True
                self.wfile.write(b"354 end with a dot\r\n")
            elif command == b"QUIT":
                self.wfile.write(b"221 bye\r\n")
                return
            else:
                self.wfile.write(b"250 ok\r\n")


@pytest.fixture
def smtp_server():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _SmtpHandler)
    server.messages = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_emails_go_through_smtp_when_the_settings_say_so(team, settings, smtp_server):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = smtp_server.server_address
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    setup = build.proposed(team)
    notification = Notification.objects.get(recipient=setup.people.reviewer)
    assert notifications.send_notification_email(notification.pk) is True
    (message,) = smtp_server.messages
    assert f"To: {setup.people.reviewer.email}" in message
    assert f"{setup.record} waits for your sign-off" in message


def test_line_breaks_in_a_title_or_a_reason_are_collapsed_in_the_subject_and_the_email_is_sent(team):
    """A rejection whose record title and reason hold CR/LF: before, send_mail raised BadHeaderError and nothing was
    sent; now the subject is one line (each run of line breaks a space), no header is injected, the body keeps them."""
    from apps.decisions.models import NotificationKind

    setup = build.proposed(team)
    mail.outbox.clear()
    notification = Notification.objects.create(
        recipient=setup.people.reviewer, record=setup.record, kind=NotificationKind.DECISION, event="rejected",
        params={"record": "GPU deal\r\nBcc: intruder@example.test", "stage": "", "reviewer": "fin",
                "reason": "too\n\nexpensive"},
        in_app=True, email_wanted=True,
    )
    assert notifications.send_notification_email(notification.pk) is True
    (message,) = mail.outbox
    assert message.subject == (
        "[Dossier] GPU deal Bcc: intruder@example.test was rejected at the stage  by fin: too expensive"
    )
    assert message.bcc == [] and message.message()["Bcc"] is None
    assert "too\n\nexpensive" in message.body


def test_single_line_collapses_every_kind_of_line_break():
    assert notifications.single_line("a\r\nb\rc\nd\u2028e\x85f  \n") == "a b c d e f"
