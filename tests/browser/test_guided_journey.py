"""The guided journey of issue 17 in real Chromium, from a fresh database to an accepted record, through pages only:
no admin site, no JSON typed, no API call.

A fresh database as `make run` leaves it (migrations, the catalog, the first admin from `ensure_admin`); a real Celery
worker; a real `dossier-agent` process on this CPU, registered with the token the pool's page shows; the agent's
built-in mock serving stack, chosen on the sweep form, as the endpoint of the throughput sweep. The admin sets up
the team, its people and the pool; the platform user files the workload, the quote with its checklist and priced
file, the candidate, plans memory fit and a throughput sweep from their forms and waits on the candidate's page for
the results (rehearsals: a CPU and a mock stack measure no GPU); then the comparison, the record, four sign-offs and
the XLSX. The test prints every page it visited and the journey's duration.
"""

from __future__ import annotations

import io
import re
import shlex
import subprocess
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import openpyxl
import pytest
from django.apps import apps as django_apps
from django.core.management import call_command

from apps.decisions.models import DecisionRecord, RecordStatus
from apps.quotes import checklist_data
from tests.browser.journey_steps import (
    Browsers,
    Visit,
    choose,
    create_person,
    create_pool,
    create_team,
    enter_quote,
    file_workload,
    follow_step,
    label,
    open_workload,
    reload_until,
    step_detail,
    step_state,
)
from tests.e2e.conftest import broker, e2e, e2e_timings  # noqa: F401 (fixtures: a worker, agents, a broker)
from tests.e2e.processes import ManagedProcess, agent_command

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

#: Generous: on a shared two-core machine a CPU memory-fit probe and two 20-second sweep levels take a few minutes.
RESULTS_TIMEOUT_S = 420
#: The e2e timings (tests/e2e/conftest.py), quieter: the agent claims work every second, but heartbeats, lease renewals
#: and the worker's periodic tasks come seldom, leaving the CPU to the memory-fit probes and the load generator.
QUIET_TIMINGS = {
    "DOSSIER_AGENT_HEARTBEAT_INTERVAL_S": 5,
    "DOSSIER_AGENT_CLAIM_INTERVAL_S": 1,
    "DOSSIER_AGENT_OFFLINE_AFTER_S": 60,
    "DOSSIER_JOB_CLAIM_LEASE_S": 60,
    "DOSSIER_JOB_LEASE_TTL_S": 60,
    "DOSSIER_JOB_LEASE_RENEW_S": 10,
    "DOSSIER_JOB_MAX_ATTEMPTS": 3,
    "DOSSIER_REAPER_INTERVAL_S": 15,
    "DOSSIER_REDRIVE_INTERVAL_S": 10,
    "DOSSIER_REDRIVE_AFTER_S": 10,
}
PEOPLE = {
    # username: roles
    "priya.platform": ["platform"],
    "rafael.review": ["platform"],
    "fatima.finance": ["finance"],
    "paul.product": ["product"],
}


@pytest.fixture
def fresh_database(transactional_db):
    """What `make run` prepares (Makefile `prepare`): the catalog, and the first admin with a password printed once.
    A transactional test starts after others flushed the tables: the checklist's data migration is run again."""
    checklist_data.load(django_apps, None)
    call_command("load_catalog", verbosity=0)
    out = io.StringIO()
    call_command("ensure_admin", stdout=out)
    return re.search(r"password: (\S+)", out.getvalue()).group(1)


