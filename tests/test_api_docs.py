"""/api/docs/ works offline: every asset it loads is served by Dossier, and /api/schema/ is a valid OpenAPI 3 document.

(tests/browser/test_api_docs_browser.py opens the page in Chromium and checks that no request leaves the server.)
"""

import json
import re
from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest
import yaml
from django.templatetags.static import static
from django.urls import reverse
from drf_spectacular.validation import validate_schema

from tests.access import FAST_PASSWORD_HASHERS


class _AssetLinks(HTMLParser):
    def __init__(self):
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("src", "href") and value:
                self.urls.append(value)


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = FAST_PASSWORD_HASHERS


@pytest.fixture
def docs_page(client_for, platform_user):
    client = client_for(platform_user)
    response = client.get(reverse("api-docs"))
    assert response.status_code == 200
    return client, response.content.decode()


def test_docs_page_loads_only_local_assets(docs_page):
    client, html = docs_page
    parser = _AssetLinks()
    parser.feed(html)
    assert parser.urls, "the docs page loads no asset at all"
    for url in parser.urls:
        parts = urlsplit(url)
        assert not parts.scheme and not parts.netloc, f"/api/docs/ loads {url} from another host"
        # Static files, and the page's own start-up script (served by the docs view itself: the
        # Content-Security-Policy allows no inline script).
        own_script = parts.path == reverse("api-docs") and parts.query == "script="
        assert parts.path.startswith(static("")) or own_script, f"{url} is neither a static file nor the page's script"
        asset = client.get(url)
        assert asset.status_code == 200, f"{url} is not served ({asset.status_code})"
        body = b"".join(asset.streaming_content) if asset.streaming else asset.content
        assert body, f"{url} is empty"


def test_docs_page_names_no_remote_url(docs_page):
    _client, html = docs_page
    # The inline script carries the Swagger UI settings; a remote URL there (a validator, a CDN) is a call out.
    assert not re.findall(r"https?://[^\s\"'<>]+", html)


def test_swagger_ui_does_not_call_the_online_validator(docs_page):
    client, _html = docs_page
    script = client.get(reverse("api-docs") + "?script=").content.decode()  # the settings live in the start-up script
    assert re.search(r'"validatorUrl":\s*null', script)
    assert not re.findall(r"https?://[^\s\"'<>]+", script)


def test_schema_is_a_valid_openapi_3_document(client_for, platform_user):
    client = client_for(platform_user)
    response = client.get(reverse("api-schema"), HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = json.loads(response.content)
    assert schema["openapi"].startswith("3.")
    assert schema["info"]["title"] == "Dossier API"
    assert any(path.startswith("/api/v1/catalog/") for path in schema["paths"])
    validate_schema(schema)  # raises on a document that breaks the OpenAPI 3 JSON schema


def test_schema_in_yaml_too(client_for, platform_user):
    response = client_for(platform_user).get(reverse("api-schema"))
    assert response.status_code == 200
    assert yaml.safe_load(response.content)["openapi"].startswith("3.")


def test_docs_and_schema_need_a_role(client, client_for, roleless_user):
    assert client.get(reverse("api-docs")).status_code in (401, 403)
    assert client_for(roleless_user).get(reverse("api-schema")).status_code == 403
