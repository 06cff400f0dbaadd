"""What a refused user sees: the 403 page says why, the 404 page does not reveal other teams' records."""

from django.urls import reverse


def test_user_without_a_role_is_told_to_ask_an_admin(client_for, roleless_user):
    response = client_for(roleless_user).get(reverse("home"))
    assert response.status_code == 403
    html = response.content.decode()
    assert "Your account has no role yet." in html
    assert reverse("accounts:logout") in html  # the header still offers a way out


def test_role_refusal_says_the_role_does_not_allow_it(client_for, finance_user, db):
    from tests.url_fixtures import make_gpu

    gpu = make_gpu()
    response = client_for(finance_user).post(reverse("catalog:spec-edit", args=[gpu.pk, "memory_gb"]), {})
    assert response.status_code == 403
    assert "Your role does not allow this." in response.content.decode()


def test_not_found_page_uses_the_layout(client_for, platform_user):
    response = client_for(platform_user).get("/no-such-page/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "There is no such page" in html and 'class="site-header"' in html


def test_server_error_page_renders_without_a_request(db):
    from django.template.loader import get_template

    html = get_template("500.html").render()
    assert "Something went wrong on our side." in html
