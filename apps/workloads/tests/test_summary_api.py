"""The summaries API: scoped to the team, written through the services (versions), 400 naming the field."""

import json

import pytest
from django.urls import reverse

from apps.workloads.models import Status, Workload, WorkloadSummary
from apps.workloads.tests.factories import (
    CODE_AGENT_READY_FIELDS,
    REALTIME_READY_FIELDS,
    WorkloadSummaryFactory,
    draft_summary,
    ready_summary,
)

pytestmark = pytest.mark.django_db


def api_body(fields=REALTIME_READY_FIELDS, **changes):
    body = {**fields, **changes}
    return json.loads(json.dumps(body, default=str))


def post(client, url, body):
    return client.post(url, data=json.dumps(body), content_type="application/json")


def test_the_list_holds_only_the_team_summaries(client_for, finance_user, team, other_team):
    mine = WorkloadSummaryFactory(team=team)
    WorkloadSummaryFactory(team=other_team)
    response = client_for(finance_user).get(reverse("workloads-api:summary-list"))
    assert response.status_code == 200
    assert [item["id"] for item in response.json()["results"]] == [mine.pk]


def test_a_summary_shows_its_missing_fields_and_metric(client_for, finance_user, team):
    summary = draft_summary(team, num_kv_heads=None)
    body = client_for(finance_user).get(reverse("workloads-api:summary-detail", args=[summary.pk])).json()
    assert [item["field"] for item in body["missing_fields"]] == ["num_kv_heads"]
    assert body["proposed_metric"] == body["effective_metric"] == "cost_per_response"
    assert body["tools"] == ["vllm", "kubernetes"]


def test_platform_files_a_summary(client_for, platform_user, team):
    response = post(client_for(platform_user), reverse("workloads-api:summary-list"), api_body())
    assert response.status_code == 201, response.json()
    summary = WorkloadSummary.objects.get()
    assert response.json()["id"] == summary.pk and summary.team == team and summary.version == 1


def test_a_config_json_object_fills_the_shape(client_for, platform_user):
    config = {
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "max_position_embeddings": 8192,
        "torch_dtype": "bfloat16",
    }
    body = {"name": "Chat", "workload_type": "batch_inference", "config": config}
    response = post(client_for(platform_user), reverse("workloads-api:summary-list"), body)
    assert response.status_code == 201, response.json()
    summary = WorkloadSummary.objects.get()
    assert (summary.num_kv_heads, summary.ffn_size, summary.config_json) == (8, 14336, config)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"num_layers": -1}, "num_layers"),
        ({"hidden_size": 10**9}, "hidden_size"),
        ({"num_kv_heads": 5}, "num_kv_heads"),
        ({"head_dim": 4096}, "head_dim"),
        ({"precision": "fp12"}, "precision"),
        ({"tools": ["vllm", "magic"]}, "tools"),
        ({"config": "{not json"}, "config"),
        ({"config": {"model_type": "llama"}}, "config"),
        ({"mean_input_tokens": 99999}, "mean_input_tokens"),
        ({"p95_input_tokens": 8000}, "p95_input_tokens"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_saves_nothing(client_for, platform_user, changes, field):
    response = post(client_for(platform_user), reverse("workloads-api:summary-list"), api_body(**changes))
    assert response.status_code == 400
    assert field in response.json(), response.json()
    assert not Workload.objects.exists() and not WorkloadSummary.objects.exists()


def test_editing_a_ready_summary_answers_with_version_2(client_for, platform_user, team):
    ready = ready_summary(team)
    url = reverse("workloads-api:summary-detail", args=[ready.pk])
    response = client_for(platform_user).patch(url, data=json.dumps({"batch_size": 4}), content_type="application/json")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["version"] == 2 and body["status"] == "draft" and body["batch_size"] == 4
    ready.refresh_from_db()
    assert ready.batch_size is None and ready.status == Status.READY
    old = client_for(platform_user).get(url).json()
    assert old["is_latest"] is False and old["newer_version"].endswith(f"/summaries/{body['id']}/")


def test_marking_ready_through_the_api(client_for, platform_user, team):
    incomplete = draft_summary(team, streaming=None)
    client = client_for(platform_user)
    refused = client.post(reverse("workloads-api:summary-ready", args=[incomplete.pk]))
    assert refused.status_code == 400
    # The one error shape of the API: each missing field with why it is needed.
    assert list(refused.json()) == ["streaming"] and all(refused.json()["streaming"])
    incomplete.refresh_from_db()
    assert incomplete.status == Status.DRAFT

    complete = draft_summary(team)
    accepted = client.post(reverse("workloads-api:summary-ready", args=[complete.pk]))
    assert accepted.status_code == 200 and accepted.json()["status"] == "ready"


def test_the_analysis_holds_the_estimate_shortlist_and_hints(client_for, finance_user, team, loaded_catalog):
    summary = ready_summary(team, model_change_cadence="yearly")
    body = client_for(finance_user).get(reverse("workloads-api:summary-analysis", args=[summary.pk])).json()
    assert body["estimate"]["kind"] == "inference"
    assert {term["name"] for term in body["estimate"]["breakdown"]["terms"]} >= {"weights", "kv_cache"}
    assert len(body["estimate"]["gpus"]) == loaded_catalog.count()
    assert body["shortlist"]["row"] == "realtime_llm"
    assert [hint["code"] for hint in body["capacity_hints"]] == ["steady_inference"]


def test_a_code_agent_filed_through_the_api_becomes_ready_and_is_judged_per_accepted_task(
    client_for, platform_user, team, loaded_catalog
):
    client = client_for(platform_user)
    created = post(client, reverse("workloads-api:summary-list"), api_body(CODE_AGENT_READY_FIELDS))
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["missing_fields"] == []
    assert body["workload_type"] == "code_agent" and body["unit_of_success"] == "accepted_task"
    assert body["proposed_metric"] == body["effective_metric"] == "cost_per_task"

    ready = client.post(reverse("workloads-api:summary-ready", args=[body["id"]]))
    assert ready.status_code == 200, ready.json()
    assert ready.json()["status"] == "ready"

    analysis = client.get(reverse("workloads-api:summary-analysis", args=[body["id"]])).json()
    assert analysis["estimate"]["kind"] == "inference"
    assert analysis["shortlist"]["row"] == "code_agent"
    assert [hint["code"] for hint in analysis["capacity_hints"]] == []  # always on, the model changes each quarter


def test_finance_reads_but_cannot_write(client_for, finance_user, team):
    summary = draft_summary(team)
    client = client_for(finance_user)
    assert client.get(reverse("workloads-api:summary-detail", args=[summary.pk])).status_code == 200
    assert post(client, reverse("workloads-api:summary-list"), api_body()).status_code == 403
    patch = client.patch(
        reverse("workloads-api:summary-detail", args=[summary.pk]), data="{}", content_type="application/json"
    )
    assert patch.status_code == 403
    assert client.post(reverse("workloads-api:summary-ready", args=[summary.pk])).status_code == 403
    assert WorkloadSummary.objects.get().status == Status.DRAFT


def test_summaries_are_never_deleted(client_for, platform_user, team):
    summary = draft_summary(team)
    response = client_for(platform_user).delete(reverse("workloads-api:summary-detail", args=[summary.pk]))
    assert response.status_code == 405
    assert WorkloadSummary.objects.filter(pk=summary.pk).exists()
