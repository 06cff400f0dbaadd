"""Playwright (sync API) driving Debian's Chromium against pytest-django's live server.

Chromium comes from apt (`apt-get install chromium`), never from a Playwright download. Fixtures:
`browser` (one per test module), `page` (a fresh context per test, relative URLs resolve against the live server)
and `login(page, user)` (signs in through the real login form).
"""

import os
from pathlib import Path

import pytest

from tests.access import FAST_PASSWORD_HASHERS
from tests.factories import PASSWORD

CHROMIUM = Path(os.environ.get("DOSSIER_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-gpu", "--disable-dev-shm-usage"]
TIMEOUT_MS = 15_000


# Module scope, not session: Playwright's sync API keeps an event loop running in the test thread while it is open,
# which would break every later test that calls asyncio.run(), and the variable below must not leak into the
# subprocesses of later tests (check --deploy refuses it).
@pytest.fixture(scope="module")
def _allow_orm_beside_playwright():
    # Playwright's sync API keeps an asyncio event loop in the test thread; Django refuses ORM calls from a thread
    # with a running loop unless told that this is deliberate.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    yield
    if previous is None:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture(scope="module")
def browser(_allow_orm_beside_playwright):
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's Chromium (apt-get install chromium)")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = FAST_PASSWORD_HASHERS


@pytest.fixture
def page(browser, live_server, transactional_db):
    context = browser.new_context(base_url=live_server.url, locale="en-US")
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def login():
    """login(page, user): sign in through the login form and wait to leave it."""

    def sign_in(page, user, password: str = PASSWORD):
        page.goto("/accounts/login/")
        page.get_by_label("Username").fill(user.get_username())
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(lambda url: "/accounts/login/" not in url)
        return page

    return sign_in
