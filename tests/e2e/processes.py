"""Real processes for the end-to-end tests: a Celery worker, a `dossier-agent`, a TCP proxy that can go down.

Each process writes its output to a log file; a failed wait shows the tail of every log, so a red test explains
itself without a rerun.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from django.conf import settings

BASE_DIR = Path(settings.BASE_DIR)
AGENT_TEST_JOBS = BASE_DIR / "agents" / "tests" / "job_modules"
# Variables of the calling environment that would change what a child process does.
_INHERITED_PREFIXES = ("DOSSIER_", "CELERY_", "DATABASE_", "DJANGO_")


def clean_environment(extra: dict[str, str]) -> dict[str, str]:
    environment = {name: value for name, value in os.environ.items() if not name.startswith(_INHERITED_PREFIXES)}
    environment.update(extra)
    return environment


class ManagedProcess:
    """A child process in its own session (so SIGKILL reaches it and every process it started)."""

    def __init__(self, name: str, command: list[str], *, env: dict[str, str], log_path: Path, cwd: Path = BASE_DIR):
        self.name = name
        self.command = command
        self.log_path = log_path
        self._log = open(log_path, "ab")  # noqa: SIM115 (closed in stop())
        self.process = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def signal_group(self, number: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, number)

    def kill(self) -> None:
        """SIGKILL to the whole process group: no handler runs, nothing is cleaned up."""
        self.signal_group(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=15)

    def stop(self, timeout: float = 15) -> None:
        if self.alive():
            self.signal_group(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()


class Processes:
    """Every process a test started, stopped at the end, with their logs for failure messages."""

    def __init__(self) -> None:
        self.started: list[ManagedProcess] = []

    def add(self, process: ManagedProcess) -> ManagedProcess:
        self.started.append(process)
        return process

    def logs(self) -> str:
        return "\n".join(f"--- {process.name} ({process.log_path}) ---\n{process.tail()}" for process in self.started)

    def stop_all(self) -> None:
        for process in reversed(self.started):
            process.stop()


def wait_for(predicate: Callable[[], object], *, timeout: float, what: str, processes: Processes | None = None,
             interval: float = 0.25):
    """Poll until predicate() is truthy; on timeout fail with `what` and the processes' logs."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            logs = processes.logs() if processes is not None else ""
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n{logs}")
        time.sleep(interval)


def celery_worker_command(name: str, *, beat: bool) -> list[str]:
    command = [
        sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "--concurrency=1",
        "--loglevel=INFO", "--without-mingle", "--without-gossip", "--without-heartbeat", "-n", f"{name}@%h",
    ]
    if beat:
        command.append("--beat")
    return command


def agent_command(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "dossier_agent", *arguments]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class TcpProxy:
    """127.0.0.1:port → upstream. down() refuses new connections and cuts open ones, as an outage would."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = free_port()
        self._listener: socket.socket | None = None
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with self._lock:
            connections, self._connections = self._connections, set()
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
            connection.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _address = listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream, timeout=10)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._connections.update({client, server})
            for source, target in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(source, target), daemon=True).start()

    def _pipe(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                target.sendall(chunk)
        except OSError:
            pass
        finally:
            for end in (source, target):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)
