"""The create and edit pages, config.json paste/upload, and the htmx validation that saves nothing."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from apps.workloads.models import Status, Workload, WorkloadSummary
from apps.workloads.tests.factories import (
    CODE_AGENT_READY_FIELDS,
    REALTIME_READY_FIELDS,
    draft_summary,
    ready_summary,
)

pytestmark = pytest.mark.django_db

LLAMA_3_8B_CONFIG = {
    "_name_or_path": "meta-llama/Meta-Llama-3-8B",
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 8192,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


def form_data(fields=REALTIME_READY_FIELDS, **changes):
    """The form's POST body for a complete summary, real-time unless `fields` says otherwise (billions for the
    parameter count, list for tools)."""
    data = {}
    for name, value in {**fields, **changes}.items():
        if value is None or value is False:
            continue
        if name == "tools":
            data[name] = list(value)
        elif value is True:
            data[name] = "true" if name == "streaming" else "on"
        else:
            data[name] = str(value)
    return data


def test_platform_files_a_workload_through_the_form(client_for, platform_user, team):
    response = client_for(platform_user).post(reverse("workloads:create"), form_data())
    summary = WorkloadSummary.objects.get()
    assert response.status_code == 302 and response["Location"] == summary.get_absolute_url()
    assert (summary.team, summary.version, summary.status) == (team, 1, Status.DRAFT)
    assert summary.tools == ["vllm", "kubernetes"] and summary.streaming is True
    assert summary.num_kv_heads == 8


def test_a_code_agent_filed_through_the_form_proposes_cost_per_task_and_becomes_ready(client_for, platform_user):
    client = client_for(platform_user)
    missing = client.post(reverse("workloads:validate"), form_data(CODE_AGENT_READY_FIELDS)).context["missing"]
    assert missing == []
    response = client.post(reverse("workloads:create"), form_data(CODE_AGENT_READY_FIELDS))
    summary = WorkloadSummary.objects.get()
    assert response.status_code == 302
    assert (summary.workload_type, summary.unit_of_success) == ("code_agent", "accepted_task")
    assert summary.proposed_metric == summary.effective_metric == "cost_per_task"

    ready = client.post(reverse("workloads:mark-ready", args=[summary.pk]))
    assert ready.status_code == 302
    summary.refresh_from_db()
    assert summary.status == Status.READY


def test_a_code_agent_form_asks_for_its_latency_and_load_but_not_training(client_for, platform_user):
    data = {"workload_type": "code_agent", "changed": "workload_type"}
    response = client_for(platform_user).post(reverse("workloads:validate"), data, HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert 'class="form-section not-needed" id="section-training"' in page
    missing = {row["field"] for row in response.context["missing"]}
    assert {"arrival_rate_peak", "p95_e2e_ms", "p99_e2e_ms", "p95_input_tokens"} <= missing
    assert "p99_ttft_ms" not in missing and "batch_size" not in missing


def test_parameters_are_entered_in_billions(client_for, platform_user):
    client_for(platform_user).post(reverse("workloads:create"), form_data(params="8.03"))
    assert WorkloadSummary.objects.get().params == 8_030_000_000


def test_a_pasted_config_json_fills_the_model_shape(client_for, platform_user):
    data = form_data(config_json_text=json.dumps(LLAMA_3_8B_CONFIG))
    for name in ("num_layers", "hidden_size", "num_attention_heads", "num_kv_heads", "ffn_size", "vocab_size"):
        data.pop(name)
    client_for(platform_user).post(reverse("workloads:create"), data)
    summary = WorkloadSummary.objects.get()
    assert (summary.num_layers, summary.hidden_size, summary.num_attention_heads) == (32, 4096, 32)
    assert (summary.num_kv_heads, summary.ffn_size, summary.vocab_size) == (8, 14336, 128256)
    assert summary.max_context_tokens == 8192 and summary.precision == "bf16"
    assert summary.config_json == LLAMA_3_8B_CONFIG


def test_an_uploaded_config_json_fills_the_form_while_validating(client_for, platform_user):
    upload = SimpleUploadedFile("config.json", json.dumps(LLAMA_3_8B_CONFIG).encode(), "application/json")
    response = client_for(platform_user).post(
        reverse("workloads:validate"), {"name": "Chat", "workload_type": "batch_inference", "config_json_file": upload}
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="config-applied"' in page
    assert 'name="num_kv_heads" value="8"' in page and 'name="hidden_size" value="4096"' in page
    assert 'name="model_name" value="meta-llama/Meta-Llama-3-8B"' in page
    assert not WorkloadSummary.objects.exists()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ('{"hidden_size": 4096,', "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        (json.dumps({**LLAMA_3_8B_CONFIG, "num_key_value_heads": 5}), "must divide"),
        (json.dumps({**LLAMA_3_8B_CONFIG, "torch_dtype": "float12"}), "Unknown precision"),
        (json.dumps({"model_type": "llama", "hidden_size": 4096}), "config.json has no"),
    ],
)
def test_a_malformed_config_json_is_a_clear_form_error_and_saves_nothing(client_for, platform_user, config, message):
    response = client_for(platform_user).post(reverse("workloads:create"), form_data(config_json_text=config))
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert "config_json_text" in errors
    assert message in errors["config_json_text"][0]
    assert "config.json could not be read" in errors["config_json_text"][0]
    assert not Workload.objects.exists()


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"num_layers": "-3"}, "num_layers", "greater than or equal to"),
        ({"hidden_size": "999999999"}, "hidden_size", "less than or equal to 262144"),
        ({"params": "-8"}, "params", "more than zero"),
        ({"params": "500000"}, "params", "implausibly large"),
        ({"params": "NaN"}, "params", "Enter a number"),
        ({"num_kv_heads": "5"}, "num_kv_heads", "must divide the attention heads"),
        ({"head_dim": "1024"}, "head_dim", "inconsistent"),
        ({"precision": "fp12"}, "precision", "valid choice"),
        ({"mean_output_tokens": "900"}, "mean_output_tokens", "cannot exceed the p95"),
        ({"p95_input_tokens": "8000"}, "p95_input_tokens", "exceed the model's context window"),
        ({"decision_metric": "cost_per_task"}, "decision_metric_reason", "Explain why"),
    ],
)
def test_bad_input_is_a_form_error_on_its_field_and_saves_nothing(client_for, platform_user, changes, field, message):
    response = client_for(platform_user).post(reverse("workloads:create"), form_data(**changes))
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert field in errors, errors
    assert message in " ".join(errors[field])
    assert not Workload.objects.exists() and not WorkloadSummary.objects.exists()


def test_validation_as_you_go_swaps_errors_and_readiness_but_never_the_inputs(client_for, platform_user):
    client = client_for(platform_user)
    data = {
        "workload_type": "realtime_inference",
        "num_kv_heads": "5",
        "num_attention_heads": "32",
        "changed": "num_kv_heads",
    }
    response = client.post(reverse("workloads:validate"), data, HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert response.status_code == 200
    assert page.lstrip().startswith('<div id="form-messages">')  # the target, then out-of-band pieces
    assert '<div class="field-errors" id="errors-num_kv_heads" hx-swap-oob="true">' in page
    assert "must divide the attention heads" in page
    assert "This field is required" not in page  # empty fields are not errors while filling in
    assert 'id="readiness-panel"' in page and 'data-field="p99_ttft_ms"' in page
    assert "<input" not in page  # what the user is typing elsewhere is never overwritten
    assert not Workload.objects.exists()


def test_a_new_workload_type_re_renders_the_whole_form(client_for, platform_user):
    response = client_for(platform_user).post(
        reverse("workloads:validate"), {"workload_type": "notebook", "changed": "workload_type"}, HTTP_HX_REQUEST="true"
    )
    assert response["HX-Retarget"] == "#workload-form-body" and response["HX-Reswap"] == "outerHTML"
    page = response.content.decode()
    assert page.lstrip().startswith('<div id="workload-form-body"')
    assert 'class="form-section not-needed" id="section-training"' in page  # a notebook trains nothing


def test_the_readiness_list_shrinks_as_fields_are_filled(client_for, platform_user):
    client = client_for(platform_user)
    url = reverse("workloads:validate")
    few = client.post(url, {"workload_type": "realtime_inference"}).context["missing"]
    more = client.post(url, form_data(p99_ttft_ms=None, tools=[])).context["missing"]
    assert len(more) < len(few)
    assert [row["field"] for row in more] == ["p99_ttft_ms", "tools"]
    done = client.post(url, form_data()).context["missing"]
    assert done == []


def test_editing_a_draft_saves_in_place(client_for, platform_user, team):
    summary = draft_summary(team)
    response = client_for(platform_user).post(reverse("workloads:edit", args=[summary.pk]), form_data(batch_size=16))
    assert response.status_code == 302
    summary.refresh_from_db()
    assert summary.batch_size == 16 and WorkloadSummary.objects.count() == 1


def test_editing_a_ready_summary_makes_version_2_and_leaves_version_1_intact(client_for, platform_user, team):
    ready = ready_summary(team)
    client = client_for(platform_user)
    page = client.get(reverse("workloads:edit", args=[ready.pk]))
    assert 'id="new-version-notice"' in page.content.decode()

    response = client.post(reverse("workloads:edit", args=[ready.pk]), form_data(concurrent_sessions_peak=96))

    successor = WorkloadSummary.objects.get(workload=ready.workload, version=2)
    assert response.status_code == 302 and response["Location"] == successor.get_absolute_url()
    assert successor.concurrent_sessions_peak == 96 and successor.status == Status.DRAFT
    ready.refresh_from_db()
    assert ready.concurrent_sessions_peak == 64 and ready.status == Status.READY


def test_editing_an_old_version_leads_to_the_newest(client_for, platform_user, team):
    ready = ready_summary(team)
    newer = draft_summary(team, workload=ready.workload, version=2)
    response = client_for(platform_user).get(reverse("workloads:edit", args=[ready.pk]))
    assert response.status_code == 302 and response["Location"] == reverse("workloads:edit", args=[newer.pk])


def test_the_create_page_renders_every_section(client_for, platform_user):
    page = client_for(platform_user).get(reverse("workloads:create")).content.decode()
    for section in ("workload", "model", "request", "training", "success", "latency", "operations", "metric"):
        assert f'id="section-{section}"' in page
    assert 'hx-post="/workloads/validate/"' in page


def test_the_form_sections_and_the_service_edit_the_same_fields():
    """forms.SECTIONS lays out what a person edits; services.EDITABLE_FIELDS is what the service accepts. They must
    not drift: every form field is editable, and the only editable fields without a form field are the two the form
    fills from the pasted config.json."""
    from apps.workloads.forms import FORM_FIELDS
    from apps.workloads.services import EDITABLE_FIELDS

    assert len(FORM_FIELDS) == len(set(FORM_FIELDS))
    assert set(EDITABLE_FIELDS) - set(FORM_FIELDS) == {"config_json", "shape_extras"}
    assert set(FORM_FIELDS) <= set(EDITABLE_FIELDS)
