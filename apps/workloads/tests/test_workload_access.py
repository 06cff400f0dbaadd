"""Who may reach each workloads page and endpoint: the team's roles read, platform and admin write, another team's
member gets 404, a user without a role 403, an anonymous visitor the login page."""

import pytest
from django.urls import reverse

from apps.workloads.tests.factories import draft_summary
from tests.access import Outcome, outcome

pytestmark = pytest.mark.django_db

PAGES = ["workloads:detail"]
WRITE_PAGES = ["workloads:edit"]
WRITE_POSTS = ["workloads:edit", "workloads:validate-existing", "workloads:mark-ready"]
API_READS = ["workloads-api:summary-detail", "workloads-api:summary-analysis"]
API_WRITES = [
    ("workloads-api:summary-ready", "post"),
    ("workloads-api:summary-detail", "patch"),
    ("workloads-api:summary-detail", "put"),
]


def every_object_url(summary):
    urls = [("get", reverse(name, args=[summary.pk])) for name in (*PAGES, *WRITE_PAGES, *API_READS)]
    urls += [("post", reverse(name, args=[summary.pk])) for name in WRITE_POSTS]
    urls += [(method, reverse(name, args=[summary.pk])) for name, method in API_WRITES]
    return urls


def send(client, method, url):
    if method == "get":
        return client.get(url)
    if "/api/" in url:
        return getattr(client, method)(url, data="{}", content_type="application/json")
    return getattr(client, method)(url, data={})


def test_an_outsider_gets_404_on_every_page_and_endpoint(client_for, outsider, team):
    summary = draft_summary(team)
    client = client_for(outsider)
    for method, url in every_object_url(summary):
        response = send(client, method, url)
        assert response.status_code == 404, f"{method.upper()} {url}: {response.status_code}"
    assert client.get(reverse("workloads:list")).context["rows"] == []
    assert client.get(reverse("workloads-api:summary-list")).json()["results"] == []


def test_finance_reads_every_page_but_writes_nothing(client_for, finance_user, team):
    summary = draft_summary(team)
    client = client_for(finance_user)
    for name in ("workloads:list",):
        assert client.get(reverse(name)).status_code == 200
    for name in (*PAGES, *API_READS):
        assert client.get(reverse(name, args=[summary.pk])).status_code == 200, name
    for name in WRITE_PAGES:
        assert client.get(reverse(name, args=[summary.pk])).status_code == 403, name
    for name in WRITE_POSTS:
        assert client.post(reverse(name, args=[summary.pk])).status_code == 403, name
    for name in ("workloads:create", "workloads:validate"):
        assert client.post(reverse(name), {"name": "x"}).status_code == 403, name
    for name, method in API_WRITES:
        assert send(client, method, reverse(name, args=[summary.pk])).status_code == 403, name
    summary.refresh_from_db()
    assert summary.status == "draft"


def test_a_user_without_a_role_gets_403_everywhere(client_for, roleless_user, team):
    summary = draft_summary(team)
    client = client_for(roleless_user)
    urls = [
        ("get", reverse("workloads:list")),
        ("get", reverse("workloads:create")),
        ("get", reverse("workloads-api:summary-list")),
        ("post", reverse("workloads-api:estimate")),
        *every_object_url(summary),
    ]
    for method, url in urls:
        response = send(client, method, url)
        assert response.status_code == 403, f"{method.upper()} {url}: {response.status_code}"


def test_anonymous_visitors_are_refused(client, team):
    summary = draft_summary(team)
    for method, url in [("get", reverse("workloads:list")), *every_object_url(summary)]:
        assert outcome(send(client, method, url)) is Outcome.REFUSED, url


def test_admin_may_write(client_for, admin_user, team):
    summary = draft_summary(team)
    response = client_for(admin_user).post(reverse("workloads:mark-ready", args=[summary.pk]))
    assert response.status_code == 302
