"""candidate_figure_set / candidate_figure_remove: one figure per candidate and metric, always with its provenance,
every change in the audit log."""

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from apps.audit.models import ObjectChange
from apps.evidence.models import CandidateFigure
from apps.evidence.services import candidate_figure_remove, candidate_figure_set
from apps.evidence.tests.url_fixtures import make_figure_candidate

pytestmark = pytest.mark.django_db


@pytest.fixture
def candidate(team):
    return make_figure_candidate(team)


def _entries(item_id):
    return list(ObjectChange.objects.filter(content_type__model="candidatefigure", object_id=str(item_id))
                .order_by("pk"))


def test_setting_a_figure_twice_changes_it_and_keeps_the_old_value_in_the_audit_log(candidate, platform_user):
    first = candidate_figure_set(actor=platform_user, candidate=candidate, metric="p99_latency_ms", value="1800",
                             source="quoted", reference="vendor SLA, page 4")
    second = candidate_figure_set(actor=platform_user, candidate=candidate, metric="p99_latency_ms", value="1650",
                              source="measured", reference="job:88")
    assert first.pk == second.pk
    assert candidate.figures.filter(metric="p99_latency_ms").count() == 1
    second.refresh_from_db()
    assert (second.value, second.source, second.reference) == (Decimal(1650), "measured", "job:88")
    create, update = _entries(first.pk)
    assert create.action == ObjectChange.Action.CREATE and update.action == ObjectChange.Action.UPDATE
    assert update.changes["value"] == ["1800", "1650"]
    assert update.changes["reference"] == ["vendor SLA, page 4", "job:88"]


def test_an_estimate_names_who_and_why_and_drops_any_reference(candidate, platform_user):
    item = candidate_figure_set(actor=platform_user, candidate=candidate, metric="failure_rate", value="0.002",
                            source="estimated", reference="ignored", estimate_reason="last quarter's incidents")
    assert (item.estimated_by, item.reference) == (platform_user.username, "")
    named = candidate_figure_set(actor=platform_user, candidate=candidate, metric="failure_rate", value="0.002",
                             source="estimated", estimated_by="SRE lead", estimate_reason="incident log")
    assert named.estimated_by == "SRE lead"


@pytest.mark.parametrize(("values", "field", "message"), [
    ({"metric": "failure_rate", "value": "0.01", "source": "estimated"}, "__all__", "who estimated it and why"),
    ({"metric": "failure_rate", "value": "0.01", "source": "measured"}, "__all__", "needs its reference"),
    ({"metric": "failure_rate", "value": "1.5", "source": "measured", "reference": "job:1"}, "value", "fraction"),
    ({"metric": "tested_concurrency", "value": "12.5", "source": "measured", "reference": "job:1"}, "value",
     "whole number"),
    ({"metric": "p95_latency_ms", "value": "-3", "source": "measured", "reference": "job:1"}, "value", "negative"),
    ({"metric": "headroom", "value": "abc", "source": "measured", "reference": "job:1"}, "value", "decimal"),
    ({"metric": "nonsense", "value": "1", "source": "measured", "reference": "job:1"}, "metric", "Unknown"),
])
def test_bad_figures_are_refused_with_the_field_named(candidate, platform_user, values, field, message):
    with pytest.raises(ValidationError) as refused:
        candidate_figure_set(actor=platform_user, candidate=candidate, **values)
    assert message in " ".join(refused.value.message_dict[field])


def test_capacity_needs_its_unit_and_a_positive_value(team, platform_user):
    candidate = make_figure_candidate(team)
    with pytest.raises(ValidationError) as refused:
        candidate_figure_set(actor=platform_user, candidate=candidate, metric="capacity_at_slo", value="0",
                         source="measured", reference="job:2", capacity_unit="")
    assert set(refused.value.message_dict) == {"value", "capacity_unit"}
    other = candidate_figure_set(actor=platform_user, candidate=candidate, metric="retry_rate", value="0.01",
                             source="measured", reference="job:3", capacity_unit="requests_per_second")
    assert other.capacity_unit == ""  # a unit only belongs to the capacity


def test_removing_a_figure_is_audited(candidate, platform_user):
    item = candidate.figures.get(metric="retry_rate")
    candidate_figure_remove(actor=platform_user, item=item)
    assert not CandidateFigure.objects.filter(pk=item.pk).exists()
    entry = _entries(item.pk)[-1]
    assert entry.action == ObjectChange.Action.DELETE and entry.before["value"] == "0.01"
    assert entry.team == candidate.team


def test_for_user_scopes_inputs_to_the_users_teams(candidate, platform_user, outsider):
    assert CandidateFigure.objects.for_user(platform_user).filter(candidate=candidate).count() == 2
    assert not CandidateFigure.objects.for_user(outsider).exists()
