"""The actuals panel, its upload page with errors, and the revisit flag's text show no unmarked text: rendered in the
pseudo-locale of tests/test_translations.py, where every marked string reads "⟦…⟧" (data sits in translate="no")."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from apps.decisions.tests.records_builders import accepted
from tests.i18n_tools import untranslated_text
from tests.test_translations import _in_pseudo_locale, extracted, pseudo_locale  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db

SHEET = ("date,gpu_hours,outputs,accepted_outputs,spend,currency\n"
         "2026-01-01,48,1000000,1000000,351.50,USD\n2026-01-02,48,1010000,1000000,439.375,USD\n")


def test_the_actuals_pages_are_translated_in_the_pseudo_locale(pseudo_locale, client, team):  # noqa: F811
    setup = accepted(team)
    client = _in_pseudo_locale(client)
    client.force_login(setup.people.finance)
    upload = reverse("actuals:upload", args=[setup.record.pk])
    refused = client.post(upload, {"source": "x", "file": SimpleUploadedFile("a.csv", SHEET.replace(
        "439.375", "abc").encode())})
    assert refused.status_code == 400
    saved = client.post(upload, {"source": "AWS CUR", "file": SimpleUploadedFile("a.csv", SHEET.encode())})
    assert saved.status_code == 302
    offenders = []
    for label, response in (("refused upload", refused), ("record page", client.get(setup.record.get_absolute_url())),
                            ("upload page", client.get(upload))):
        offenders += [f"{label}: {text!r}" for text in untranslated_text(response.content.decode())]
    assert not offenders, "\n".join(offenders)
