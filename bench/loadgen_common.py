"""Shared harness of the load-generator benchmarks (BENCH-METHOD.md): the mock server pinned to CPU 0, each client
pinned to CPU 1, the server's CPU sampled so it is never the limit, and the machine described in the output."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ROOT / "agents"
PYTHON = sys.executable
SERVER_CPU = "0"
CLIENT_CPU = "1"
CHAT_BODY = {
    "model": "mock-model",
    "messages": [{"role": "user", "content": " ".join(["word"] * 32)}],
    "max_tokens": 16,
    "stream": True,
    "stream_options": {"include_usage": True},
}


def pinned(cpu: str, command: list[str]) -> list[str]:
    usable = shutil.which("taskset") and (os.cpu_count() or 1) > 1
    return (["taskset", "-c", cpu] if usable else []) + command


def machine() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(), "kernel": platform.release(),
            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "load_avg": os.getloadavg()}


class PinnedMock:
    """`python -m dossier_agent.mockserver` (no delays, 16 tokens) pinned to CPU 0; `cpu_seconds()` samples it."""

    def __init__(self, *extra: str):
        env = dict(os.environ, PYTHONPATH=str(AGENTS))
        self.process = subprocess.Popen(pinned(SERVER_CPU, [PYTHON, "-m", "dossier_agent.mockserver", "--port", "0",
                                                            *extra]),
                                        stdout=subprocess.PIPE, text=True, env=env)
        line = self.process.stdout.readline()
        if not line.startswith("MOCK_READY "):
            self.process.kill()
            raise RuntimeError(f"mock server did not start: {line!r}")
        self.ready = json.loads(line.split(" ", 1)[1])
        self.url = self.ready["url"]

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def run_client(command: list[str], server: PinnedMock, timeout_s: float, env: dict | None = None,
               cwd: str | None = None) -> dict:
    """Run one client pinned to CPU 1; returns its wall time, exit code, tail of output and the server's CPU share."""
    cpu_before, began = server.cpu_seconds(), time.monotonic()
    completed = subprocess.run(pinned(CLIENT_CPU, command), capture_output=True, text=True, timeout=timeout_s,
                               env=env, cwd=cwd, check=False)
    wall = time.monotonic() - began
    return {"rc": completed.returncode, "wall_s": wall, "stdout": completed.stdout, "stderr": completed.stderr[-3000:],
            "server_cpu_share": (server.cpu_seconds() - cpu_before) / wall}