def register_agent(e2e, command: str, *, name: str) -> Path:  # noqa: F811
    """The register command the pool's page shows, run on this machine with a node name and a state folder."""
    words = shlex.split(command)
    assert words[:2] == ["dossier-agent", "register"], command
    assert words[words.index("--server") + 1] == e2e.live_url, command
    state_dir = e2e.tmp_path / f"agent-{name}"
    completed = subprocess.run(
        agent_command(*words[1:], "--name", name, "--state-dir", str(state_dir)), env=e2e.agent_environment(),
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert completed.returncode == 0, f"register failed:\n{completed.stdout}\n{completed.stderr}"
    return state_dir


def start_agent(e2e, state_dir: Path) -> None:  # noqa: F811
    """`dossier-agent run` as an operator starts it (default telemetry interval and log level)."""
    e2e.processes.add(ManagedProcess(
        "cpu-node-1", agent_command("run", "--state-dir", str(state_dir)), env=e2e.agent_environment(),
        log_path=e2e.tmp_path / f"agent-{uuid.uuid4().hex[:6]}.log",
    ))


@pytest.mark.parametrize("e2e_timings", [QUIET_TIMINGS], indirect=True, ids=["quiet-timings"])
def test_from_a_fresh_database_to_an_accepted_record_through_pages_only(browser, e2e, fresh_database):  # noqa: F811
    started = time.monotonic()
    browsers = Browsers(browser, e2e.live_url)
    try:
        _journey(browsers, e2e, admin_password=fresh_database)
    finally:
        duration = time.monotonic() - started
        print(f"\nguided journey: {duration:.1f} s, {len(browsers.visits)} pages visited")
        for number, visit in enumerate(browsers.visits, start=1):
            print(f"  {number:3d}. {visit.who:15s} {visit.path}")
        browsers.close()
    paths = browsers.paths()
    assert not [path for path in paths if path.startswith(("/admin/", "/api/"))], paths


def _journey(browsers: Browsers, e2e, *, admin_password: str) -> None:  # noqa: F811
    # --- the admin sets up the team, its people and an agent pool ------------------------------------------------
    admin = browsers.sign_in("admin", admin_password)
    create_team(admin, name="Support AI", slug="support-ai", currency="USD")
    passwords = {username: create_person(admin, username=username, email=f"{username}@example.test", roles=roles)
                 for username, roles in PEOPLE.items()}
    token, command = create_pool(admin, name="cpu-rehearsal")
    assert token.startswith("dsr_") and token in command

    # --- an agent on this CPU, registered with that token; the worker -----------------------------------------------
    e2e.start_worker()
    state_dir = register_agent(e2e, command, name="cpu-node-1")
    start_agent(e2e, state_dir)

    # --- the platform user files the workload, the quote, its checklist and price, the candidate -------------------
    platform = browsers.sign_in("priya.platform", passwords["priya.platform"])
    file_workload(platform, name="Support chat")
    assert step_state(platform, "summary") == "done"
    follow_step(platform, "quotes")  # no quote yet: the step opens the quote form
    enter_quote(platform, vendor="Nimbus GPU Cloud", title="1× H200 on demand", gpu_label=_gpu_label(platform))
    assert "3.72" in platform.locator("main").inner_text()

    open_workload(platform, "Support chat")
    follow_step(platform, "candidates")
    choose(platform.get_by_label(label("Quote")), "1× H200 on demand")
    platform.locator("main").get_by_role("button", name="Save", exact=True).click()
    platform.wait_for_url(re.compile(r"/quotes/candidates/\d+/$"))
    candidate_url = urlsplit(platform.url).path
    assert step_state(platform, "candidates") == "done"

    # --- memory fit, from its form, dispatched at once to the CPU agent --------------------------------------------
    platform.locator("#memory-fit-plan-link").click()
    platform.wait_for_url("**/memory-fit/")
    platform.get_by_label(label("Most probes")).fill("3")
    platform.get_by_label(label("Timeout per probe (seconds)")).fill("60")
    platform.get_by_label(label("Device")).select_option("cpu")
    choose(platform.get_by_label(label("Agent pool")), "cpu-rehearsal")
    choose(platform.get_by_label(label("Agent")), "cpu-node-1")
    platform.get_by_label(label("Dispatch at once")).check()
    platform.get_by_role("button", name="Save the plan").click()
    platform.wait_for_url(re.compile(r"/benchmarks/plans/\d+/$"))
    platform.locator(".message-success").wait_for()

    # --- the throughput sweep, from its form: the agent's built-in mock stack, two levels of 20 s -----------------
    open_workload(platform, "Support chat")
    follow_step(platform, "memory_fit")  # the step opens the candidate it waits for
    assert urlsplit(platform.url).path == candidate_url
    platform.locator("#plan-form-link-sweep").click()
    platform.wait_for_url("**/plans/new/sweep/**")
    choose(platform.get_by_label(label("Agent pool")), "cpu-rehearsal")
    choose(platform.get_by_label(label("Agent")), "cpu-node-1")
    mock_choice = platform.get_by_label(re.compile(r"the agent's built-in mock stack: a rehearsal"))
    mock_choice.check()
    assert mock_choice.get_attribute("value") == "builtin_mock"
    # Closed loop: an open-loop (Poisson) level is invalid when any send lags its schedule by over 10 ms, which a
    # busy shared CPU does now and then; a closed loop has no schedule to fall behind.
    platform.get_by_label(label("Offered load")).select_option("concurrency")
    platform.get_by_label(label("First level")).fill("1")
    platform.get_by_label(label("Highest level")).fill("2")
    platform.get_by_label(label("Step factor")).fill("2")
    platform.get_by_label(label("Most levels")).fill("2")
    platform.get_by_label(label("Seconds per level")).fill("20")
    platform.get_by_role("button", name="Save plan").click()
    platform.wait_for_url(re.compile(r"/benchmarks/plans/\d+/$"))
    platform.get_by_role("button", name="Dispatch", exact=True).click()
    platform.locator(".message-success").wait_for()

    # --- the results come back on the candidate's page: rehearsals, labelled so -------------------------------------
    open_workload(platform, "Support chat")
    follow_step(platform, "throughput")
    assert urlsplit(platform.url).path == candidate_url
    reload_until(platform, "#memory-fit-verdict", timeout=RESULTS_TIMEOUT_S, what="the memory-fit result",
                 on_timeout=e2e.processes.logs)
    reload_until(platform, "#throughput-results .throughput-verdict", timeout=RESULTS_TIMEOUT_S,
                 what="the throughput sweep result", on_timeout=e2e.processes.logs)
    memory_fit = platform.locator("#memory-fit-verdict")
    assert memory_fit.get_attribute("data-outcome") == "succeeded", memory_fit.inner_text()
    throughput = platform.locator("#throughput-results .throughput-verdict")
    assert throughput.get_attribute("data-outcome") == "succeeded", platform.locator("#throughput-results").inner_text()
    rehearsal = platform.locator("#throughput-results .rehearsal-label[data-rehearsal='true']")
    assert "rehearsal" in rehearsal.inner_text().lower()
    # Memory fit on a CPU: process memory, not a GPU figure.
    assert platform.locator("#memory-fit [data-device-kind]").first.get_attribute("data-device-kind") == "cpu"
    assert "not a GPU figure" in platform.locator("#memory-fit").inner_text()
    # A rehearsal never completes a measurement step: the strip says "rehearsal only", and why.
    for step in ("memory_fit", "throughput"):
        assert step_state(platform, step) == "rehearsal_only"
        assert "rehearsal only" in step_detail(platform, step)

    # --- the comparison, then the record ----------------------------------------------------------------------------
    follow_step(platform, "comparison")
    # The rehearsed figures are listed apart; they normalise nothing, so the comparison still lacks a measurement.
    assert platform.locator(f'#rehearsals li.rehearsal[data-candidate="{_id(candidate_url)}"]').count() >= 1
    assert step_state(platform, "comparison") == "in_progress"
    follow_step(platform, "record")
    choose(platform.locator("#id_workload_summary"), "Support chat")
    platform.locator("#id_title").fill("GPU for support chat")
    platform.get_by_role("button", name="Start the draft").click()
    platform.wait_for_url("**/edit/")
    platform.locator("#id_chosen_option").select_option(index=1)
    platform.locator("#id_capacity_model").select_option("rent")
    platform.locator("#id_rationale").fill("The only quote; its memory fit and throughput were rehearsed on a CPU.")
    platform.get_by_role("button", name="Save the draft").click()
    platform.wait_for_selector("#record-status[data-status='draft']")
    platform.locator("#propose").click()
    platform.wait_for_selector("#record-status[data-status='proposed']")
    record_url = urlsplit(platform.url).path

    # --- four people: the author above, then platform review, finance, product -------------------------------------
    signers = {}
    for username, comment in [("rafael.review", "Procedure rehearsed end to end; GPU runs still to come."),
                              ("fatima.finance", "On-demand price sourced from the vendor's file."),
                              ("paul.product", "Fine for the pilot.")]:
        signer = signers[username] = browsers.sign_in(username, passwords[username])
        signer.locator("#nav-waiting").click()
        signer.wait_for_url("**/waiting/")
        signer.get_by_role("link", name=re.compile("GPU for support chat")).first.click()
        signer.wait_for_url(lambda url, path=record_url: urlsplit(url).path == path)
        signer.locator("#id_comment").fill(comment)
        signer.locator("#approve").click()
        signer.wait_for_selector(".message-success")
    signer.wait_for_selector("#record-status[data-status='accepted']")
    record = DecisionRecord.objects.get()
    assert record.status == RecordStatus.ACCEPTED

    # --- the XLSX of the accepted record -----------------------------------------------------------------------------
    finance = signers["fatima.finance"]
    finance.reload()  # she signed before product did: the page now shows the accepted record
    finance.wait_for_selector("#record-status[data-status='accepted']")
    with finance.expect_download() as download_info:
        finance.locator("#export-xlsx").click()
    download = download_info.value
    browsers.visits.append(Visit("fatima.finance", urlsplit(download.url).path + " (download)"))
    assert download.suggested_filename.endswith(".xlsx")
    with open(download.path(), "rb") as handle:
        workbook = openpyxl.load_workbook(io.BytesIO(handle.read()))
    candidate = record.chosen_option.label
    # A rehearsal is never a measured capacity: the candidate has no cost row on the Comparison sheet; it is on the
    # Problems sheet (what it lacks) and on the Rehearsals sheet, each figure labelled as a rehearsal.
    problems = [row for row in workbook["Problems"].iter_rows(min_row=2, values_only=True) if row[0] == candidate]
    assert problems, list(workbook["Problems"].values)
    rehearsed = {row[1]: row for row in workbook["Rehearsals"].iter_rows(min_row=2, values_only=True)
                 if row[0] == candidate}
    assert rehearsed and all(row[5] == "rehearsal — not a GPU measurement" for row in rehearsed.values()), rehearsed
    assert candidate not in [row[1] for row in workbook["Comparison"].iter_rows(min_row=2, values_only=True)]
    print(f"XLSX {download.suggested_filename}: problems {problems}; rehearsed figures {sorted(rehearsed)}")


def _id(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[1]


def _gpu_label(page) -> str:
    """The catalog's H200 as the quote form's GPU list names it."""
    options = page.get_by_label(label("GPU")).locator("option").all_inner_texts()
    return next(option for option in options if "H200" in option)
