"""Many agents against one server: heartbeats and claim polls for a fixed time, latency per call, zero errors expected.

    .venv/bin/python bench/agents_load.py --database sqlite
    .venv/bin/python bench/agents_load.py --database postgresql --postgres-url postgres://postgres@127.0.0.1:5432/x

A fresh database is migrated and filled with one pool, N registered agents and a few queued jobs; gunicorn serves it
(gthread, the Procfile's worker class) on loopback; N simulated agents (asyncio, one bounded HTTP connection pool)
then behave like `dossier-agent run` when idle — a heartbeat every heartbeat_interval_s and a claim every
claim_interval_s ± 20 %, each starting at a random point of its interval. A claim that gets a job starts and finishes
it at once. Afterwards a real `dossier-agent run` idles against the same server and its resident memory is read.
The JSON result goes to bench/out/; docs/PERFORMANCE.md quotes it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
AGENT_VERSION = "0.1.0"

SETUP = """
import json, sys
from apps.accounts.services import team_create
from apps.benchmarks.services import plan_create, plan_dispatch, plan_request_dispatch
from apps.fleet.services import agent_register, pool_create, registration_token_create
count, jobs = int(sys.argv[1]), int(sys.argv[2])
team = team_create(name="bench", slug="bench")
pool = pool_create(team=team, name="bench-pool")
_row, secret = registration_token_create(pool=pool)
inventory = {"schema": 1, "gpu_present": False, "gpus": [], "host": {"hostname": "bench"}, "software": {}}
tokens = [
    agent_register(registration_token=secret, name=f"sim-{index}", agent_version="0.1.0", protocol_version=1,
                   machine_id=f"sim-{index}", job_kinds=["bench_noop"], operations=[], inventory=inventory).agent_token
    for index in range(count)
]
entries = [{"kind": "bench_noop", "count": min(50, jobs - start)} for start in range(0, jobs, 50)]
plan = plan_create(team=team, name="bench", target_pool=pool, spec={"jobs": entries})
plan_request_dispatch(plan=plan)
plan_dispatch(plan_id=plan.pk)
_row, agent_secret = registration_token_create(pool=pool)
print("SETUP " + json.dumps({"tokens": tokens, "registration_token": agent_secret}))
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def machine() -> dict:
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(), "kernel": platform.release(),
            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "load_avg_before": os.getloadavg()}


