"""Fixtures of the decisions tests: the issue's worked example built through the services; English by default."""

import pytest
from django.utils import translation

from apps.decisions.tests.builders import worked_example


@pytest.fixture(autouse=True)
def _english():
    # A request in another language leaves that language active in the thread (LocaleMiddleware does not reset it):
    # start every test in English so messages compare as written.
    with translation.override("en"):
        yield


@pytest.fixture
def example(team, platform_user):
    return worked_example(team, platform_user)
