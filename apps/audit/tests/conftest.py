import pytest

from tests.access import FAST_PASSWORD_HASHERS
from tests.scoped_app.fixtures import scoped_models  # noqa: F401 (a fixture for this package's tests)


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = FAST_PASSWORD_HASHERS
