"""Ingest benchmark through the server's own path: a throughput result with 1 M per-request records (target ≤ 15 s).

Builds the records as numpy columns (16 output tokens each, one chunk per token, 1 % timeouts, Poisson arrivals at
2,000 req/s), writes them with the agent's own writer (`metrics.columns_to_npz`), stores them through the artifact
service into a temporary artifact folder, records a Result for a `throughput` job in a throw-away SQLite database,
then times `services.result_ingest` (the Celery task body: read the npz from storage, `apps.benchmarks.throughput`
→ `metrics.summarize`, save the summary JSON) — each rep on a fresh result row.

    .venv/bin/python bench/throughput_ingest.py --records 1000000
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
WORK = Path(tempfile.mkdtemp(prefix="dossier-phase2-bench-"))
os.environ["DATABASE_URL"] = f"sqlite:///{WORK / 'bench.sqlite3'}"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from loadgen_common import machine  # noqa: E402


def make_columns(count: int, seed: int = 0):
    from dossier_agent.contract import metrics

    rng = np.random.default_rng(seed)
    tokens = 16
    sched = np.cumsum(rng.exponential(1 / 2000, count))
    sent = sched + rng.exponential(0.0003, count)
    failed = rng.random(count) < 0.01
    ttft = 0.05 + rng.gamma(4, 0.01, count)
    gaps = 0.01 + rng.exponential(0.002, (count, tokens))
    gaps[:, 0] = 0.0
    times = sent[:, None] + ttft[:, None] + np.cumsum(gaps, axis=1)
    per_request = np.where(failed, 0, tokens)
    offsets = np.concatenate([[0], np.cumsum(per_request)]).astype(np.int64)
    chunk_times = times[~failed].ravel()
    end = np.where(failed, sent + 0.2, times[:, -1] + 0.0002)
    return metrics.Columns(
        scheduled=sched, sent=sent, first_byte=np.where(failed, np.nan, sent + 0.001), end=end,
        status=np.where(failed, 0, 200).astype(np.int64),
        error=np.where(failed, "timeout", "").astype(object),
        input_tokens=np.where(failed, -1, 32).astype(np.int64),
        output_tokens=np.where(failed, -1, tokens).astype(np.int64),
        output_ok=~failed, chunk_offsets=offsets, chunk_times=chunk_times,
        chunk_tokens=np.ones(chunk_times.size, dtype=np.int64),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args()

    import django
    from django.conf import settings

    django.setup()
    settings.STORAGES = {**settings.STORAGES, "artifacts": {
        "BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(WORK / "artifacts")}}}
    from django.core.management import call_command

    began = time.monotonic()
    call_command("migrate", verbosity=0)
    migrate_s = time.monotonic() - began

    import hashlib

    from django.utils import timezone
    from dossier_agent.contract import metrics

    from apps.accounts.services import team_create
    from apps.benchmarks import services
    from apps.benchmarks.models import Artifact, Job, JobAttempt, Result
    from apps.fleet.services import pool_create
    from apps.fleet.tests.helpers import register_agent

    began = time.monotonic()
    archive = metrics.columns_to_npz(make_columns(args.records))
    build_s = time.monotonic() - began
    team = team_create(name="Bench", slug="bench")
    pool = pool_create(team=team, name="bench-pool")
    agent, _token = register_agent(pool, machine_id="bench", job_kinds=("throughput",))
    spec = {"endpoint": {"url": "http://127.0.0.1:8000/v1", "api": "chat"}, "profile": {"kind": "poisson",
            "rate": 2000}, "duration_s": float(args.records / 2000 + 1), "warmup_s": 0.0, "cooldown_s": 0.0,
            "output_tokens": 16, "slo": {"ttft_max_s": 0.2, "tpot_max_s": 0.02, "e2e_max_s": 0.5, "target": 0.99}}
    digest = hashlib.sha256(archive).hexdigest()
    print(json.dumps({"records": args.records, "npz_bytes": len(archive), "build_s": round(build_s, 1),
                      "migrate_s": round(migrate_s, 1)}), flush=True)
    rows = []
    for rep in range(1, args.reps + 1):
        now = timezone.now()
        job = Job.objects.create(team=team, kind="throughput", spec=spec, spec_sha256="0" * 64, target_pool=pool,
                                 status="succeeded", attempt_count=1)
        attempt = JobAttempt.objects.create(job=job, number=1, agent=agent, token_hash=f"bench-{rep}",
                                            status="succeeded", claimed_at=now, lease_expires_at=now)
        stored = services.artifact_store(attempt=attempt, sha256=digest, name="records.npz",
                                         media_type="application/x-npz", stream=io.BytesIO(archive),
                                         declared_size=len(archive)).artifact
        result = Result.objects.create(job=job, attempt=attempt, status="succeeded", canonical=True,
                                       result={"spec": spec, "summary": {"offered_rate": 2000.0}},
                                       finished_at=now, spec=spec, spec_sha256="0" * 64)
        result.artifacts.set([stored])
        t0 = time.perf_counter()
        assert services.result_ingest(result_id=result.pk) is True
        elapsed = time.perf_counter() - t0
        result.refresh_from_db()
        phase2 = result.summary["phase2"]
        rows.append({"rep": rep, "ingest_s": round(elapsed, 2), "measured": phase2["summary"]["counts"]["measured"],
                     "e2e_p99_s": phase2["summary"]["latency_s"]["e2e"]["per_request"]["p99"],
                     "summary_json_bytes": len(json.dumps(result.summary)), "artifacts": Artifact.objects.count()})
        print(json.dumps(rows[-1]), flush=True)
    print(json.dumps({"machine": machine(), "command": " ".join(sys.argv), "results": rows}))


if __name__ == "__main__":
    try:
        main()
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
