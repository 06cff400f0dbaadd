"""Fixtures of the comparison tests (the decisions and evidence tests import them): the worked example of the guide
built through the services; English by default."""

import pytest
from django.utils import translation

from apps.comparison.tests.builders import worked_example


@pytest.fixture(autouse=True)
def _english():
    # A request in another language leaves that language active in the thread (LocaleMiddleware does not reset it):
    # start every test in English so messages compare as written.
    with translation.override("en"):
        yield


@pytest.fixture
def example(team, platform_user):
    return worked_example(team, platform_user)
