"""Who may read the comparison and enter phase-4 inputs (docs/permissions.md): every role of the owning team reads
(finance included: it checks the cost math), platform and admin write, another team's user gets 404."""

import pytest
from django.urls import reverse

from apps.audit.models import ObjectChange
from apps.comparison.tests.url_fixtures import make_compared_workload
from apps.evidence.models import CandidateFigure
from apps.evidence.tests.url_fixtures import make_figure, make_figure_candidate
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

READ_PAGES = ["comparison:comparison", "comparison:comparison-print", "comparison:comparison-csv",
              "comparison:comparison-xlsx", "comparison-api:comparison"]


@pytest.fixture
def summary(team):
    return make_compared_workload(team)


@pytest.mark.parametrize("url_name", READ_PAGES)
@pytest.mark.parametrize("role", ["platform", "finance", "product", "admin"])
def test_every_role_of_the_team_reads_the_comparison(client, team, summary, url_name, role):
    client.force_login(UserFactory(username=f"reader-{role}", roles=[role], teams=[team]))
    assert client.get(reverse(url_name, args=[summary.pk])).status_code == 200


@pytest.mark.parametrize("url_name", READ_PAGES)
def test_outsider_gets_404_for_the_comparison(client, summary, outsider, url_name):
    client.force_login(outsider)
    assert client.get(reverse(url_name, args=[summary.pk])).status_code == 404


@pytest.mark.parametrize("url_name", READ_PAGES)
def test_anonymous_and_roleless_users_are_refused(client, summary, roleless_user, url_name):
    url = reverse(url_name, args=[summary.pk])
    anonymous = client.get(url)
    assert anonymous.status_code in (302, 401, 403)
    client.force_login(roleless_user)
    assert client.get(url).status_code in (401, 403)


def test_finance_reads_a_candidates_inputs_but_cannot_enter_one(client, team, finance_user):
    candidate = make_figure_candidate(team)
    client.force_login(finance_user)
    url = reverse("evidence:candidate-figures", args=[candidate.pk])
    page = client.get(url)
    assert page.status_code == 200 and 'id="input-form"' not in page.content.decode()
    refused = client.post(url, {"metric": "failure_rate", "value": "0.01", "source": "measured", "reference": "job:1"})
    assert refused.status_code == 403
    assert not candidate.figures.filter(metric="failure_rate").exists()


@pytest.mark.parametrize("role", ["finance", "product"])
def test_readers_cannot_edit_or_remove_an_input(client, team, role):
    item = make_figure(team)
    client.force_login(UserFactory(username=f"reader-{role}", roles=[role], teams=[team]))
    assert client.get(reverse("evidence:figure-edit", args=[item.pk])).status_code == 403
    assert client.post(reverse("evidence:figure-remove", args=[item.pk])).status_code == 403
    assert CandidateFigure.objects.filter(pk=item.pk).exists()


def test_outsider_gets_404_for_inputs(client, team, other_team):
    item = make_figure(team)
    outsider_admin = UserFactory(username="outside-admin", roles=["platform", "admin"], teams=[other_team])
    client.force_login(outsider_admin)
    assert client.get(reverse("evidence:candidate-figures", args=[item.candidate_id])).status_code == 404
    assert client.post(reverse("evidence:candidate-figures", args=[item.candidate_id]),
                       {"metric": "failure_rate", "value": "0.01", "source": "measured", "reference": "job:1"}
                       ).status_code == 404
    assert client.get(reverse("evidence:figure-edit", args=[item.pk])).status_code == 404
    assert client.post(reverse("evidence:figure-remove", args=[item.pk])).status_code == 404
    assert client.get(reverse("evidence-api:figure-detail", args=[item.pk])).status_code == 404
    assert client.patch(reverse("evidence-api:figure-detail", args=[item.pk]), {"value": "1"},
                        content_type="application/json").status_code == 404
    assert client.delete(reverse("evidence-api:figure-detail", args=[item.pk])).status_code == 404
    listed = client.get(reverse("evidence-api:figure-list")).json()
    assert listed["count"] == 0
    created = client.post(reverse("evidence-api:figure-list"),
                          {"candidate": item.candidate_id, "metric": "failure_rate", "value": "0.01",
                           "source": "measured", "reference": "job:1"}, content_type="application/json")
    assert created.status_code == 400 and "candidate" in created.json()
    assert CandidateFigure.objects.filter(pk=item.pk).exists()


