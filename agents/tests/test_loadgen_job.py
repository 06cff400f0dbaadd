"""The `throughput` job module: imports without aiohttp/torch, runs its self-test spec, a sweep with artifacts and
events, the self-check verdict, cancellation, and a bad spec."""

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from dossier_agent.jobs import throughput
from dossier_agent.loadgen import selfcheck
from dossier_agent.mockserver import MockConfig, MockServer

AGENTS = Path(__file__).resolve().parents[1]


class Ctx:
    def __init__(self, cancel_after_progress=None):
        self.job_id, self.events, self.artifacts, self.logs, self.progresses = "job-1", [], {}, [], []
        self._cancel_after = cancel_after_progress

    def log(self, message, **fields):
        self.logs.append((message, fields))

    def progress(self, fraction, message=""):
        assert 0.0 <= fraction <= 1.0
        self.progresses.append(fraction)

    def event(self, kind, data):
        json.dumps(data)
        self.events.append((kind, data))

    def add_artifact(self, data, name, media_type):
        self.artifacts[name] = data
        return "0" * 64

    def cancelled(self):
        return self._cancel_after is not None and len(self.progresses) > self._cancel_after

    def raise_if_cancelled(self):
        from dossier_agent.context import JobCancelled

        if self.cancelled():
            raise JobCancelled("cancelled")


def test_module_imports_without_third_party_packages():
    code = ("import sys; sys.modules['aiohttp'] = None; sys.modules['torch'] = None; sys.modules['httpx'] = None\n"
            "from dossier_agent.jobs import throughput; from dossier_agent.loadgen import runner, sweep, selfcheck\n"
            "print(throughput.KIND)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=AGENTS, check=True)
    assert out.stdout.strip() == "throughput"


def test_self_test_spec_runs_against_the_builtin_mock():
    ctx = Ctx()
    result = throughput.run(dict(throughput.SELF_TEST_SPEC), ctx)
    assert result["valid"], result["summary"]["invalid_reasons"]
    assert result["summary"]["counts"]["errors"] == 0
    assert result["summary"]["slo"]["attainment"] == 1.0
    assert "histograms" not in result["summary"]
    records = gzip.decompress(ctx.artifacts["records.jsonl.gz"]).decode().splitlines()
    assert len(records) == result["meta"]["scheduled"] and json.loads(records[0])["status"] == 200
    assert "histograms" in json.loads(ctx.artifacts["summary.json"])
    assert ctx.progresses[-1] == 1.0


def test_sweep_job_reports_levels_capacity_and_artifacts():
    with MockServer(MockConfig(slots=2, service_time_s=0.02)) as server:
        spec = {"endpoint": {"url": server.url, "api": "completions"}, "profile": {"kind": "constant", "rate": 1},
                "duration_s": 0.6, "warmup_s": 0.1, "cooldown_s": 0.0, "min_window_s": 0.3, "output_tokens": 2,
                "prompts": {"synthetic": {"input_tokens_mean": 8}}, "calibrate": False,
                "slo": {"e2e_max_s": 0.1, "target": 0.9}, "send_lag_p99_limit_s": 0.05,
                "sweep": {"key": "rate", "levels": [20, 50, 400]}, "self_check": {"enabled": False}}
        ctx = Ctx()
        result = throughput.run(spec, ctx)
    points = result["sweep"]["points"]
    assert [p["offered"] for p in points] == [20, 50, 400]
    assert points[0]["attainment"] == 1.0 and points[2]["attainment"] < 0.5
    assert result["capacity_at_slo"]["capacity"] == 50
    assert [kind for kind, _ in ctx.events] == ["measurement"] * 3
    assert {"records-20.jsonl.gz", "records-50.jsonl.gz", "records-400.jsonl.gz", "sweep.json"} <= set(ctx.artifacts)


def test_self_check_refuses_a_target_above_half_the_ceiling():
    ceiling = {"open_loop_ceiling_per_s": 1000.0}
    assert selfcheck.judge({"profile": {"kind": "constant", "rate": 400}}, ceiling)["verdict"] == "ok"
    assert selfcheck.judge({"profile": {"kind": "poisson", "rate": 600}}, ceiling)["verdict"] == "warn"
    assert selfcheck.judge({"profile": {"kind": "poisson", "rate": 600}}, ceiling, refuse=True)["verdict"] == "refuse"
    sweep = {"profile": {"kind": "constant", "rate": 1}, "sweep": {"search": {"max": 4000}}}
    assert selfcheck.judge(sweep, ceiling)["verdict"] == "warn"
    assert selfcheck.judge({"profile": {"kind": "concurrency", "concurrency": 64}}, ceiling)["verdict"] == "ok"


def test_job_runs_the_self_check_and_refuses(monkeypatch):
    monkeypatch.setattr(selfcheck, "measure_ceiling_sync", lambda **_: {"open_loop_ceiling_per_s": 10.0,
                                                                         "closed_loop_per_s": 50.0})
    spec = dict(throughput.SELF_TEST_SPEC, self_check={"enabled": True, "refuse": True})
    ctx = Ctx()
    with pytest.raises(RuntimeError, match="above half"):
        throughput.run(spec, ctx)
    assert ctx.events[0][0] == "self_check" and ctx.events[0][1]["verdict"] == "refuse"


def test_cancellation_stops_the_run():
    from dossier_agent.context import JobCancelled

    spec = dict(throughput.SELF_TEST_SPEC, duration_s=30.0, min_window_s=1.0)
    ctx = Ctx(cancel_after_progress=1)
    with pytest.raises(JobCancelled):
        throughput.run(spec, ctx)


def test_bad_spec_is_a_clear_error():
    with pytest.raises(ValueError, match="invalid throughput spec"):
        throughput.run({"endpoint": {"url": "http://127.0.0.1:9"}, "profile": {"kind": "nope"}}, Ctx())
