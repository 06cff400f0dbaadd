"""The stateless estimate endpoint: shape + request → per-GPU breakdown and fit; bad input → 400 naming the field."""

import json

import pytest
from django.urls import reverse

from apps.audit.models import ObjectChange
from apps.workloads.models import WorkloadSummary

pytestmark = pytest.mark.django_db

LLAMA_3_8B_SHAPE = {
    "num_layers": 32,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_kv_heads": 8,
    "ffn_size": 14336,
    "vocab_size": 128256,
}
URL = "/api/v1/workloads/estimate/"


def estimate(client, body):
    return client.post(URL, data=json.dumps(body), content_type="application/json")


def test_the_url_is_the_documented_one():
    assert reverse("workloads-api:estimate") == URL


def test_an_inference_estimate_per_gpu(client_for, finance_user, loaded_catalog):
    audit_entries = ObjectChange.objects.count()
    body = {
        "kind": "inference",
        "shape": LLAMA_3_8B_SHAPE,
        "request": {"p95_context_tokens": 8192, "concurrent_sessions": 32},
    }
    response = estimate(client_for(finance_user), body)
    assert response.status_code == 200, response.json()
    data = response.json()
    kv = next(term for term in data["breakdown"]["terms"] if term["name"] == "kv_cache")
    assert kv["size_bytes"] == 131_072 * 8192 * 32 and kv["label"] == "KV cache"
    assert "2·n_kv·d" in kv["formula"]
    h200 = next(gpu for gpu in data["gpus"] if gpu["name"] == "NVIDIA H200 SXM")
    assert h200["capacity_bytes"] == 143_771 * 2**20 and h200["capacity_source"] == "catalog"
    assert h200["status"] in ("fits", "tight") and h200["largest_concurrency"] >= 32
    a100 = next(gpu for gpu in data["gpus"] if gpu["name"] == "NVIDIA A100 40GB PCIe")
    assert a100["capacity_source"] == "datasheet" and a100["capacity_bytes"] == 40 * 10**9
    assert data["smallest_fitting_gpu"] is not None
    assert not WorkloadSummary.objects.exists() and ObjectChange.objects.count() == audit_entries


def test_a_training_estimate_shards_model_states_with_zero_3(client_for, platform_user, loaded_catalog):
    body = {
        "kind": "training",
        "shape": LLAMA_3_8B_SHAPE,
        "request": {"sequence_length": 4096, "zero_stage": 3, "data_parallel_gpus": 64, "recompute": "full"},
    }
    response = estimate(client_for(platform_user), body)
    assert response.status_code == 200, response.json()
    data = response.json()
    assert data["kind"] == "training" and data["breakdown"]["gpus"] == 64
    optimizer = next(term for term in data["breakdown"]["terms"] if term["name"] == "optimizer_states")
    params = optimizer["inputs"]["P"]
    assert optimizer["size_bytes"] == -(-12 * params // 64)  # 12 bytes/param of fp32 states, sharded over 64 GPUs


def test_a_training_estimate_names_the_shape_it_lacks(client_for, platform_user, loaded_catalog):
    body = {
        "kind": "training",
        "shape": {"params": 7_500_000_000},
        "request": {"sequence_length": 1, "zero_stage": 3, "data_parallel_gpus": 64},
    }
    response = estimate(client_for(platform_user), body)
    assert response.status_code == 400  # the activations need the layer shape: named, not guessed
    assert "num_layers" in response.json()["shape"]


def test_config_json_fills_the_shape_and_shape_values_override_it(client_for, platform_user, loaded_catalog):
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
    body = {
        "kind": "inference",
        "config_json": json.dumps(config),
        "shape": {"precision": "fp8"},
        "request": {"p95_context_tokens": 4096, "concurrent_sessions": 1},
        "gpus": [loaded_catalog.first().pk],
    }
    data = estimate(client_for(platform_user), body).json()
    weights = next(term for term in data["breakdown"]["terms"] if term["name"] == "weights")
    assert "bytes(fp8)" in weights["formula"]
    assert len(data["gpus"]) == 1


@pytest.mark.parametrize(
    ("body", "where", "field"),
    [
        ({"shape": {**LLAMA_3_8B_SHAPE, "num_kv_heads": 5}}, "shape", "num_kv_heads"),
        ({"shape": {**LLAMA_3_8B_SHAPE, "head_dim": 4096}}, "shape", "head_dim"),
        ({"shape": {**LLAMA_3_8B_SHAPE, "num_layers": -2}}, "shape", "num_layers"),
        ({"shape": {**LLAMA_3_8B_SHAPE, "hidden_size": 10**9}}, "shape", "hidden_size"),
        ({"shape": {**LLAMA_3_8B_SHAPE, "precision": "fp12"}}, "shape", "precision"),
        ({"shape": {**LLAMA_3_8B_SHAPE, "layers": 3}}, "shape", "layers"),
        ({"request": {"p95_context_tokens": -1, "concurrent_sessions": 1}}, "request", "p95_context_tokens"),
        ({"request": {"p95_context_tokens": 10, "concurrent_sessions": 10**9}}, "request", "concurrent_sessions"),
        (
            {"request": {"p95_context_tokens": 10, "concurrent_sessions": 1, "kv_cache_precision": "int4"}},
            "request",
            "kv_cache_precision",
        ),
    ],
)
def test_bad_input_is_a_400_naming_the_field(client_for, platform_user, body, where, field):
    full = {
        "kind": "inference",
        "shape": LLAMA_3_8B_SHAPE,
        "request": {"p95_context_tokens": 1024, "concurrent_sessions": 1},
        **body,
    }
    response = estimate(client_for(platform_user), full)
    assert response.status_code == 400
    assert field in response.json()[where], response.json()
    assert not ObjectChange.objects.exists()


@pytest.mark.parametrize("config", ['{"hidden_size": 4096,', {"model_type": "llama"}])
def test_a_malformed_config_json_is_a_400(client_for, platform_user, config):
    body = {"kind": "inference", "config_json": config, "request": {"p95_context_tokens": 1, "concurrent_sessions": 1}}
    response = estimate(client_for(platform_user), body)
    assert response.status_code == 400 and "config_json" in response.json()


def test_unknown_gpus_and_missing_shape_are_400(client_for, platform_user, loaded_catalog):
    client = client_for(platform_user)
    request = {"p95_context_tokens": 1, "concurrent_sessions": 1}
    assert "shape" in estimate(client, {"kind": "inference", "request": request}).json()
    response = estimate(client, {"kind": "inference", "shape": LLAMA_3_8B_SHAPE, "request": request, "gpus": [999_999]})
    assert response.status_code == 400 and "gpus" in response.json()


def test_no_role_gets_403_and_anonymous_is_refused(client_for, roleless_user, client):
    body = {
        "kind": "inference",
        "shape": LLAMA_3_8B_SHAPE,
        "request": {"p95_context_tokens": 1, "concurrent_sessions": 1},
    }
    assert estimate(client, body).status_code in (401, 403)
    assert estimate(client_for(roleless_user), body).status_code == 403
