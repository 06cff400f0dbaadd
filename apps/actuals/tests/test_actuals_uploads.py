"""Actuals of an accepted record through the services and the record page: all or nothing, versions kept, drift beyond
the team's threshold flags the record and notifies its people, the frozen snapshot never changes.

The record is the worked example's choice B (reserved H200): 2 GPUs always on, decided at 0.0003515 USD per
accepted request (its frozen effective unit cost), 2 × 730 = 1,460 billed GPU-hours a 730-hour month (48 a day);
the team's revisit percentage is the default 10 %.
"""

from __future__ import annotations

import datetime

import pytest
from django.core.exceptions import PermissionDenied
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from apps.actuals import services
from apps.actuals.models import ActualDay, ActualsUpload
from apps.audit.models import ObjectChange
from apps.decisions import services as decision_services
from apps.decisions.models import Notification, RevisitFlag, RevisitReason
from apps.decisions.tests.records_builders import accepted, proposed
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

HEADER = "date,gpu_hours,outputs,accepted_outputs,spend,currency\n"
#: 351.50 + 439.375 = 790.875 USD for 2,000,000 accepted: 0.0003954375 each; ÷ 0.0003515 − 1 = +12.5 % > 10 %.
DEARER = HEADER + "2026-01-01,48,1000000,1000000,351.50,USD\n2026-01-02,48,1010000,1000000,439.375,USD\n"
#: 2 × 351.50 = 703 USD for 2,000,000 accepted: 0.0003515 each, exactly as decided (drift 0).
ON_PLAN = HEADER + "2026-01-01,48,1000000,1000000,351.50,USD\n2026-01-02,48,1000000,1000000,351.50,USD\n"


def _upload(setup, text: str, *, actor=None, name="january.csv"):
    return services.actuals_upload_file(actor=actor or setup.people.finance, record=setup.record, name=name,
                                        content=text.encode("utf-8"), source="AWS CUR export, January 2026")


def test_one_bad_row_saves_nothing_and_names_the_row_and_column(team, client):
    setup = accepted(team)
    bad = DEARER + "2026-01-03,48,1000000,1000000,12,EUR\n"  # row 4: not the decision's currency
    with pytest.raises(services.ActualsRejected) as caught:
        _upload(setup, bad)
    assert caught.value.details["errors"] == [{
        "row": 4, "column": "currency", "code": "wrong_currency",
        "message": "Row 4, column currency: The decision's figures are in USD; this row is in EUR.",
    }]
    assert not ActualsUpload.objects.exists() and not ActualDay.objects.exists()
    assert not RevisitFlag.objects.filter(reason=RevisitReason.ACTUAL_DRIFT).exists()
    later = (datetime.date.today() + datetime.timedelta(days=2)).isoformat()
    with pytest.raises(services.ActualsRejected) as caught:
        _upload(setup, HEADER + f"{later},1,1,1,1,USD\n")
    assert [(error["row"], error["column"], error["code"]) for error in caught.value.details["errors"]] == [
        (2, "date", "future_date")]

    # The same through the record's upload form: 400, the row and column on the page, nothing saved.
    client.force_login(setup.people.finance)
    response = client.post(reverse("actuals:upload", args=[setup.record.pk]), {
        "source": "AWS CUR export", "file": SimpleUploadedFile("january.csv", bad.replace(",12,", ",abc,").encode()),
    })
    assert response.status_code == 400
    assert "Row 4, column spend: “abc” is not a number." in response.content.decode()
    assert "Row 4, column currency" in response.content.decode()
    assert not ActualsUpload.objects.exists() and not ActualDay.objects.exists()


