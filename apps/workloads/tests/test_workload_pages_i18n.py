"""Every workloads page, filled with real data, in the pseudo-locale: no text outside a translation or translate="no".

(tests/test_translations.py renders each URL once with minimal objects; this renders the full pages: a complete
summary with its estimate, chart and shortlist, form errors, config.json notices and the refused "mark ready".)
"""

import json

import pytest
from django.conf import settings
from django.urls import reverse

from apps.workloads.tests.factories import draft_summary, ready_summary
from tests.i18n_tools import PSEUDO_LANGUAGE, extract_messages, shipped_third_party_messages, untranslated_text
from tests.i18n_tools import write_pseudo_catalog as write_catalog

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def pseudo_keys(tmp_path_factory):
    extracted = extract_messages(tmp_path_factory.mktemp("makemessages"))
    keys = {(entry.msgctxt or "", entry.msgid, entry.msgid_plural or "") for po in extracted.values() for entry in po}
    return keys | shipped_third_party_messages()


@pytest.fixture
def pseudo_client(settings, pseudo_keys, tmp_path, client_for, platform_user):
    write_catalog(pseudo_keys, tmp_path)
    settings.LOCALE_PATHS = [tmp_path, *settings.LOCALE_PATHS]
    settings.LANGUAGES = [*settings.LANGUAGES, (PSEUDO_LANGUAGE, "Pseudo")]
    client = client_for(platform_user)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = PSEUDO_LANGUAGE
    return client


def assert_translated(response):
    assert response.status_code < 500
    offenders = list(dict.fromkeys(untranslated_text(response.content.decode())))
    assert not offenders, offenders


def test_full_pages_are_translated(pseudo_client, team, loaded_catalog):
    ready = ready_summary(
        team,
        model_change_cadence="yearly",
        decision_metric="cost_per_record_or_token",
        decision_metric_reason="billed per token",
        shape_extras={"qkv_bias": True},
    )
    draft = draft_summary(team, workload=ready.workload, version=2, p99_e2e_ms=None)
    training = draft_summary(
        team, workload_type="full_fine_tuning", training_sequence_length=4096, zero_stage=1, data_parallel_gpus=8
    )
    media = draft_summary(
        team,
        workload_type="image_generation",
        architecture="diffusion",
        params=2_000_000_000,
        image_width_px=1024,
        image_height_px=1024,
    )
    for url in (
        reverse("workloads:list"),
        reverse("workloads:list") + "?latest=false&status=ready",
        ready.get_absolute_url(),
        draft.get_absolute_url(),
        training.get_absolute_url(),
        media.get_absolute_url(),
        reverse("workloads:create"),
        reverse("workloads:edit", args=[draft.pk]),
    ):
        assert_translated(pseudo_client.get(url))
    assert_translated(pseudo_client.post(reverse("workloads:mark-ready", args=[draft.pk])))


def test_form_errors_and_config_notices_are_translated(pseudo_client, team):
    config = {
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "kv_lora_rank": 8,
        "qk_rope_head_dim": 4,
    }
    validate = reverse("workloads:validate")
    assert_translated(
        pseudo_client.post(validate, {"workload_type": "realtime_inference", "config_json_text": json.dumps(config)})
    )
    assert_translated(
        pseudo_client.post(
            validate, {"config_json_text": "{broken", "num_layers": "-1", "params": "900000", "precision": "fp12"}
        )
    )
    assert_translated(
        pseudo_client.post(
            reverse("workloads:create"),
            {"workload_type": "realtime_inference", "num_attention_heads": "32", "num_kv_heads": "5"},
        )
    )


def test_the_french_page_uses_french_everywhere(client_for, platform_user, team, loaded_catalog):
    client = client_for(platform_user)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "fr"
    page = client.get(ready_summary(team).get_absolute_url()).content.decode()
    assert "Estimation de l’adéquation mémoire" in page
    assert "Latence p95/p99, capacité du cache KV" in page  # the quick-answer row, from the rules data
    assert "Cache KV" in page  # a term label from the estimator
