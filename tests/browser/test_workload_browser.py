"""A platform engineer files a workload in real Chromium: the readiness list shrinks as the form is filled (htmx),
a pasted config.json fills the model shape, and the saved summary shows its memory chart against each GPU."""

import json
import re

import pytest
from django.core.management import call_command

from apps.workloads.models import Status, WorkloadSummary

pytestmark = pytest.mark.browser

LLAMA_3_8B_CONFIG = {
    "_name_or_path": "meta-llama/Meta-Llama-3-8B-Instruct",
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

# The rest of a real-time summary, in the order of the form: (field, how to set it, value).
REMAINING_FIELDS = [
    ("modality", "select", "text"),
    ("tokenizer", "fill", "Llama 3 tiktoken (128K)"),
    ("model_change_cadence", "select", "yearly"),
    ("mean_input_tokens", "fill", "1200"),
    ("p95_input_tokens", "fill", "3000"),
    ("mean_output_tokens", "fill", "250"),
    ("p95_output_tokens", "fill", "700"),
    ("concurrent_sessions_mean", "fill", "20"),
    ("concurrent_sessions_peak", "fill", "64"),
    ("arrival_rate_mean", "fill", "2.5"),
    ("arrival_rate_peak", "fill", "9"),
    ("demand_per_month", "fill", "4000000"),
    ("hours_per_day", "fill", "24"),
    ("days_per_month", "fill", "30"),
    ("unit_of_success", "select", "accepted_response"),
    ("quality_acceptance_rate", "fill", "0.95"),
    ("quality_acceptance_source", "fill", "offline eval of 500 transcripts"),
    ("latency_class", "select", "sub_second"),
    ("p95_ttft_ms", "fill", "800"),
    ("p99_ttft_ms", "fill", "1500"),
    ("p95_tpot_ms", "fill", "50"),
    ("p95_e2e_ms", "fill", "20000"),
    ("p99_e2e_ms", "fill", "30000"),
    ("streaming", "select", "true"),
    ("operating_mode", "select", "always_on"),
    ("operating_boundary", "select", "public_cloud"),
    ("tools", "check", "vllm"),
]


@pytest.fixture
def catalog(transactional_db):
    call_command("load_catalog", verbosity=0)


def missing(page) -> list[str]:
    return page.locator("#readiness-list li").evaluate_all("items => items.map(item => item.dataset.field)")


def set_field(page, name, how, value):
    if how == "select":
        page.locator(f"#id_{name}").select_option(value)
    elif how == "check":
        page.locator(f'input[name="{name}"][value="{value}"]').check()
    else:
        field = page.locator(f"#id_{name}")
        field.fill(value)
        field.press("Tab")  # leaving the field fires "change", as for a person


def test_filing_a_workload_shrinks_the_readiness_list_and_shows_the_chart(page, login, platform_user, catalog):
    login(page, platform_user)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Workloads").click()
    page.wait_for_url("**/workloads/")
    page.get_by_role("link", name="File a workload").click()
    page.wait_for_url("**/workloads/new/")
    universal = missing(page)
    assert universal[0] == "workload_type"

    page.locator("#id_name").fill("Support chat")
    page.locator("#id_workload_type").select_option("realtime_inference")
    page.wait_for_selector('#readiness-list li[data-field="p99_ttft_ms"]')  # real-time adds its latency limits
    for_realtime = missing(page)
    assert "workload_type" not in for_realtime and len(for_realtime) > len(universal) - 1

    config = page.locator("#id_config_json_text")
    config.fill(json.dumps(LLAMA_3_8B_CONFIG))
    config.press("Tab")
    page.wait_for_selector("#config-applied")
    assert page.locator("#id_num_kv_heads").input_value() == "8"
    assert page.locator("#id_model_name").input_value() == LLAMA_3_8B_CONFIG["_name_or_path"]
    after_config = missing(page)
    assert len(after_config) < len(for_realtime)
    assert "num_kv_heads" not in after_config and "vocab_size" not in after_config

    previous = after_config
    for name, how, value in REMAINING_FIELDS:
        set_field(page, name, how, value)
        if name in previous:
            page.wait_for_selector(f'#readiness-list li[data-field="{name}"]', state="detached")
            now = missing(page)
            assert len(now) < len(previous), name  # the list shrinks with every field that applies
            previous = now
    page.wait_for_selector("#readiness-complete")
    assert page.locator("#estimate-preview").inner_text().endswith("on one GPU")

    # A value the estimator rejects shows on its field at once, and nothing is typed away.
    set_field(page, "num_kv_heads", "fill", "5")
    page.wait_for_selector("#errors-num_kv_heads .errorlist")
    assert "must divide the attention heads" in page.locator("#errors-num_kv_heads").inner_text()
    set_field(page, "num_kv_heads", "fill", "8")
    page.wait_for_selector("#errors-num_kv_heads .errorlist", state="detached")

    page.get_by_role("button", name="Save draft").click()
    page.wait_for_url(re.compile(r"/workloads/\d+/$"))
    summary = WorkloadSummary.objects.get()
    assert (summary.num_kv_heads, summary.concurrent_sessions_peak, summary.tools) == (8, 64, ["vllm"])

    chart = page.locator("#memory-chart")
    chart.locator(".main-svg").first.wait_for()
    assert chart.locator(".main-svg").first.is_visible()
    assert chart.locator(".xtick").count() >= 10  # one bar per catalog GPU
    assert page.locator("#gpu-fit tbody tr").count() >= 10

    page.get_by_role("button", name="Mark ready").click()
    page.wait_for_selector("#status-badge.badge-ok")
    summary.refresh_from_db()
    assert summary.status == Status.READY
