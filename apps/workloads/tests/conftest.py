"""Fixtures of the workloads tests: the bundled GPU catalog."""

import io

import pytest
from django.core.management import call_command
from django.utils import translation

from apps.catalog.models import GpuModel
from tests.access import FAST_PASSWORD_HASHERS


@pytest.fixture
def loaded_catalog(db):
    call_command("load_catalog", stdout=io.StringIO())
    return GpuModel.objects.all()


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = FAST_PASSWORD_HASHERS


@pytest.fixture(autouse=True)
def _english(settings):
    """Each test starts in English: a request made in French by an earlier test leaves its language active."""
    with translation.override("en"):
        yield
