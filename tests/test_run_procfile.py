"""scripts/run_procfile.py, the process runner of `make run`, on small stand-in servers (Python one-liners): the
Procfile parser, a clean stop on SIGINT (exit 0), SIGKILL only after the stop timeout (exit 1), and a server that
exits on its own stopping the rest with its status. The real web + worker stop is in tests/e2e/test_make_run_stop.py.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUNNER = ROOT / "scripts" / "run_procfile.py"

_spec = importlib.util.spec_from_file_location("run_procfile", RUNNER)
run_procfile = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("run_procfile", run_procfile)  # dataclasses look their module up there
_spec.loader.exec_module(run_procfile)

PYTHON = sys.executable
#: prints "ready", stops on SIGTERM with status 0, as gunicorn and Celery do
POLITE = (f"{PYTHON} -c 'import signal, sys, time; signal.signal(signal.SIGTERM, lambda *a: sys.exit(0)); "
          f"print(\"ready\", flush=True); time.sleep(120)'")
#: prints "ready", ignores SIGTERM
STUBBORN = (f"{PYTHON} -c 'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            f"print(\"ready\", flush=True); time.sleep(120)'")


def test_the_parser_reads_names_and_commands_and_skips_comments():
    text = "# comment\n\nweb: gunicorn config.wsgi --bind \"${X:-a:1}\"\nworker:   celery -A config worker\n"
    assert run_procfile.parse_procfile(text) == [
        ("web", 'gunicorn config.wsgi --bind "${X:-a:1}"'),
        ("worker", "celery -A config worker"),
    ]


@pytest.mark.parametrize(("text", "message"), [
    ("web gunicorn\n", "line 1 is not 'name: command'"),
    ("web: a\nweb: b\n", "line 2: the name 'web' is used twice"),
    ("# nothing\n", "names no process"),
])
def test_the_parser_refuses_a_malformed_procfile(text, message):
    with pytest.raises(ValueError, match=message):
        run_procfile.parse_procfile(text)


def test_the_project_procfile_names_web_and_worker():
    names = [name for name, _command in run_procfile.parse_procfile((ROOT / "Procfile").read_text())]
    assert names == ["web", "worker"]


def start_runner(tmp_path: Path, procfile: str, *, stop_timeout: float) -> tuple[subprocess.Popen, Path]:
    (tmp_path / "Procfile").write_text(procfile)
    log = tmp_path / "runner.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [PYTHON, str(RUNNER), "--procfile", str(tmp_path / "Procfile"), "--stop-timeout", str(stop_timeout)],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    return process, log


def wait_for_lines(log: Path, text: str, count: int, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        content = log.read_text(errors="replace")
        if content.count(text) >= count:
            return content
        time.sleep(0.1)
    raise AssertionError(f"{count}× {text!r} not in the runner's output within {timeout} s:\n{log.read_text()}")


def finish(process: subprocess.Popen, log: Path, timeout: float = 30) -> tuple[int, str]:
    try:
        status = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise
    return status, log.read_text(errors="replace")


def test_sigint_stops_every_server_with_sigterm_and_exits_0(tmp_path):
    """Old code (honcho 2.0.0 start) exits 130 after SIGINT, which make reports as `Error 130`."""
    process, log = start_runner(tmp_path, f"one: {POLITE}\ntwo: {POLITE}\n", stop_timeout=20)
    wait_for_lines(log, "| ready", 2)
    process.send_signal(signal.SIGINT)
    status, output = finish(process, log)
    assert status == 0, output
    assert "sending SIGTERM to one" in output and "sending SIGTERM to two" in output
    assert "one stopped (status 0)" in output and "two stopped (status 0)" in output
    assert "SIGKILL" not in output
    assert output.rstrip().endswith("stopped cleanly")


def test_a_server_that_ignores_sigterm_is_killed_after_the_stop_timeout_and_the_exit_is_1(tmp_path):
    process, log = start_runner(tmp_path, f"polite: {POLITE}\nstubborn: {STUBBORN}\n", stop_timeout=1.5)
    wait_for_lines(log, "| ready", 2)
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    status, output = finish(process, log)
    assert status == 1, output
    assert time.monotonic() - started >= 1.5
    assert "sending SIGKILL to stubborn" in output and "still running 1.5 s after SIGTERM" in output
    assert "sending SIGKILL to polite" not in output


def test_a_second_sigint_kills_at_once(tmp_path):
    process, log = start_runner(tmp_path, f"stubborn: {STUBBORN}\n", stop_timeout=60)
    wait_for_lines(log, "| ready", 1)
    process.send_signal(signal.SIGINT)
    wait_for_lines(log, "sending SIGTERM to stubborn", 1)
    time.sleep(run_procfile.REPEAT_AFTER_S + 0.2)
    process.send_signal(signal.SIGINT)
    status, output = finish(process, log, timeout=20)
    assert status == 1
    assert "sending SIGKILL to stubborn" in output and "asked twice" in output


def test_a_repeat_of_the_signal_at_once_is_the_same_request(tmp_path):
    """`kill -TERM -- -group` on `make run` reaches the runner, and make may forward the same SIGTERM: that must not
    skip the stop timeout."""
    process, log = start_runner(tmp_path, f"stubborn: {STUBBORN}\n", stop_timeout=2)
    wait_for_lines(log, "| ready", 1)
    process.send_signal(signal.SIGTERM)
    process.send_signal(signal.SIGTERM)
    status, output = finish(process, log, timeout=20)
    assert status == 1
    assert "asked twice" not in output and "still running 2 s after SIGTERM" in output


def test_a_server_exiting_on_its_own_stops_the_others_and_gives_its_status(tmp_path):
    crash = f"{PYTHON} -c 'import sys, time; time.sleep(0.5); sys.exit(3)'"
    process, log = start_runner(tmp_path, f"web: {POLITE}\ncrash: {crash}\n", stop_timeout=20)
    status, output = finish(process, log)
    assert status == 3, output
    assert "crash exited on its own (status 3): stopping the others" in output
    assert "sending SIGTERM to web" in output and "web stopped (status 0)" in output
