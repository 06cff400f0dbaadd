"""Operations the node declares on its serving stack (benchmark phase 3): never commands the server sends.

The operator lists them in the agent's TOML file. One table, `[operations.serving]`, describes the serving stack the
operations act on; every other table declares one operation by its name:

    [operations.serving]
    type = "process"            # process (the agent starts it itself) | systemd | container | command
    argv = ["python", "-m", "dossier_agent.mockserver", "--port", "8100", "--startup-delay-s", "2"]
    health_url = "http://127.0.0.1:8100/health"
    metrics_url = "http://127.0.0.1:8100/metrics"      # optional
    base_url = "http://127.0.0.1:8100"                 # optional: the OpenAI-compatible endpoint the load targets
    ready_pattern = "MOCK_READY"                        # optional: the log line that says "ready"
    # systemd: unit = "vllm.service"; container: container = "vllm", runtime = "docker" (or "podman");
    # process: env = {CUDA_VISIBLE_DEVICES = "0"}, cwd = "/srv"; command: log_file = "/var/log/vllm.log"

    [operations.start]          # declared with the type's default action
    [operations.stop]
    timeout_s = 60
    [operations.kill_worker]
    command = "pkill -KILL -f 'vllm.entrypoints'"      # or argv = [...]: replaces the default
    [operations.bad_deploy]     # no default anywhere: for type process, the serving command of a broken deploy
    argv = ["python", "-m", "dossier_agent.mockserver", "--port", "8100", "--fault", "status:500", "--fault-every", "1"]
    [operations.drain]          # no default anywhere
    argv = ["curl", "-fsS", "-X", "POST", "http://127.0.0.1:8100/drain"]

Operation names: start, stop, restart, kill_worker, bad_deploy, drain. A job may ask only for declared ones: anything
else raises `OperationRefused`, and nothing in a job spec can carry a command. Commands run without a shell, with a
timeout; their output and the serving process's own output are kept with a timestamp per line (`logs_between`).

Defaults: process — start spawns `argv` (own session, killed with the agent), stop sends SIGTERM to its process group
then SIGKILL after `timeout_s`, restart = stop + start, kill_worker = SIGKILL to the process group, bad_deploy = stop,
then start the operation's `argv` in its place; systemd — `systemctl start|stop|restart UNIT`, kill_worker =
`systemctl kill -s SIGKILL UNIT`; container — `RUNTIME start|stop|restart NAME`, kill_worker = `RUNTIME kill -s KILL
NAME`; command — every operation needs its own `argv`/`command`.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import datetime
import json
import os
import re
import shlex
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dossier_agent.contract.operation_names import OPERATIONS

SERVING = "serving"
TYPES = ("process", "systemd", "container", "command")
_DEFAULTS = {
    "process": {"start", "stop", "restart", "kill_worker"},
    "systemd": {"start", "stop", "restart", "kill_worker"},
    "container": {"start", "stop", "restart", "kill_worker"},
    "command": set(),
}
_SERVING_KEYS = {"type", "argv", "command", "health_url", "metrics_url", "base_url", "ready_pattern", "unit",
                 "container", "runtime", "env", "cwd", "log_file", "stop_timeout_s"}
_OPERATION_KEYS = {"argv", "command", "timeout_s"}
DEFAULT_TIMEOUT_S = {"start": 600.0, "stop": 120.0, "restart": 600.0, "kill_worker": 30.0, "bad_deploy": 600.0,
                     "drain": 300.0}
MAX_LOG_LINES = 200_000


class OperationsConfigError(ValueError):
    """The `[operations.*]` tables of the agent's configuration are wrong; the message says which key."""


class OperationRefused(PermissionError):
    """A job asked for an operation this node did not declare."""


# ----------------------------------------------------------------------------------------------------------------------
# Configuration
# ----------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OperationSpec:
    name: str
    argv: tuple[str, ...] | None
    timeout_s: float


