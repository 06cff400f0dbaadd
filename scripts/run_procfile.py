"""Run the processes of a Procfile side by side and stop them cleanly: what `make run` starts the servers with.

    python scripts/run_procfile.py [--procfile Procfile] [--stop-timeout 30]

Each line `name: command` of the Procfile is started with `/bin/sh -c "exec command"` in a session of its own, so
the process signalled is the server itself and a Ctrl-C on the terminal reaches this runner only. Their output is
relayed line by line, prefixed with the time and the name.

On SIGINT or SIGTERM the runner sends SIGTERM to each server's main process only (not to its group): gunicorn then
stops its workers gracefully, and Celery makes a warm shutdown, stopping its pool processes and the embedded beat
itself. Whatever is still running after `--stop-timeout` seconds, or left in a server's process group after the
server exited, gets SIGKILL (and the runner says so). A second Ctrl-C (a second or more after the first) skips the
wait.

Exit status: 0 when a signal asked for the stop and every server stopped by itself with status 0; otherwise 1 (or
the status of the server that exited first on its own, when that status is not 0), so `make run` does not report an
error after a clean Ctrl-C.

Standard library only: it replaces honcho, whose `start` waits a fixed 5 s before SIGKILL, signals each whole process
group (Celery's pool processes then die of SIGTERM under their parent) and exits 130 after a Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

#: `name: command`, the Procfile format (a name of letters, digits, `_` and `-`); `#` starts a comment line.
PROCFILE_LINE = re.compile(r"^(?P<name>[A-Za-z0-9_-]+):\s*(?P<command>\S.*)$")
DEFAULT_STOP_TIMEOUT_S = 30.0
POLL_S = 0.1
#: a second signal at least this long after the first kills at once; an earlier one repeats the first
REPEAT_AFTER_S = 1.0


def parse_procfile(text: str) -> list[tuple[str, str]]:
    """The (name, command) pairs of a Procfile, in order. Blank and `#` lines are skipped; any other line that is not
    `name: command`, or a name given twice, is an error (ValueError naming the line)."""
    entries: list[tuple[str, str]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = PROCFILE_LINE.match(line)
        if match is None:
            raise ValueError(f"Procfile line {number} is not 'name: command': {raw!r}")
        name = match["name"]
        if any(name == seen for seen, _command in entries):
            raise ValueError(f"Procfile line {number}: the name {name!r} is used twice")
        entries.append((name, match["command"]))
    if not entries:
        raise ValueError("the Procfile names no process")
    return entries


@dataclass
class Server:
    name: str
    command: str
    process: subprocess.Popen
    relay: threading.Thread
    returncode: int | None = None
    killed: bool = False

    def group_alive(self) -> bool:
        """Whether any process is left in the server's process group (its session, started with it)."""
        try:
            os.killpg(self.process.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


@dataclass
class Runner:
    entries: list[tuple[str, str]]
    stop_timeout: float = DEFAULT_STOP_TIMEOUT_S
    out: object = field(default=sys.stdout)
    servers: list[Server] = field(default_factory=list)
    stop_requested_by: str | None = None  # the signal's name
    force: bool = False
    _stop_requested_at: float = 0.0
    first_exit: tuple[str, int] | None = None  # a server that stopped before anyone asked
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def say(self, name: str, text: str) -> None:
        width = max([len(name), *(len(entry) for entry, _command in self.entries), len("runner")])
        with self._lock:
            self.out.write(f"{time.strftime('%H:%M:%S')} {name:<{width}} | {text}\n")
            self.out.flush()

    def _relay(self, name: str, stream) -> None:
        for raw in iter(stream.readline, b""):
            self.say(name, raw.decode("utf-8", errors="replace").rstrip("\r\n"))
        stream.close()

    def start(self) -> None:
        for name, command in self.entries:
            process = subprocess.Popen(  # noqa: S603 (the project's own Procfile)
                ["/bin/sh", "-c", f"exec {command}"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )
            relay = threading.Thread(target=self._relay, args=(name, process.stdout), daemon=True)
            relay.start()
            self.servers.append(Server(name, command, process, relay))
            self.say("runner", f"{name} started (pid {process.pid})")

    def _on_signal(self, number: int, _frame) -> None:
        name = signal.Signals(number).name
        if self.stop_requested_by is None:
            self.stop_requested_by = name
            self._stop_requested_at = time.monotonic()
        elif time.monotonic() - self._stop_requested_at >= REPEAT_AFTER_S:
            # A repeat within REPEAT_AFTER_S is the same request: make forwards a SIGTERM its group also received.
            self.force = True
        # Printed from the main loop (a handler must not take the output lock the relay threads hold).

    def _reap(self) -> None:
        for server in self.servers:
            if server.returncode is None and server.process.poll() is not None:
                server.returncode = server.process.returncode
                self.say("runner", f"{server.name} stopped (status {server.returncode})")
                if self.stop_requested_by is None and self.first_exit is None:
                    self.first_exit = (server.name, server.returncode)

    def _running(self) -> list[Server]:
        return [server for server in self.servers if server.returncode is None or server.group_alive()]

    def _kill(self, servers: list[Server], why: str) -> None:
        for server in servers:
            self.say("runner", f"sending SIGKILL to {server.name} (process group {server.process.pid}): {why}")
            server.killed = True
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(server.process.pid, signal.SIGKILL)

    def run(self) -> int:
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)
        self.start()
        while self.stop_requested_by is None and self.first_exit is None:
            time.sleep(POLL_S)
            self._reap()
        if self.stop_requested_by is not None:
            self.say("runner", f"{self.stop_requested_by} received: stopping (Ctrl-C again to kill at once)")
        else:
            name, status = self.first_exit
            self.say("runner", f"{name} exited on its own (status {status}): stopping the others")
        for server in self.servers:
            if server.returncode is None:
                self.say("runner", f"sending SIGTERM to {server.name} (pid {server.process.pid})")
                with contextlib.suppress(ProcessLookupError):
                    server.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.stop_timeout
        while self._running():
            if self.force:
                self._kill(self._running(), "asked twice")
                break
            if time.monotonic() > deadline:
                self._kill(self._running(), f"still running {self.stop_timeout:g} s after SIGTERM")
                break
            time.sleep(POLL_S)
            self._reap()
        for server in self.servers:
            server.process.wait()
            server.relay.join(timeout=5)
        self._reap()
        return self.exit_status()

    def exit_status(self) -> int:
        if self.first_exit is not None:
            return self.first_exit[1] if self.first_exit[1] > 0 else 1
        clean = all(server.returncode == 0 and not server.killed for server in self.servers)
        if clean:
            self.say("runner", "stopped cleanly")
            return 0
        return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--procfile", "-f", type=Path, default=Path("Procfile"))
    parser.add_argument("--stop-timeout", type=float, default=DEFAULT_STOP_TIMEOUT_S,
                        help="seconds a server has to stop after SIGTERM before it gets SIGKILL (default 30)")
    args = parser.parse_args(argv)
    try:
        entries = parse_procfile(args.procfile.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        print(f"run_procfile: {error}", file=sys.stderr)
        return 2
    return Runner(entries, stop_timeout=args.stop_timeout).run()


if __name__ == "__main__":
    sys.exit(main())
