"""The comparison's states the URL fixtures do not show (a training workload, inputs that stop the comparison, a
choice checked for mistakes, a refused form) show no untranslated text in the pseudo-locale either."""

import pytest
from django.conf import settings
from django.urls import reverse

from apps.comparison.tests.builders import workload
from apps.comparison.tests.test_training_comparison import TRAINING_WORKLOAD, _cluster
from apps.comparison.tests.url_fixtures import make_compared_workload
from apps.evidence.models import CandidateFigure
from tests.i18n_tools import untranslated_text
from tests.test_translations import extracted, pseudo_locale  # noqa: F401 - the pseudo-locale's fixtures

pytestmark = pytest.mark.django_db


def _offenders(client, url, **params):
    response = client.get(url, params)
    assert response.status_code in (200, 400), response.status_code
    return untranslated_text(response.content.decode())


def test_comparison_states_are_translated(pseudo_locale, client, team, platform_user):  # noqa: F811
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = pseudo_locale
    client.force_login(platform_user)
    training = workload(team, **TRAINING_WORKLOAD)
    cluster = _cluster(team, platform_user, training, label="Training cluster", price="3.00", gpus_per_node=8,
                       node_count=2, throughput="60000", commercial_model="on_demand")
    compared = make_compared_workload(team)
    capacity = CandidateFigure.objects.filter(candidate__workload_summary=compared, metric="capacity_at_slo").first()
    CandidateFigure.objects.filter(pk=capacity.pk).update(value=0)
    offenders = {
        "training": _offenders(client, reverse("comparison:comparison", args=[training.pk])),
        "training print": _offenders(client, reverse("comparison:comparison-print", args=[training.pk])),
        "bad input, chosen": _offenders(client, reverse("comparison:comparison", args=[compared.pk]),
                                        chosen=capacity.candidate_id),
        "refused form": untranslated_text(client.post(
            reverse("evidence:candidate-figures", args=[cluster.pk]),
            {"metric": "failure_rate", "value": "2", "source": "measured"}).content.decode()),
    }
    assert offenders == {name: [] for name in offenders}
