import pytest

from apps.fleet.tests.fixtures import (  # noqa: F401  (fixtures)
    _tasks_run_inline,
    agent,
    agent_api,
    pool,
    registered,
)


@pytest.fixture(autouse=True)
def _artifacts_in_a_temporary_folder(settings, tmp_path):
    settings.STORAGES = {
        **settings.STORAGES,
        "artifacts": {"BACKEND": "django.core.files.storage.FileSystemStorage",
                      "OPTIONS": {"location": str(tmp_path / "artifacts")}},
    }
