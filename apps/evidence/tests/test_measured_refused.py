"""A person cannot type a measured figure: measured figures come from benchmark results (linked to the result that
measured them, apps/benchmarks/measurements.py). Quoted and estimated figures are entered as before."""

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from apps.evidence.forms import CandidateFigureForm
from apps.evidence.models import CandidateFigure
from apps.evidence.services import candidate_figure_enter
from apps.evidence.tests.url_fixtures import make_figure_candidate

pytestmark = pytest.mark.django_db

REFUSED = "Measured figures come from benchmark results"


def test_the_service_refuses_a_typed_measured_figure_on_the_source_field(team, platform_user):
    candidate = make_figure_candidate(team)
    with pytest.raises(ValidationError) as refused:
        candidate_figure_enter(actor=platform_user, candidate=candidate, metric="failure_rate", value="0.01",
                               source="measured", reference="job:42")
    assert REFUSED in refused.value.message_dict["source"][0]
    assert not candidate.figures.filter(metric="failure_rate").exists()
    quoted = candidate_figure_enter(actor=platform_user, candidate=candidate, metric="failure_rate", value="0.01",
                                    source="quoted", reference="https://vendor.example.test/sla")
    assert quoted.source == "quoted"


def test_the_form_refuses_measured_with_a_field_error_and_offers_only_quoted_and_estimated():
    form = CandidateFigureForm({"metric": "failure_rate", "value": "0.01", "source": "measured",
                                "reference": "job:42"})
    assert not form.is_valid()
    assert REFUSED in form.errors["source"][0]
    offered = [value for value, _label in form.fields["source"].widget.choices]
    assert offered == ["quoted", "estimated"]


def test_the_page_refuses_a_typed_measured_figure(client, team, platform_user):
    candidate = make_figure_candidate(team)
    client.force_login(platform_user)
    response = client.post(reverse("evidence:candidate-figures", args=[candidate.pk]),
                           {"metric": "failure_rate", "value": "0.01", "source": "measured", "reference": "job:42"})
    assert response.status_code == 400
    assert REFUSED in response.content.decode()
    assert not candidate.figures.filter(metric="failure_rate").exists()
    form = response.content.decode().split('id="input-form"')[1]
    assert 'value="measured"' not in form


def test_the_edit_page_refuses_keeping_a_figure_measured(client, team, platform_user):
    candidate = make_figure_candidate(team)
    item = candidate.figures.get(metric="capacity_at_slo")
    client.force_login(platform_user)
    response = client.post(reverse("evidence:figure-edit", args=[item.pk]),
                           {"value": "99", "capacity_unit": "requests_per_second", "source": "measured",
                            "reference": "job:1"})
    assert response.status_code == 400 and REFUSED in response.content.decode()
    item.refresh_from_db()
    assert item.value != 99 and item.source == "measured"


def test_the_api_refuses_a_typed_measured_figure_and_a_change_that_keeps_one_measured(client, team, platform_user):
    candidate = make_figure_candidate(team)
    item = candidate.figures.get(metric="capacity_at_slo")
    client.force_login(platform_user)
    created = client.post(reverse("evidence-api:figure-list"),
                          {"candidate": candidate.pk, "metric": "failure_rate", "value": "0.01",
                           "source": "measured", "reference": "job:42"}, content_type="application/json")
    assert created.status_code == 400
    assert REFUSED in str(created.json()["source"])
    assert not CandidateFigure.objects.filter(candidate=candidate, metric="failure_rate").exists()
    # Changing only the value of a measured figure would keep a typed number "measured".
    changed = client.patch(reverse("evidence-api:figure-detail", args=[item.pk]), {"value": "99"},
                           content_type="application/json")
    assert changed.status_code == 400 and REFUSED in str(changed.json()["source"])
    estimated = client.patch(reverse("evidence-api:figure-detail", args=[item.pk]),
                             {"value": "7", "source": "estimated", "estimate_reason": "vendor benchmark, derated"},
                             content_type="application/json")
    assert estimated.status_code == 200, estimated.content
    item.refresh_from_db()
    assert (item.source, str(item.value)) == ("estimated", "7")
