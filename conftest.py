"""Fixtures shared by every test: teams, users per role, an outsider, signed-in clients."""

import pytest
from django.utils import translation

from tests.factories import TeamFactory, UserFactory

# With CI=true, a skip whose reason is not on the allow-list fails the run.
pytest_plugins = ["tests.skip_allowlist"]


@pytest.fixture(autouse=True)
def _default_language():
    # A request in another language leaves that language active in the thread (LocaleMiddleware does not reset
    # it): the next test would read French or Indonesian messages. Each test starts and ends in the default.
    translation.deactivate()
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def _fast_password_hasher(settings):
    # The default PBKDF2 hasher costs about a second per login on this machine; tests need no strength.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _isolated_storage(settings, tmp_path):
    # The manifest storage needs collectstatic; tests serve static files straight from the finders.
    # Uploaded quote documents go to the test's own folder, never to var/.
    settings.MEDIA_ROOT = tmp_path / "media"
    storages = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    settings.STORAGES = storages


@pytest.fixture
def team(db):
    return TeamFactory(name="Platform Team", slug="platform-team")


@pytest.fixture
def other_team(db):
    return TeamFactory(name="Other Team", slug="other-team")


@pytest.fixture
def platform_user(team):
    return UserFactory(username="pat", roles=["platform"], teams=[team])


@pytest.fixture
def finance_user(team):
    return UserFactory(username="fin", roles=["finance"], teams=[team])


@pytest.fixture
def product_user(team):
    return UserFactory(username="prod", roles=["product"], teams=[team])


@pytest.fixture
def admin_user(team):
    return UserFactory(username="adm", roles=["admin"], teams=[team], is_staff=True)


@pytest.fixture
def outsider(other_team):
    """A platform user of another team: sees none of `team`'s records."""
    return UserFactory(username="out", roles=["platform"], teams=[other_team])


@pytest.fixture
def roleless_user(team):
    return UserFactory(username="nobody", teams=[team])


@pytest.fixture
def client_for(client):
    """client_for(user) returns the test client signed in as that user."""

    def sign_in(user):
        client.force_login(user)
        return client

    return sign_in
