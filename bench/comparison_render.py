"""Comparison page benchmark: server-side render time of the phase-4 comparison of 50 candidates (docs/PERFORMANCE.md).

In one process, on a fresh SQLite database in a temporary folder: migrate, build a ready workload version with
`--candidates` candidates (every fifth an API route; each with a quoted price, a sourced storage line, an estimated
labor line and measured phase-4 inputs), then time GET requests through Django's test client (middleware, view,
normalisation, mistakes, charts, template), the JSON API and the XLSX/CSV exports. Also split the page into its
selector (`comparison_for`), its charts and its template. Reports median, p95 and min over `--reps` requests after
two warm-ups, and the SQL query count.

    .venv/bin/python bench/comparison_render.py --candidates 50 --reps 20 [--out bench/out/comparison_render.json]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _configure(workdir: Path) -> None:
    for key in [key for key in os.environ if key.startswith(("DOSSIER_", "CELERY_"))]:
        del os.environ[key]
    os.environ.update({
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"sqlite:///{workdir / 'bench.sqlite3'}",
        "DOSSIER_VAR_DIR": str(workdir),
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DEBUG": "false",
        "ALLOWED_HOSTS": "testserver",
        "LOG_LEVEL": "WARNING",
    })


def _timings(function, reps: int) -> dict:
    for _warm_up in range(2):
        function()
    samples = []
    for _rep in range(reps):
        start = time.perf_counter()
        function()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    p95_index = max(0, round(0.95 * len(samples)) - 1)
    return {"median_ms": round(statistics.median(samples), 1), "p95_ms": round(samples[p95_index], 1),
            "min_ms": round(samples[0], 1), "reps": reps}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--candidates", type=int, default=50)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--out", type=Path)
    arguments = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="dossier-comparison-bench-"))
    _configure(workdir)
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection
    from django.template.loader import render_to_string
    from django.test import Client
    from django.test.utils import setup_test_environment
    from django.urls import reverse

    # Static URLs without collectstatic; a fast password hasher for the bench's users.
    settings.STORAGES = {**settings.STORAGES,
                         "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    setup_test_environment()
    call_command("migrate", "--noinput", verbosity=0)

    from loadgen_common import machine

    from apps.comparison import charts, display
    from apps.comparison.selectors import comparison_for
    from apps.comparison.tests.builders import many_candidates, workload
    from tests.factories import TeamFactory, UserFactory

    team = TeamFactory(name="Bench team", slug="bench-team")
    user = UserFactory(username="bench", roles=["platform"], teams=[team])
    summary = workload(team)
    started = time.perf_counter()
    many_candidates(team, summary, arguments.candidates, actor=user)
    built_s = time.perf_counter() - started

    client = Client()
    client.force_login(user)
    urls = {
        "page": reverse("comparison:comparison", args=[summary.pk]),
        "print": reverse("comparison:comparison-print", args=[summary.pk]),
        "api_json": reverse("comparison-api:comparison", args=[summary.pk]),
        "xlsx": reverse("comparison:comparison-xlsx", args=[summary.pk]),
        "csv": reverse("comparison:comparison-csv", args=[summary.pk]),
    }

    def get(url):
        def request():
            response = client.get(url)
            assert response.status_code == 200, response.status_code
            return response
        return request

    report = {"machine": machine(), "candidates": arguments.candidates, "database": "sqlite (temporary file)",
              "build_s": round(built_s, 2), "requests": {}, "parts": {}}
    class QueryCounter:
        def __init__(self):
            self.count = 0

        def __call__(self, execute, sql, params, many, context):
            self.count += 1
            return execute(sql, params, many, context)

    for name, url in urls.items():
        counter = QueryCounter()
        with connection.execute_wrapper(counter):
            response = get(url)()
        report["requests"][name] = {**_timings(get(url), arguments.reps), "queries": counter.count,
                                    "bytes": len(response.content)}

    comparison = comparison_for(user, summary)
    assert not comparison.problems, comparison.problems
    assert len(comparison.rows) == arguments.candidates
    report["parts"]["comparison_for"] = _timings(lambda: comparison_for(user, summary), arguments.reps)
    report["parts"]["charts"] = _timings(lambda: charts.all_charts(comparison), arguments.reps)

    def render_page():
        context = {"summary": summary, "comparison": comparison, "rows": display.table_rows(comparison),
                   "training_rows": display.training_table_rows(comparison),
                   "charts": display.chart_list(comparison), "can_write": True}
        return render_to_string("comparison/partials/comparison_body.html", context)

    report["parts"]["table_and_template"] = _timings(render_page, arguments.reps)

    text = json.dumps(report, indent=2)
    print(text)
    if arguments.out:
        arguments.out.parent.mkdir(parents=True, exist_ok=True)
        arguments.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