def percentile(sorted_values: list[float], fraction: float) -> float | None:
    """Nearest rank: the smallest value with at least `fraction` of the samples at or below it."""
    if not sorted_values:
        return None
    rank = max(1, int(-(-fraction * len(sorted_values) // 1)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def summarise(latencies: list[float]) -> dict:
    values = sorted(latencies)
    summary = {"count": len(values)}
    for name, fraction in (("p50_ms", 0.5), ("p95_ms", 0.95), ("p99_ms", 0.99), ("max_ms", 1.0)):
        value = percentile(values, fraction)
        summary[name] = round(value * 1000, 1) if value is not None else None
    if len(values) < 100:
        summary["p99_ms"] = None  # no p99 from fewer than 100 samples (docs/metrics.md)
    return summary


class Recorder:
    def __init__(self) -> None:
        self.latencies: dict[str, list[float]] = {}
        self.statuses: dict[str, dict[int, int]] = {}
        self.errors: list[str] = []

    def add(self, call: str, status: int, seconds: float) -> None:
        self.latencies.setdefault(call, []).append(seconds)
        counts = self.statuses.setdefault(call, {})
        counts[status] = counts.get(status, 0) + 1


EXPECTED = {"heartbeat": {200}, "claim": {200, 204}, "start": {200}, "finish": {201}}


async def simulated_agent(client: httpx.AsyncClient, token: str, recorder: Recorder, deadline: float,
                          heartbeat_s: float, claim_s: float, rng: random.Random) -> None:
    headers = {"Authorization": f"Bearer {token}", "X-Agent-Version": AGENT_VERSION}

    async def call(name: str, path: str, body: dict, extra: dict | None = None) -> httpx.Response | None:
        started = time.perf_counter()
        try:
            response = await client.post(path, content=json.dumps(body), headers={**headers, **(extra or {}),
                                                                                  "Content-Type": "application/json"})
        except httpx.HTTPError as error:
            recorder.errors.append(f"{name}: {type(error).__name__}: {error}")
            return None
        recorder.add(name, response.status_code, time.perf_counter() - started)
        if response.status_code not in EXPECTED[name]:
            recorder.errors.append(f"{name}: HTTP {response.status_code} {response.text[:200]}")
        return response

    now = time.monotonic()
    next_heartbeat = now + rng.uniform(0, heartbeat_s)
    next_claim = now + rng.uniform(0, claim_s)
    while True:
        wake = min(next_heartbeat, next_claim)
        if wake >= deadline:
            return
        await asyncio.sleep(max(0.0, wake - time.monotonic()))
        if next_heartbeat <= next_claim:
            await call("heartbeat", "/heartbeat", {"agent_version": AGENT_VERSION, "state": "idle", "current_job": None,
                                                   "job_kinds": ["bench_noop"], "uptime_s": 1.0, "spool_pending": 0,
                                                   "inventory_sha256": "0" * 64})
            next_heartbeat += heartbeat_s
            continue
        response = await call("claim", "/jobs/claim", {"job_kinds": ["bench_noop"], "operations": [], "wait_s": 0})
        if response is not None and response.status_code == 200:
            claim = response.json()
            job_id, attempt, job_headers = claim["job"]["id"], claim["attempt"], {"X-Job-Token": claim["job_token"]}
            await call("start", f"/jobs/{job_id}/start", {"attempt": attempt}, job_headers)
            await call("finish", f"/jobs/{job_id}/finish",
                       {"attempt": attempt, "status": "succeeded", "finished_at": "2025-01-31T12:00:00Z",
                        "result": {"bench": True}, "artifacts": [], "event_count": 0},
                       {**job_headers, "Idempotency-Key": uuid.uuid4().hex})
        next_claim += claim_s * rng.uniform(0.8, 1.2)


def service_time(base_url: str, token: str, calls: int = 100) -> dict:
    """One agent alone, call after call: the server's own latency when nothing queues (context for the load)."""
    headers = {"Authorization": f"Bearer {token}", "X-Agent-Version": AGENT_VERSION}
    bodies = {
        "heartbeat": ("/heartbeat", {"agent_version": AGENT_VERSION, "state": "idle", "current_job": None,
                                     "job_kinds": ["bench_noop"], "uptime_s": 1.0, "spool_pending": 0}),
        "claim": ("/jobs/claim", {"job_kinds": ["nothing_queued"], "operations": [], "wait_s": 0}),
    }
    result = {}
    with httpx.Client(base_url=f"{base_url}/api/agent/v1", headers=headers, timeout=30) as client:
        for name, (path, body) in bodies.items():
            latencies = []
            for _call in range(calls):
                started = time.perf_counter()
                response = client.post(path, json=body)
                latencies.append(time.perf_counter() - started)
                assert response.status_code in EXPECTED[name], response.text
            result[name] = summarise(latencies)
    return result


async def run_load(base_url: str, tokens: list[str], duration_s: float, heartbeat_s: float, claim_s: float,
                   connections: int) -> Recorder:
    recorder = Recorder()
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    async with httpx.AsyncClient(base_url=f"{base_url}/api/agent/v1", limits=limits,
                                 timeout=httpx.Timeout(30, pool=60)) as client:
        deadline = time.monotonic() + duration_s
        rng = random.Random(7)
        await asyncio.gather(*(simulated_agent(client, token, recorder, deadline, heartbeat_s, claim_s,
                                               random.Random(rng.random())) for token in tokens))
    return recorder


def prepare_database(kind: str, workdir: Path, postgres_url: str) -> str:
    if kind == "sqlite":
        return f"sqlite:///{workdir / 'bench.sqlite3'}"
    import psycopg

    parts = urlsplit(postgres_url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
        connection.execute(f'CREATE DATABASE "{name}"')
    return postgres_url


def drop_database(kind: str, postgres_url: str) -> None:
    if kind != "postgresql":
        return
    import psycopg

    parts = urlsplit(postgres_url)
    with psycopg.connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{parts.path.lstrip("/")}" WITH (FORCE)')


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and all its children (gunicorn's master and workers)."""
    import psutil

    root = psutil.Process(pid)
    total = 0.0
    for process in [root, *root.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def resident_memory_of_idle_agent(server_url: str, registration_token: str, workdir: Path, idle_s: float) -> dict:
    """Register and start a real `dossier-agent run`, let it idle, read its resident memory (and its children's)."""
    import psutil

    state = workdir / "agent-state"
    config = workdir / "agent.toml"
    config.touch()
    environment = {key: value for key, value in os.environ.items() if not key.startswith("DOSSIER_")}
    environment["DOSSIER_AGENT_CONFIG"] = str(config)
    subprocess.run([PYTHON, "-m", "dossier_agent", "register", "--server", server_url, "--registration-token",
                    registration_token, "--state-dir", str(state)], env=environment, check=True, capture_output=True,
                   timeout=120)
    agent = subprocess.Popen([PYTHON, "-m", "dossier_agent", "run", "--state-dir", str(state)], env=environment,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(idle_s)
        process = psutil.Process(agent.pid)
        children = process.children(recursive=True)
        maps = Path(f"/proc/{agent.pid}/maps").read_text()
        return {
            "rss_mb": round(process.memory_info().rss / 2**20, 1),
            "children_rss_mb": round(sum(child.memory_info().rss for child in children) / 2**20, 1),
            "children": len(children),
            "torch_loaded": "libtorch" in maps,
            "idle_s": idle_s,
        }
    finally:
        agent.send_signal(signal.SIGTERM)
        try:
            agent.wait(timeout=30)
        except subprocess.TimeoutExpired:
            agent.kill()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", choices=["sqlite", "postgresql"], required=True)
    parser.add_argument("--postgres-url", default="postgres://postgres@127.0.0.1:5432/dossier_bench_agents")
    parser.add_argument("--agents", type=int, default=500)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--jobs", type=int, default=200, help="jobs queued for the simulated agents to claim")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--heartbeat-interval", type=float, default=30.0)
    parser.add_argument("--claim-interval", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=64, help="client connection pool (bounded, loopback)")
    parser.add_argument("--out", type=Path)
    arguments = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="dossier-agents-load-"))
    database_url = prepare_database(arguments.database, workdir, arguments.postgres_url)
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("DOSSIER_", "CELERY_"))}
    environment.update({
        "DJANGO_SETTINGS_MODULE": "config.settings", "DATABASE_URL": database_url, "DOSSIER_VAR_DIR": str(workdir),
        "SECRET_KEY": secrets.token_urlsafe(50), "DEBUG": "false", "ALLOWED_HOSTS": "127.0.0.1",
        "LOG_LEVEL": "WARNING", "DOSSIER_AGENT_HEARTBEAT_INTERVAL_S": str(int(arguments.heartbeat_interval)),
        "DOSSIER_AGENT_CLAIM_INTERVAL_S": str(int(arguments.claim_interval)),
    })
    subprocess.run([PYTHON, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=environment, check=True)
    subprocess.run([PYTHON, "manage.py", "createcachetable"], cwd=ROOT, env=environment, check=True)
    setup = subprocess.run([PYTHON, "manage.py", "shell", "-c", SETUP.replace("sys.argv[1]", str(arguments.agents))
                            .replace("sys.argv[2]", str(arguments.jobs))],
                           cwd=ROOT, env=environment, capture_output=True, text=True)
    if setup.returncode != 0:
        raise SystemExit(f"setting up the database failed:\n{setup.stderr}")
    seeded = json.loads(next(line for line in setup.stdout.splitlines() if line.startswith("SETUP "))[6:])

    port = free_port()
    server = subprocess.Popen(
        [PYTHON, "-m", "gunicorn", "config.wsgi", "--bind", f"127.0.0.1:{port}", "--worker-class", "gthread",
         "--workers", str(arguments.workers), "--threads", str(arguments.threads), "--timeout", "60",
         "--no-control-socket", "--log-level", "warning"],
        cwd=ROOT, env=environment,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        for _try in range(120):
            try:
                httpx.get(f"{base_url}/healthz", timeout=2)
                break
            except httpx.HTTPError:
                time.sleep(0.5)
        report = {"machine": machine(), "database": arguments.database,
                  "server": {"worker_class": "gthread", "workers": arguments.workers, "threads": arguments.threads},
                  "agents": arguments.agents, "duration_s": arguments.duration, "jobs_queued": arguments.jobs,
                  "heartbeat_interval_s": arguments.heartbeat_interval, "claim_interval_s": arguments.claim_interval,
                  "client_connections": arguments.connections}
        report["unloaded"] = service_time(base_url, seeded["tokens"][0])
        server_cpu_before, client_cpu_before = cpu_seconds(server.pid), time.process_time()
        started = time.monotonic()
        recorder = asyncio.run(run_load(base_url, seeded["tokens"], arguments.duration, arguments.heartbeat_interval,
                                        arguments.claim_interval, arguments.connections))
        report["wall_s"] = round(time.monotonic() - started, 1)
        # CPU seconds per wall second during the load: how much of the machine the server and the load generator got.
        report["server_cpu_per_s"] = round((cpu_seconds(server.pid) - server_cpu_before) / report["wall_s"], 2)
        report["client_cpu_per_s"] = round((time.process_time() - client_cpu_before) / report["wall_s"], 2)
        report["calls"] = {name: {**summarise(values), "statuses": recorder.statuses[name]}
                           for name, values in sorted(recorder.latencies.items())}
        answered = sum(len(v) for v in recorder.latencies.values())
        report["requests_per_s"] = round(answered / arguments.duration, 1)
        report["server_cpu_ms_per_request"] = round(report["server_cpu_per_s"] * report["wall_s"] / answered * 1000, 2)
        report["load_avg_after"] = os.getloadavg()
        report["errors"] = len(recorder.errors)
        report["first_errors"] = recorder.errors[:10]
        report["idle_agent"] = resident_memory_of_idle_agent(base_url, seeded["registration_token"], workdir, 20.0)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        drop_database(arguments.database, arguments.postgres_url)

    out = arguments.out or ROOT / "bench" / "out" / f"agents_load-{arguments.database}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0 if report["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