@dataclass(frozen=True)
class ServingSpec:
    type: str
    argv: tuple[str, ...] | None
    health_url: str
    metrics_url: str | None
    base_url: str | None
    ready_pattern: str | None
    unit: str | None
    container: str | None
    runtime: str
    env: dict[str, str]
    cwd: str | None
    log_file: str | None
    stop_timeout_s: float
    operations: dict[str, OperationSpec] = field(default_factory=dict)

    @property
    def declared(self) -> list[str]:
        return sorted(self.operations)

    def describe(self) -> dict[str, Any]:
        """What a job may report about the stack (never secrets from env)."""
        return {"type": self.type, "health_url": self.health_url, "metrics_url": self.metrics_url,
                "base_url": self.base_url, "unit": self.unit, "container": self.container, "declared": self.declared}


def _argv(settings: Mapping[str, Any], where: str) -> tuple[str, ...] | None:
    if "argv" in settings and "command" in settings:
        raise OperationsConfigError(f"{where}: give argv or command, not both")
    if "argv" in settings:
        argv = settings["argv"]
        if not isinstance(argv, list) or not argv or not all(isinstance(item, str) and item for item in argv):
            raise OperationsConfigError(f"{where}.argv must be a non-empty list of strings")
        return tuple(argv)
    if "command" in settings:
        command = settings["command"]
        if not isinstance(command, str) or not command.strip():
            raise OperationsConfigError(f"{where}.command must be a non-empty string")
        return tuple(shlex.split(command))  # no shell: pipes and redirections are not interpreted
    return None


def _url(value: Any, where: str, required: bool) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not re.match(r"^https?://[^\s/]+", value):
        raise OperationsConfigError(f"{where} must be an http:// or https:// URL, got {value!r}")
    return value


