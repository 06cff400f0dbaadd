"""Steps of the guided journey (tests/browser/test_guided_journey.py): each drives pages only, the way a person does,
and every signed-in browser records the paths of the pages it visits."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from tests.browser.conftest import TIMEOUT_MS


def label(text: str) -> re.Pattern:
    """A form label exactly, with or without Django's label suffix (":")."""
    return re.compile(rf"^{re.escape(text)}:?$")


@dataclass
class Visit:
    who: str
    path: str


@dataclass
class Browsers:
    """One browser context per person (their own cookies); every main-frame navigation is recorded in `visits`."""

    browser: object
    base_url: str
    visits: list[Visit] = field(default_factory=list)
    contexts: list = field(default_factory=list)

    def sign_in(self, username: str, password: str):
        context = self.browser.new_context(base_url=self.base_url, locale="en-US", accept_downloads=True)
        context.set_default_timeout(TIMEOUT_MS)
        self.contexts.append(context)
        page = context.new_page()

        def record(frame):
            if frame == page.main_frame:
                self.visits.append(Visit(username, urlsplit(frame.url).path))

        page.on("framenavigated", record)
        page.goto("/accounts/login/")
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(lambda url: "/accounts/login/" not in url)
        return page

    def paths(self) -> list[str]:
        return [visit.path for visit in self.visits]

    def close(self) -> None:
        for context in self.contexts:
            context.close()


def follow_step(page, step: str) -> None:
    """Click the link of a step of the workload's progress strip (apps/workloads/progress.py)."""
    link = page.locator(f'#progress-strip li[data-step="{step}"] a')
    href = link.get_attribute("href")
    link.click()
    page.wait_for_url(lambda url: urlsplit(url).path == urlsplit(href).path)


def open_workload(page, name: str) -> None:
    """From the main navigation: the workloads list, then the workload's page (with its progress strip)."""
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Workloads").click()
    page.wait_for_url("**/workloads/")
    page.get_by_role("link", name=name, exact=True).click()
    page.wait_for_url(re.compile(r"/workloads/\d+/$"))


def step_state(page, step: str) -> str:
    return page.locator(f'#progress-strip li[data-step="{step}"]').get_attribute("data-state")


def step_detail(page, step: str) -> str:
    return page.locator(f'#progress-strip li[data-step="{step}"] .progress-detail').inner_text()


def reload_until(page, selector: str, *, timeout: float, what: str, on_timeout=lambda: "") -> None:
    """Reload the page until `selector` shows, as a person waiting for a result does."""
    deadline = time.monotonic() + timeout
    while page.locator(selector).count() == 0:
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what} on {page.url}\n{on_timeout()}")
        page.wait_for_timeout(5_000)
        page.reload()


# --- team administration -------------------------------------------------------------------------------------------


def create_team(page, *, name: str, slug: str, currency: str) -> None:
    page.get_by_role("link", name="Team administration").first.click()
    page.wait_for_url("**/teams/")
    page.get_by_label(label("Name")).fill(name)
    page.get_by_label(label("Slug")).fill(slug)
    page.get_by_label(label("Reporting currency")).fill(currency)
    page.get_by_role("button", name="Create team").click()
    page.wait_for_url(re.compile(r"/teams/\d+/$"))


def create_person(page, *, username: str, email: str, roles: list[str]) -> str:
    """On the team's page: a person with roles; returns the one-time password the answer shows once."""
    team_url = page.url
    form = page.locator("form", has=page.get_by_role("button", name="Create with a one-time password"))
    form.get_by_label(label("Username")).fill(username)
    form.get_by_label(label("E-mail")).fill(email)
    for role in roles:
        form.locator(f'input[name="roles"][value="{role}"]').check()
    form.get_by_role("button", name="Create with a one-time password").click()
    page.get_by_role("heading", name="Person created").wait_for()
    password = page.locator("#one-time-password").inner_text().strip()
    page.get_by_role("link", name="Back to the team").click()
    page.wait_for_url(team_url)
    return password


def create_pool(page, *, name: str) -> tuple[str, str]:
    """On the team's page: an agent pool; returns its registration token and the register command, as the page
    shows them."""
    form = page.locator("form", has=page.get_by_role("button", name="Create pool and token"))
    form.get_by_label(label("Pool name")).fill(name)
    form.get_by_role("button", name="Create pool and token").click()
    page.get_by_role("heading", name="Pool created with its registration token").wait_for()
    return (page.locator("#registration-token").inner_text().strip(),
            page.locator("#register-command").inner_text().strip())


# --- the workload ---------------------------------------------------------------------------------------------------

