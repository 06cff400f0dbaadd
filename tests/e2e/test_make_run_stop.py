"""Ctrl-C on `make run`'s servers: the project's Procfile (gunicorn + a Celery worker with embedded beat) started the
way the Makefile starts it (scripts/run_procfile.py, the virtualenv's bin first on PATH), on this test's database
and a broker folder of its own. Once /healthz answers 200 (database, broker and a live worker), SIGINT must stop web
and worker by themselves: exit status 0, no SIGKILL, no Celery pool process killed by a signal.

Checked against the old runner (`honcho start`): it exits 130 and sends SIGKILL to the worker 5 s after gunicorn
stops, and its SIGTERM to the worker's whole process group makes the pool processes die "with signal 15".
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from django.conf import settings

from tests.e2e.conftest import worker_database_url
from tests.e2e.processes import clean_environment, free_port, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

BASE_DIR = settings.BASE_DIR


def healthz_status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None


def test_sigint_stops_web_and_worker_cleanly_with_exit_status_0(tmp_path):
    # The CI pass on Redis: the servers use it as make run would; else a broker folder under DOSSIER_VAR_DIR below.
    redis = settings.CELERY_BROKER_URL.startswith("redis")
    broker_url = settings.CELERY_BROKER_URL if redis else "filesystem://"
    bind = f"127.0.0.1:{free_port()}"
    bin_dir = os.path.dirname(sys.executable)
    environment = clean_environment({
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": worker_database_url(),
        "CELERY_BROKER_URL": broker_url,
        "DOSSIER_VAR_DIR": str(tmp_path / "var"),
        "DOSSIER_BIND": bind,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
    })
    log_path = tmp_path / "make-run.log"
    with open(log_path, "wb") as log:
        runner = subprocess.Popen(
            [sys.executable, "scripts/run_procfile.py", "--procfile", "Procfile", "--stop-timeout", "30"],
            cwd=BASE_DIR, env=environment, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )

    def output() -> str:
        return log_path.read_text(encoding="utf-8", errors="replace")

    try:
        wait_for(lambda: healthz_status(f"http://{bind}/healthz") == 200 or runner.poll() is not None, timeout=45,
                 what=f"/healthz to answer 200\n{output()[-4000:]}")
        assert runner.poll() is None, f"the servers exited while starting:\n{output()[-4000:]}"

        runner.send_signal(signal.SIGINT)
        started = time.monotonic()
        status = runner.wait(timeout=45)
        stopped_in = time.monotonic() - started
    finally:
        if runner.poll() is None:
            os.killpg(runner.pid, signal.SIGKILL)
            runner.wait()

    text = output()
    assert status == 0, text[-4000:]
    assert "SIGKILL" not in text
    assert "web stopped (status 0)" in text and "worker stopped (status 0)" in text
    assert "Warm shutdown" in text  # Celery's own graceful stop, with its pool and beat
    assert "exited with 'signal" not in text  # no pool process killed under its parent
    assert text.rstrip().endswith("stopped cleanly")
    assert stopped_in < 31
    assert healthz_status(f"http://{bind}/healthz") is None  # nothing listens any more