def _seconds(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise OperationsConfigError(f"{where} must be a number of seconds > 0, got {value!r}")
    return float(value)


def parse_operations(raw: Mapping[str, Mapping[str, Any]] | None) -> ServingSpec | None:
    """The serving stack and its declared operations from the agent config's `operations` tables (None: none)."""
    raw = dict(raw or {})
    if not raw:
        return None
    unknown = sorted(set(raw) - set(OPERATIONS) - {SERVING})
    if unknown:
        raise OperationsConfigError(f"unknown operation(s) {', '.join(unknown)}; an operation is one of "
                                    f"{', '.join(OPERATIONS)}, and [operations.{SERVING}] describes the stack")
    if SERVING not in raw:
        raise OperationsConfigError(f"operations are declared but [operations.{SERVING}] (type, health_url, ...) "
                                    "is missing")
    serving = dict(raw[SERVING])
    where = f"operations.{SERVING}"
    extra = sorted(set(serving) - _SERVING_KEYS)
    if extra:
        raise OperationsConfigError(f"{where}: unknown key(s) {', '.join(extra)}")
    kind = serving.get("type")
    if kind not in TYPES:
        raise OperationsConfigError(f"{where}.type must be one of {', '.join(TYPES)}, got {kind!r}")
    argv = _argv(serving, where)
    if kind == "process" and argv is None:
        raise OperationsConfigError(f"{where}: type process needs argv (the serving command the agent starts)")
    if kind == "systemd" and not serving.get("unit"):
        raise OperationsConfigError(f"{where}: type systemd needs unit")
    if kind == "container" and not serving.get("container"):
        raise OperationsConfigError(f"{where}: type container needs container (its name)")
    env = serving.get("env") or {}
    if not isinstance(env, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise OperationsConfigError(f"{where}.env must be a table of strings")
    operations = {}
    for name in OPERATIONS:
        if name not in raw:
            continue
        settings = dict(raw[name] or {})
        op_where = f"operations.{name}"
        extra = sorted(set(settings) - _OPERATION_KEYS)
        if extra:
            raise OperationsConfigError(f"{op_where}: unknown key(s) {', '.join(extra)}")
        op_argv = _argv(settings, op_where)
        if op_argv is None and name not in _DEFAULTS[kind]:
            raise OperationsConfigError(f"{op_where}: a {kind} stack has no default {name}; give argv or command")
        operations[name] = OperationSpec(name=name, argv=op_argv, timeout_s=_seconds(
            settings.get("timeout_s", DEFAULT_TIMEOUT_S[name]), f"{op_where}.timeout_s"))
    return ServingSpec(
        type=kind, argv=argv, health_url=_url(serving.get("health_url"), f"{where}.health_url", True),
        metrics_url=_url(serving.get("metrics_url"), f"{where}.metrics_url", False),
        base_url=_url(serving.get("base_url"), f"{where}.base_url", False),
        ready_pattern=serving.get("ready_pattern"), unit=serving.get("unit"), container=serving.get("container"),
        runtime=str(serving.get("runtime", "docker")), env=dict(env), cwd=serving.get("cwd"),
        log_file=serving.get("log_file"),
        stop_timeout_s=_seconds(serving.get("stop_timeout_s", 30), f"{where}.stop_timeout_s"),
        operations=operations,
    )


def declared_operations(raw: Mapping[str, Mapping[str, Any]] | None) -> list[str]:
    """The operation names to report at registration and claim (validated; the `serving` table is not one)."""
    spec = parse_operations(raw)
    return spec.declared if spec is not None else []


# ----------------------------------------------------------------------------------------------------------------------
# Prometheus text format (the observability check)
# ----------------------------------------------------------------------------------------------------------------------

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)(\s+-?\d+)?\s*$")


def parse_prometheus(text: str) -> dict[str, Any]:
    """Samples and metric families in a Prometheus text exposition; lines that do not parse are listed."""
    families, samples, errors = set(), 0, []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _SAMPLE.match(stripped)
        if match is None:
            errors.append(f"line {number}: {stripped[:120]}")
            continue
        try:
            float(match.group(3))
        except ValueError:
            errors.append(f"line {number}: value {match.group(3)!r} is not a number")
            continue
        samples += 1
        families.add(re.sub(r"_(bucket|sum|count|total|created)$", "", match.group(1)))
    return {"samples": samples, "families": sorted(families), "errors": errors[:20], "parses": samples > 0
            and not errors}


# ----------------------------------------------------------------------------------------------------------------------
# Running operations
# ----------------------------------------------------------------------------------------------------------------------


def _libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_LIBC = _libc()  # loaded here, not in the child: no dynamic loading between fork and exec


def _die_with_parent() -> None:
    """Runs in the child between fork and exec (Linux): the kernel kills it when the agent's thread goes."""
    prctl = getattr(_LIBC, "prctl", None)
    if prctl is not None:
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _ready_unix_in(line: str) -> float | None:
    """`ready_unix` from a JSON object in a log line (the mock server prints `MOCK_READY {"ready_unix": ...}`)."""
    brace = line.find("{")
    if brace < 0:
        return None
    try:
        details = json.loads(line[brace:])
    except ValueError:
        return None
    ready = details.get("ready_unix") if isinstance(details, dict) else None
    return float(ready) if isinstance(ready, (int, float)) and not isinstance(ready, bool) else None


def log_line_time(line: str) -> float | None:
    """The time at the start of a `journalctl -o short-unix` line (seconds) or a `docker logs --timestamps` line
    (RFC 3339, nanoseconds cut to microseconds); None for anything else."""
    head = line.split(" ", 1)[0]
    with contextlib.suppress(ValueError):
        return float(head)
    match = re.match(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})$", head)
    if match is None:
        return None
    fraction = (match.group(2) or ".0")[:7]
    zone = "+00:00" if match.group(3) == "Z" else match.group(3)
    return datetime.datetime.fromisoformat(match.group(1) + fraction + zone).timestamp()


class _LineLog:
    """Timestamped lines (unix seconds) from the stack and from the operations, bounded."""

    def __init__(self):
        self.lines: collections.deque[tuple[float, str, str]] = collections.deque(maxlen=MAX_LOG_LINES)
        self.lock = threading.Lock()

    def add(self, source: str, text: str, at: float | None = None) -> None:
        with self.lock:
            self.lines.append((time.time() if at is None else at, source, text.rstrip("\n")))

    def between(self, start: float, end: float) -> list[dict[str, Any]]:
        with self.lock:
            return [{"ts": ts, "source": source, "line": line} for ts, source, line in self.lines
                    if start <= ts <= end]


