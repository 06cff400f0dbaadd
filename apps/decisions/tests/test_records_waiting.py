"""Sign-off for a team that works in the browser: the records waiting for my signature (page and header count), the
unread-notifications count in the header, e-mails with absolute links in the recipient's own language."""

import pytest
from django.core import mail
from django.urls import reverse
from django.utils import translation

from apps.accounts.language import language_set
from apps.decisions import notifications, selectors, services
from apps.decisions.models import Notification, StageKind
from apps.decisions.tests import records_builders as build
from tests.factories import TeamFactory, UserFactory

pytestmark = pytest.mark.django_db


def waiting(user) -> list[tuple[int, str]]:
    return [(stage.record_id, stage.kind) for stage in selectors.stages_waiting_for(user)]


def agrees_with_stage_refusal(user, record) -> bool:
    """The list says what the sign-off rules say: listed exactly when the current stage waits and `user` may sign."""
    record.refresh_from_db()
    stage = services.current_stage(record)
    may = stage is not None and services.stage_refusal(user, record, stage.kind) is None
    return may == any(record_id == record.pk for record_id, _kind in waiting(user))


def test_the_current_stage_waits_for_the_people_whose_role_signs_it_and_moves_on_as_they_sign(team):
    setup = build.proposed(team)
    who, record = setup.people, setup.record
    assert waiting(who.reviewer) == [(record.pk, StageKind.PLATFORM)]
    assert waiting(who.finance) == [] and waiting(who.product) == []  # not their turn yet
    assert waiting(who.author) == []  # holds the platform role, but wrote the record

    build.sign(setup, StageKind.PLATFORM)
    assert waiting(who.reviewer) == []
    assert waiting(who.finance) == [(record.pk, StageKind.FINANCE)]

    build.sign(setup, StageKind.FINANCE, StageKind.PRODUCT)  # accepted: nothing waits any more
    assert [waiting(person) for person in (who.reviewer, who.finance, who.product)] == [[], [], []]


def test_someone_who_signed_one_stage_is_not_asked_for_the_next_and_the_list_follows_the_sign_off_rules(team):
    """A member holding platform and finance signs the platform review: the finance stage needs another person."""
    both = UserFactory(username="both-roles", roles=["platform", "finance"], teams=[team])
    who = build.people(team)
    setup = build.proposed(team, build.People(author=who.author, reviewer=both, finance=who.finance,
                                              product=who.product))
    assert waiting(both) == [(setup.record.pk, StageKind.PLATFORM)]
    build.sign(setup, StageKind.PLATFORM)
    assert waiting(both) == []
    assert waiting(who.finance) == [(setup.record.pk, StageKind.FINANCE)]
    for person in (both, who.author, who.finance, who.product):
        assert agrees_with_stage_refusal(person, setup.record), person.username


def test_another_teams_records_and_withdrawn_proposals_wait_for_nobody_here(team):
    setup = build.proposed(team)
    stranger = UserFactory(username="other-platform", roles=["platform"], teams=[TeamFactory(name="Elsewhere")])
    assert waiting(stranger) == []
    services.record_withdraw(actor=setup.people.author, record=setup.record)
    assert waiting(setup.people.reviewer) == []


def test_the_waiting_page_lists_the_record_with_its_stage_and_a_link_to_sign(team, client):
    setup = build.proposed(team)
    client.force_login(setup.people.reviewer)
    response = client.get(reverse("records:waiting"))
    assert response.status_code == 200
    page = response.content.decode()
    assert f'data-record="{setup.record.pk}" data-stage="platform"' in page
    assert f'href="{reverse("records:detail", args=[setup.record.pk])}#stage-' in page

    client.force_login(setup.people.finance)
    page = client.get(reverse("records:waiting")).content.decode()
    assert "data-stage=" not in page and "Nothing waits for your signature." in page


def test_the_header_counts_what_waits_for_me_and_my_unread_notifications_on_every_page(team, client):
    setup = build.proposed(team)  # asks the platform reviewer: one stage waits, one unread notification
    client.force_login(setup.people.reviewer)
    home = client.get(reverse("home")).content.decode()
    assert 'id="nav-waiting"' in home and 'id="nav-notifications"' in home
    assert '<span class="badge badge-warn" translate="no">1</span>' in home  # waiting
    assert '<span class="badge badge-warn" id="nav-unread-count" translate="no">1</span>' in home

    notifications.mark_read(user=setup.people.reviewer)
    home = client.get(reverse("home")).content.decode()
    assert 'id="nav-unread-count"' not in home and 'id="nav-notifications"' in home

    client.force_login(setup.people.finance)  # informed of nothing yet, no stage of theirs waits
    home = client.get(reverse("catalog:list")).content.decode()
    assert 'id="nav-waiting"' in home and "badge-warn" not in home.split('id="nav-waiting"')[1].split("</a>")[0]


def test_a_signed_in_user_without_a_role_gets_no_sign_off_links(team, client):
    client.force_login(UserFactory(username="no-role", teams=[team]))
    page = client.get(reverse("home")).content.decode()  # 403, in the site's layout
    assert 'id="nav-waiting"' not in page


@pytest.fixture
def _tasks_run_inline():
    from config.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = previous


@pytest.mark.usefixtures("_tasks_run_inline")
def test_the_email_links_to_the_record_on_the_site_url(team, settings, django_capture_on_commit_callbacks):
    settings.DOSSIER_SITE_URL = "https://dossier.example.com"
    who = build.people(team)
    with django_capture_on_commit_callbacks(execute=True):
        setup = build.proposed(team, who)
    message = next(message for message in mail.outbox if who.reviewer.email in message.to)
    assert f"https://dossier.example.com/decisions/records/{setup.record.pk}/" in message.body


@pytest.mark.usefixtures("_tasks_run_inline")
def test_without_a_site_url_the_email_carries_the_path(team, settings, django_capture_on_commit_callbacks):
    settings.DOSSIER_SITE_URL = ""
    who = build.people(team)
    with django_capture_on_commit_callbacks(execute=True):
        setup = build.proposed(team, who)
    message = next(message for message in mail.outbox if who.reviewer.email in message.to)
    assert f": /decisions/records/{setup.record.pk}/" in message.body


@pytest.mark.usefixtures("_tasks_run_inline")
def test_the_email_is_written_in_the_language_the_recipient_chose(team, django_capture_on_commit_callbacks):
    who = build.people(team)
    plain = UserFactory(username="plain-platform", roles=["platform"], teams=[team])
    language_set(user=who.reviewer, language="fr")
    with django_capture_on_commit_callbacks(execute=True):
        setup = build.proposed(team, who)
    notification = Notification.objects.get(recipient=who.reviewer)
    with translation.override("fr"):
        french = notifications.notification_text(notification)
    english = notifications.notification_text(notification)  # the tests run in English
    assert french != english and "attend votre signature" in french
    to_reviewer = next(message for message in mail.outbox if who.reviewer.email in message.to)
    assert french in to_reviewer.subject and french in to_reviewer.body
    second = next(message for message in mail.outbox if message.to == [plain.email])
    assert "waits for your sign-off" in second.subject  # a platform member who never chose: the default language
    assert setup.record.reference in second.subject