#: A decoder small enough for a memory-fit probe on a CPU (2 layers, hidden 64), with the demand and SLO of a small
#: real-time service: (field, how to set it, value), in the order of the form.
WORKLOAD_FIELDS = [
    ("model_name", "fill", "tiny-decoder-2l"),
    ("architecture", "select", "dense"),
    ("precision", "select", "bf16"),
    ("num_layers", "fill", "2"),
    ("hidden_size", "fill", "64"),
    ("num_attention_heads", "fill", "4"),
    ("num_kv_heads", "fill", "2"),
    ("ffn_size", "fill", "128"),
    ("vocab_size", "fill", "256"),
    ("max_context_tokens", "fill", "512"),
    ("modality", "select", "text"),
    ("tokenizer", "fill", "byte-level BPE (256)"),
    ("model_change_cadence", "select", "yearly"),
    ("mean_input_tokens", "fill", "64"),
    ("p95_input_tokens", "fill", "96"),
    ("mean_output_tokens", "fill", "16"),
    ("p95_output_tokens", "fill", "32"),
    ("concurrent_sessions_mean", "fill", "1"),
    ("concurrent_sessions_peak", "fill", "2"),
    ("arrival_rate_mean", "fill", "1"),
    ("arrival_rate_peak", "fill", "2"),
    ("demand_per_month", "fill", "2000000"),
    ("hours_per_day", "fill", "24"),
    ("days_per_month", "fill", "30"),
    ("unit_of_success", "select", "accepted_response"),
    ("quality_acceptance_rate", "fill", "0.95"),
    ("quality_acceptance_source", "fill", "offline eval of 200 transcripts"),
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


def file_workload(page, *, name: str) -> None:
    """From the main navigation: file the workload summary in its form, save it, mark it ready."""
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Workloads").click()
    page.wait_for_url("**/workloads/")
    page.get_by_role("link", name="File a workload").click()
    page.wait_for_url("**/workloads/new/")
    page.locator("#id_name").fill(name)
    page.locator("#id_workload_type").select_option("realtime_inference")
    page.wait_for_selector('#readiness-list li[data-field="p99_ttft_ms"]')
    for name_, how, value in WORKLOAD_FIELDS:
        if how == "select":
            page.locator(f"#id_{name_}").select_option(value)
        elif how == "check":
            page.locator(f'input[name="{name_}"][value="{value}"]').check()
        else:
            page.locator(f"#id_{name_}").fill(value)
            page.locator(f"#id_{name_}").press("Tab")
    page.wait_for_selector("#readiness-complete")
    page.get_by_role("button", name="Save draft").click()
    page.wait_for_url(re.compile(r"/workloads/\d+/$"))
    page.get_by_role("button", name="Mark ready").click()
    page.wait_for_selector("#status-badge.badge-ok")


# --- quotes, checklist, candidate -----------------------------------------------------------------------------------

#: The questions every quote answers under the default commitment policy (apps/quotes/checklist_data.TIERS, "Every
#: quote"); commercial-model is answered from the quote itself.
EVERY_QUOTE_ANSWERS = {
    "gpu-model-memory-node": "1× H200 SXM 141 GB per node",
    "commitment-terms": "none: on demand, per second",
    "ancillary-costs": "egress 0.05 USD/GB, storage included",
    "idle-capacity-billing": "billed only while the instance runs",
}


def enter_quote(page, *, vendor: str, title: str, gpu_label: str) -> None:
    """From the team's journey: the quote's terms, then its checklist on one page, then its price with the vendor's
    file in one form."""
    page.get_by_role("link", name="The vendor is not listed? Add it first.").click()
    page.wait_for_url("**/quotes/vendors/new/**")
    page.get_by_label(label("Name")).fill(vendor)
    page.locator("main").get_by_role("button", name="Save").click()
    page.wait_for_url("**/quotes/new/**")

    page.get_by_label(label("Vendor")).select_option(label=vendor)
    page.get_by_label(label("Title")).fill(title)
    page.get_by_label(label("GPU")).select_option(label=gpu_label)
    page.get_by_label(label("GPUs per node")).fill("1")
    page.get_by_label(label("Commercial model")).select_option("on_demand")
    page.get_by_label(label("Price unit")).select_option("gpu_hour")
    page.get_by_label(label("Currency")).select_option("USD")
    page.get_by_role("button", name="Save and continue to the checklist").click()
    page.wait_for_url("**/checklist/")

    for code, value in EVERY_QUOTE_ANSWERS.items():
        page.locator(f'select[name="{code}-status"]').select_option("answered")
        page.locator(f'textarea[name="{code}-value"]').fill(value)
    page.get_by_role("button", name="Save the checklist").click()
    page.get_by_text("Checklist saved.").wait_for()

    page.get_by_role("link", name="Back to the quote").click()
    page.wait_for_url(re.compile(r"/quotes/\d+/$"))
    page.get_by_role("link", name="Record a price").click()
    page.wait_for_url("**/prices/new/**")
    page.get_by_label(label("Priced item")).select_option("list_price")
    page.get_by_label(label("Amount")).fill("3.72")
    page.get_by_label(label("Source kind")).select_option("vendor_quote_file")
    page.get_by_label(label("Source")).fill("vendor quote Q-2026-118, line 1")
    page.get_by_label(label("Vendor's file")).set_input_files(files=[{
        "name": "quote-Q-2026-118.csv", "mimeType": "text/csv",
        "buffer": b"item,unit,amount,currency\nH200 on demand,gpu-hour,3.72,USD\n",
    }])
    page.get_by_role("button", name="Save this version").click()
    page.wait_for_url(re.compile(r"/quotes/\d+/$"))


def choose(select, containing: str) -> None:
    """Select the option of a <select> whose text contains `containing` (labels carry more than a name)."""
    options = select.locator("option").all_inner_texts()
    select.select_option(label=next(option for option in options if containing in option))