def test_drift_beyond_the_threshold_flags_the_record_and_notifies_its_people(team):
    setup = accepted(team)
    snapshot, sha = setup.record.snapshot_json, setup.record.snapshot_sha256
    before = set(Notification.objects.values_list("pk", flat=True))

    result = _upload(setup, DEARER)

    assert result.report.drift_percent == 12.5 and result.report.beyond_threshold and result.flag_opened
    flag = RevisitFlag.objects.get(record=setup.record, reason=RevisitReason.ACTUAL_DRIFT, cleared_at__isnull=True)
    assert flag.details["drift_percent"] == "12.50" and flag.details["threshold_percent"] == "10.00"
    assert flag.details["planned_exact"] == "0.0003515" and flag.details["actual_exact"] == "0.0003954375"
    told = Notification.objects.exclude(pk__in=before).filter(record=setup.record, event="revisit_flagged")
    # The record's people: its author (a decider) and finance (informed), as for every revisit reason.
    assert {note.recipient for note in told} == {setup.people.author, setup.people.finance}
    assert all(note.params["reasons"] == ["actual_drift"] for note in told)
    assert ObjectChange.objects.filter(object_id=str(result.upload.pk), action="create").exists()

    # The daily revisit task neither clears nor duplicates it.
    decision_services.records_flag_for_revisit()
    assert RevisitFlag.objects.filter(reason=RevisitReason.ACTUAL_DRIFT, cleared_at__isnull=True).count() == 1

    # A second version on plan is current; the first stays; the flag clears; nobody is told again.
    second = _upload(setup, ON_PLAN, actor=setup.people.author, name="january-corrected.csv")
    assert second.upload.version == 2 and second.report.drift == 0 and second.flag_cleared
    assert list(ActualsUpload.objects.filter(record=setup.record).values_list("version", flat=True)) == [2, 1]
    assert ActualDay.objects.filter(upload=result.upload).count() == 2
    assert not RevisitFlag.objects.filter(reason=RevisitReason.ACTUAL_DRIFT, cleared_at__isnull=True).exists()

    setup.record.refresh_from_db()
    assert (setup.record.snapshot_json, setup.record.snapshot_sha256) == (snapshot, sha)
    assert setup.record.snapshot_matches_hash()


def test_only_an_accepted_record_receives_actuals_and_only_from_the_upload_roles(team, client):
    setup = proposed(team)
    with pytest.raises(services.ActualsConflict):
        _upload(setup, ON_PLAN)
    product = UserFactory(roles=["product"], teams=[team])
    with pytest.raises(PermissionDenied):
        _upload(setup, ON_PLAN, actor=product)
    client.force_login(product)
    assert client.get(reverse("actuals:upload", args=[setup.record.pk])).status_code == 403
    client.force_login(setup.people.finance)
    response = client.post(reverse("actuals:upload", args=[setup.record.pk]),
                           {"source": "x", "file": SimpleUploadedFile("a.csv", ON_PLAN.encode())})
    assert response.status_code == 409
    assert not ActualsUpload.objects.exists()


def test_the_record_page_shows_planned_against_actual_and_the_history(team, client):
    setup = accepted(team)
    client.force_login(setup.people.finance)
    page = client.get(setup.record.get_absolute_url()).content.decode()
    assert 'id="actuals"' in page and 'id="actuals-upload-form"' in page and 'id="actuals-none"' in page

    response = client.post(reverse("actuals:upload", args=[setup.record.pk]), {
        "source": "AWS CUR export, January 2026", "file": SimpleUploadedFile("january.csv", DEARER.encode()),
    })
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    assert 'id="planned-against-actual"' in page
    assert 'data-exact="0.0003515"' in page and 'data-exact="0.0003954375"' in page
    assert "+12.5 %" in page and 'id="actuals-beyond"' in page
    # The revisit flag says why (shown unit costs: six significant digits).
    assert ('<li class="revisit-flag">Actuals version 1 (2026-01-01 to 2026-01-02): 0.000395438 USD per accepted '
            "output against 0.000351500 decided, 12.50 %; the team revisits beyond 10.00 %.</li>") in page
    assert "january.csv" in page and "AWS CUR export, January 2026" in page

    # The CSV of the version is in the upload format (it reads back as the same days).
    upload = ActualsUpload.objects.get()
    exported = client.get(reverse("actuals:export", args=[upload.pk]))
    lines = exported.content.decode().splitlines()
    assert lines[0] == HEADER.strip() and lines[1].startswith("2026-01-01,48") and len(lines) == 3

    # Product reads the panel but has no upload form.
    client.force_login(setup.people.product)
    page = client.get(setup.record.get_absolute_url()).content.decode()
    assert 'id="planned-against-actual"' in page and 'id="actuals-upload-form"' not in page

