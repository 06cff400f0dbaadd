"""The interactive API docs render in Chromium with every request answered by Dossier itself (works offline)."""

from urllib.parse import urlsplit

import pytest

pytestmark = pytest.mark.browser


def test_api_docs_render_without_leaving_the_server(page, login, platform_user, live_server):
    server = urlsplit(live_server.url).netloc
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))

    login(page, platform_user)
    page.goto("/api/docs/")
    page.locator(".swagger-ui .info .title").wait_for()
    assert "Dossier API" in page.locator(".swagger-ui .info .title").inner_text()
    page.locator(".opblock").first.wait_for()  # the schema was fetched and rendered

    elsewhere = [
        url for url in requested if urlsplit(url).scheme in ("http", "https") and urlsplit(url).netloc != server
    ]
    assert not elsewhere, f"the docs page called out: {elsewhere}"