@pytest.mark.parametrize("role", ["platform", "admin"])
def test_platform_and_admin_enter_an_input_in_the_browser_with_an_audit_entry(client, team, role):
    candidate = make_figure_candidate(team)
    user = UserFactory(username=f"writer-{role}", roles=[role], teams=[team])
    client.force_login(user)
    response = client.post(reverse("evidence:candidate-figures", args=[candidate.pk]), {
        "metric": "p95_latency_ms", "value": "850", "source": "estimated", "estimate_reason": "vendor's benchmark",
    })
    assert response.status_code == 302
    item = candidate.figures.get(metric="p95_latency_ms")
    assert (item.value, item.source, item.estimated_by, item.entered_by) == (850, "estimated", user.username, user)
    entry = ObjectChange.objects.filter(object_id=str(item.pk), content_type__model="candidatefigure").get()
    assert entry.action == ObjectChange.Action.CREATE and entry.actor == user and entry.team == team


def test_browser_form_names_the_missing_provenance(client, team, platform_user):
    candidate = make_figure_candidate(team)
    client.force_login(platform_user)
    response = client.post(reverse("evidence:candidate-figures", args=[candidate.pk]),
                           {"metric": "failure_rate", "value": "0.01", "source": "quoted", "reference": ""})
    assert response.status_code == 400
    assert "A measured or quoted figure needs its reference." in response.content.decode()


@pytest.mark.parametrize("role", ["finance", "product"])
def test_readers_cannot_write_through_the_api(client, team, role):
    item = make_figure(team)
    client.force_login(UserFactory(username=f"api-reader-{role}", roles=[role], teams=[team]))
    assert client.get(reverse("evidence-api:figure-detail", args=[item.pk])).status_code == 200
    assert client.post(reverse("evidence-api:figure-list"),
                       {"candidate": item.candidate_id, "metric": "failure_rate", "value": "0.01",
                        "source": "measured", "reference": "job:1"}, content_type="application/json"
                       ).status_code == 403
    assert client.patch(reverse("evidence-api:figure-detail", args=[item.pk]), {"value": "1"},
                        content_type="application/json").status_code == 403
    assert client.delete(reverse("evidence-api:figure-detail", args=[item.pk])).status_code == 403


def test_platform_writes_through_the_api(client, team, platform_user):
    item = make_figure(team)
    client.force_login(platform_user)
    created = client.post(reverse("evidence-api:figure-list"),
                          {"candidate": item.candidate_id, "metric": "failure_rate", "value": "0.004",
                           "source": "quoted", "reference": "quote:77"}, content_type="application/json")
    assert created.status_code == 201, created.content
    assert created.json()["value"] == "0.004" and created.json()["entered_by"] == platform_user.username
    # A measured figure is the benchmark's: a person replaces it with a quoted or estimated one, never edits it.
    changed = client.patch(reverse("evidence-api:figure-detail", args=[item.pk]),
                           {"value": "6.5", "source": "quoted", "reference": "quote:77"},
                           content_type="application/json")
    assert changed.status_code == 200 and changed.json()["value"] == "6.5"
    item.refresh_from_db()
    assert str(item.value) == "6.5" and item.source == "quoted" and item.capacity_unit == "requests_per_second"
    refused = client.patch(reverse("evidence-api:figure-detail", args=[item.pk]),
                           {"source": "estimated"}, content_type="application/json")
    assert refused.status_code == 400 and "estimate" in str(refused.json()).lower()
    assert client.delete(reverse("evidence-api:figure-detail", args=[item.pk])).status_code == 204
    assert not CandidateFigure.objects.filter(pk=item.pk).exists()
    actions = list(ObjectChange.objects.filter(object_id=str(item.pk), content_type__model="candidatefigure")
                   .order_by("pk").values_list("action", flat=True))
    assert actions[-2:] == [ObjectChange.Action.UPDATE, ObjectChange.Action.DELETE]


def test_input_form_offers_the_figures_that_matter_for_the_candidate(client, team, platform_user):
    from apps.comparison.tests.builders import api_candidate, workload
    from apps.comparison.tests.test_training_comparison import TRAINING_WORKLOAD, _cluster

    client.force_login(platform_user)

    def offered(candidate):
        page = client.get(reverse("evidence:candidate-figures", args=[candidate.pk])).content.decode()
        form = page.split('id="input-form"')[1]
        return {metric for metric in ("capacity_at_slo", "p95_latency_ms", "training_tokens_per_second",
                                      "retry_rate", "memory_margin") if f'value="{metric}"' in form}

    gpu = make_figure_candidate(team)
    api = api_candidate(team, platform_user, gpu.workload_summary, label="API route")
    cluster = _cluster(team, platform_user, workload(team, **TRAINING_WORKLOAD), label="Cluster", price="3.00",
                       gpus_per_node=8, node_count=1, throughput="30000", commercial_model="on_demand")
    assert offered(gpu) == {"capacity_at_slo", "p95_latency_ms", "retry_rate", "memory_margin"}
    assert offered(api) == {"p95_latency_ms", "retry_rate"}
    assert offered(cluster) == {"training_tokens_per_second", "memory_margin"}