class ServingStack:
    """Runs the declared operations on the serving stack; refuses everything else."""

    def __init__(self, spec: ServingSpec, *, environ: Mapping[str, str] | None = None):
        self.spec = spec
        self.log = _LineLog()
        self.history: list[dict[str, Any]] = []
        self.ready_events: list[dict[str, Any]] = []
        self._environ = dict(os.environ if environ is None else environ)
        self._process: subprocess.Popen | None = None
        self._readers: list[threading.Thread] = []
        self._ready_pattern = re.compile(spec.ready_pattern) if spec.ready_pattern else None

    @classmethod
    def from_config(cls, raw: Mapping[str, Mapping[str, Any]] | None, **kwargs: Any) -> ServingStack:
        spec = parse_operations(raw)
        if spec is None:
            raise OperationRefused("this node declares no operations ([operations.serving] and named operations "
                                   "in the agent configuration)")
        return cls(spec, **kwargs)

    @property
    def declared(self) -> list[str]:
        return self.spec.declared

    def require(self, names) -> None:
        missing = sorted(set(names) - set(self.declared))
        if missing:
            raise OperationRefused(f"operation(s) {', '.join(missing)} not declared on this node (declared: "
                                   f"{', '.join(self.declared) or 'none'})")

    # -- the process the agent starts itself -------------------------------------------------------------------------
    @property
    def process(self) -> subprocess.Popen | None:
        return self._process

    def running(self) -> bool:
        if self.spec.type == "process":
            return self._process is not None and self._process.poll() is None
        return self.check_health(timeout_s=2.0)["ok"]

    def _read_output(self, process: subprocess.Popen, source: str) -> None:
        for raw in iter(process.stdout.readline, b""):
            now = time.time()
            line = raw.decode(errors="replace")
            self.log.add(source, line, at=now)
            if self._ready_pattern is not None and self._ready_pattern.search(line):
                self.ready_events.append({"seen_unix": now, "pid": process.pid, "line": line.strip()[:500],
                                          "logged_ready_unix": _ready_unix_in(line)})
        process.stdout.close()

    def _spawn(self, argv: tuple[str, ...], source: str) -> dict[str, Any]:
        if self.running():
            return {"spawned": False, "detail": f"already running (pid {self._process.pid})"}
        environment = {**self._environ, **self.spec.env}
        spawned_unix = time.time()
        self._process = subprocess.Popen(  # noqa: S603 - the operator's own declared command, no shell
            list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=environment, cwd=self.spec.cwd, start_new_session=True, preexec_fn=_die_with_parent,
        )
        self.log.add("agent", f"spawned {source} pid {self._process.pid}: {shlex.join(argv)}", at=spawned_unix)
        reader = threading.Thread(target=self._read_output, args=(self._process, source), daemon=True,
                                  name=f"serving-output-{self._process.pid}")
        reader.start()
        self._readers.append(reader)
        return {"spawned": True, "pid": self._process.pid, "spawned_unix": spawned_unix}

    def _signal_group(self, number: int) -> None:
        if self._process is not None and self._process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, number)

    def _stop_process(self, timeout_s: float) -> dict[str, Any]:
        process = self._process
        if process is None or process.poll() is not None:
            return {"was_running": False}
        self._signal_group(signal.SIGTERM)
        try:
            process.wait(timeout=min(timeout_s, self.spec.stop_timeout_s))
            forced = False
        except subprocess.TimeoutExpired:
            self._signal_group(signal.SIGKILL)
            process.wait()
            forced = True
        return {"was_running": True, "pid": process.pid, "returncode": process.returncode, "forced": forced}

    def _kill_process(self) -> dict[str, Any]:
        process = self._process
        if process is None or process.poll() is not None:
            return {"was_running": False}
        self._signal_group(signal.SIGKILL)
        process.wait()
        return {"was_running": True, "pid": process.pid, "returncode": process.returncode, "signal": "SIGKILL"}

    # -- commands -------------------------------------------------------------------------------------------------
    def _default_argv(self, name: str) -> tuple[str, ...]:
        spec = self.spec
        if spec.type == "systemd":
            if name == "kill_worker":
                return ("systemctl", "kill", "-s", "SIGKILL", spec.unit)
            return ("systemctl", name, spec.unit)
        if spec.type == "container":
            if name == "kill_worker":
                return (spec.runtime, "kill", "-s", "KILL", spec.container)
            return (spec.runtime, name, spec.container)
        raise OperationRefused(f"{name} has no default for a {spec.type} stack")  # parse_operations prevents it

    def _command(self, name: str, argv: tuple[str, ...], timeout_s: float) -> dict[str, Any]:
        try:
            completed = subprocess.run(  # noqa: S603 - the operator's own declared command, no shell
                list(argv), capture_output=True, timeout=timeout_s, stdin=subprocess.DEVNULL,
                env={**self._environ, **self.spec.env}, check=False)
        except subprocess.TimeoutExpired as error:
            output = (error.stdout or b"") + (error.stderr or b"")
            for line in output.decode(errors="replace").splitlines():
                self.log.add(f"op:{name}", line)
            return {"returncode": None, "timed_out": True, "output_tail": output.decode(errors="replace")[-4000:]}
        except OSError as error:
            return {"returncode": None, "timed_out": False, "output_tail": f"cannot run {argv[0]}: {error}"}
        output = (completed.stdout + completed.stderr).decode(errors="replace")
        for line in output.splitlines():
            self.log.add(f"op:{name}", line)
        return {"returncode": completed.returncode, "timed_out": False, "output_tail": output[-4000:]}

    def run(self, name: str) -> dict[str, Any]:
        """Run a declared operation; returns what happened, with start/end times (unix and monotonic)."""
        if name not in OPERATIONS:
            raise OperationRefused(f"{name!r} is not an operation (known: {', '.join(OPERATIONS)})")
        self.require([name])
        operation = self.spec.operations[name]
        record: dict[str, Any] = {"operation": name, "started_unix": time.time(), "started_monotonic":
                                  time.monotonic(), "type": self.spec.type}
        self.log.add("agent", f"operation {name} begins")
        if operation.argv is not None and not (self.spec.type == "process" and name == "bad_deploy"):
            record["argv"] = list(operation.argv)
            record.update(self._command(name, operation.argv, operation.timeout_s))
            record["ok"] = record["returncode"] == 0
        elif self.spec.type == "process":
            record.update(self._process_operation(name, operation))
            record["ok"] = True
        else:
            argv = self._default_argv(name)
            record["argv"] = list(argv)
            record.update(self._command(name, argv, operation.timeout_s))
            record["ok"] = record["returncode"] == 0
        record["ended_unix"], record["ended_monotonic"] = time.time(), time.monotonic()
        record["duration_s"] = record["ended_monotonic"] - record["started_monotonic"]
        self.log.add("agent", f"operation {name} ends: ok={record['ok']}")
        self.history.append(record)
        return record

    def _process_operation(self, name: str, operation: OperationSpec) -> dict[str, Any]:
        if name == "start":
            return self._spawn(self.spec.argv, "serving")
        if name == "stop":
            return self._stop_process(operation.timeout_s)
        if name == "restart":
            stopped = self._stop_process(operation.timeout_s)
            return {"stop": stopped, **self._spawn(self.spec.argv, "serving")}
        if name == "kill_worker":
            return self._kill_process()
        if name == "bad_deploy":
            stopped = self._stop_process(operation.timeout_s)
            return {"stop": stopped, **self._spawn(operation.argv, "bad_deploy")}
        raise OperationRefused(f"{name} has no default for a process stack")  # parse_operations prevents it

    # -- health, metrics, logs ------------------------------------------------------------------------------------
    def check_health(self, timeout_s: float = 1.0) -> dict[str, Any]:
        began = time.monotonic()
        try:
            with urllib.request.urlopen(self.spec.health_url, timeout=timeout_s) as reply:  # noqa: S310
                status = reply.status
        except urllib.error.HTTPError as error:
            status = error.code
        except (urllib.error.URLError, OSError, ValueError) as error:
            return {"ok": False, "status": None, "error": type(error).__name__, "latency_s":
                    time.monotonic() - began, "unix": time.time()}
        return {"ok": 200 <= status < 300, "status": status, "latency_s": time.monotonic() - began,
                "unix": time.time()}

    def wait_healthy(self, timeout_s: float, interval_s: float = 0.02, cancelled=lambda: False) -> dict[str, Any]:
        """Poll the health URL until it answers 2xx; `healthy_unix` is when the first good answer came back."""
        deadline = time.monotonic() + timeout_s
        checks = 0
        while time.monotonic() < deadline and not cancelled():
            checks += 1
            result = self.check_health(timeout_s=max(0.2, min(2.0, deadline - time.monotonic())))
            if result["ok"]:
                return {"healthy": True, "healthy_unix": result["unix"], "checks": checks}
            time.sleep(interval_s)
        return {"healthy": False, "healthy_unix": None, "checks": checks}

    def check_metrics(self, timeout_s: float = 5.0) -> dict[str, Any]:
        if self.spec.metrics_url is None:
            return {"declared": False}
        try:
            with urllib.request.urlopen(self.spec.metrics_url, timeout=timeout_s) as reply:  # noqa: S310
                body = reply.read(8 * 2**20).decode(errors="replace")
                status = reply.status
        except urllib.error.HTTPError as error:
            return {"declared": True, "answers": False, "status": error.code, "parses": False}
        except (urllib.error.URLError, OSError, ValueError) as error:
            return {"declared": True, "answers": False, "status": None, "error": str(error), "parses": False}
        return {"declared": True, "answers": 200 <= status < 300, "status": status, **parse_prometheus(body)}

    def logs_between(self, start_unix: float, end_unix: float, timeout_s: float = 30.0) -> list[dict[str, Any]]:
        """The stack's log lines (and the operations' output) in a time window."""
        lines = self.log.between(start_unix, end_unix)
        spec = self.spec
        argv = None
        if spec.type == "systemd":
            argv = ["journalctl", "-u", spec.unit, "--since", f"@{int(start_unix)}", "--until",
                    f"@{int(end_unix) + 1}", "-o", "short-unix", "--no-pager"]
        elif spec.type == "container":
            argv = [spec.runtime, "logs", "--timestamps", "--since", f"{start_unix:.3f}", "--until",
                    f"{end_unix:.3f}", spec.container]
        elif spec.log_file:
            with contextlib.suppress(OSError), open(spec.log_file, "rb") as handle:
                handle.seek(max(0, os.path.getsize(spec.log_file) - 2**20))
                lines += [{"ts": None, "source": "log_file", "line": line}
                          for line in handle.read().decode(errors="replace").splitlines()[-2000:]]
        if argv is not None:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                completed = subprocess.run(argv, capture_output=True, timeout=timeout_s, check=False,  # noqa: S603
                                           env={**self._environ, **self.spec.env})
                lines += [{"ts": log_line_time(line), "source": argv[0], "line": line}
                          for line in (completed.stdout + completed.stderr).decode(errors="replace").splitlines()]
        return lines

    def ready_after(self, start_unix: float, end_unix: float) -> float | None:
        """When the stack itself logged "ready" (its `ready_pattern`) between two moments: the time inside a JSON
        `ready_unix` of the line, else the line's own time (journal / container log timestamp, or when the agent
        read it from a process it started)."""
        if self._ready_pattern is None:
            return None
        if self.spec.type == "process":
            for event in self.ready_events:
                if start_unix <= event["seen_unix"] <= end_unix:
                    return event["logged_ready_unix"] if event["logged_ready_unix"] is not None else event["seen_unix"]
            return None
        for entry in self.logs_between(start_unix, end_unix):
            if entry["source"].startswith(("op:", "agent")) or not self._ready_pattern.search(entry["line"]):
                continue
            logged = _ready_unix_in(entry["line"])
            moment = logged if logged is not None else entry["ts"]
            if moment is not None and start_unix - 1.0 <= moment <= end_unix:
                return moment
        return None

    def close(self) -> None:
        """Stop the process this agent started (other stack types are left as the operator runs them)."""
        if self.spec.type == "process":
            self._stop_process(self.spec.stop_timeout_s)
        for reader in self._readers:
            reader.join(timeout=2)
