import os
import sys
from pathlib import Path

import pytest
from dossier_agent.config import load_config
from protocol_server import ProtocolServer

TESTS = Path(__file__).parent
JOB_MODULES = TESTS / "job_modules"
AGENTS_ROOT = TESTS.parent


@pytest.fixture
def server():
    with ProtocolServer() as running:
        yield running


@pytest.fixture
def config(tmp_path):
    """An agent configuration that reads no file and no environment, with the test job modules."""
    return load_config({"state_dir": str(tmp_path / "state"), "job_dirs": [str(JOB_MODULES)]}, environ={})


def agent_environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    """Environment for a real `dossier-agent` process: only our settings, no stray config file."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("DOSSIER_AGENT_")}
    environment.update({
        "HOME": str(tmp_path / "home"),
        "DOSSIER_AGENT_STATE_DIR": str(tmp_path / "state"),
        "DOSSIER_AGENT_JOB_DIRS": str(JOB_MODULES),
        "PYTHONPATH": str(AGENTS_ROOT),
    })
    environment.update(extra)
    return environment


def agent_command(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "dossier_agent", *arguments]
