"""Capacity at the SLO: the mock serves with c parallel slots and a fixed service time S, so the true capacity is
c/S; with an end-to-end limit of 2·S, every rate up to c/S meets it (no queue) and any rate above it builds a queue
that breaks it. The sweep (geometric steps, then bisection) must find c/S within 10 %, for two configurations."""

import asyncio

import pytest
from dossier_agent.contract.load_spec import LoadSpec
from dossier_agent.loadgen.selfcheck import MockProcess
from dossier_agent.loadgen.sweep import run_sweep

# Send-lag validity has its own tests; here the limit only guards against a client so starved by a busy shared machine
# that its levels mean nothing (latency is timed from the actual send, so lag does not move the knee).
SEND_LAG_LIMIT_S = 1.0


@pytest.mark.parametrize(("slots", "service_s"), [(4, 0.020), (2, 0.050)])
def test_sweep_finds_capacity_at_the_slo(slots, service_s):
    true_capacity = slots / service_s
    with MockProcess(f"--slots={slots}", f"--service-ms={service_s * 1000}") as mock:
        base = LoadSpec.from_dict({
            "endpoint": {"url": mock.url, "api": "chat"}, "profile": {"kind": "constant", "rate": 1},
            "duration_s": 1.0, "warmup_s": 0.2, "cooldown_s": 0.0, "min_window_s": 0.5, "output_tokens": 2,
            "prompts": {"synthetic": {"input_tokens_mean": 8}}, "calibrate": False,
            "slo": {"e2e_max_s": 2 * service_s, "target": 0.9}, "send_lag_p99_limit_s": SEND_LAG_LIMIT_S,
            "timeout_s": 5.0,
        })
        sweep = asyncio.run(run_sweep(base, {"key": "rate", "search": {
            "start": true_capacity / 3, "factor": 2, "max": true_capacity * 4, "tolerance": 0.06, "max_levels": 10}}))
    capacity = sweep["capacity"]["capacity"]
    assert sweep["stopped"] is None, sweep["stopped"]
    assert capacity == pytest.approx(true_capacity, rel=0.10), (capacity, true_capacity, sweep["points"])
    assert sweep["capacity"]["bracketed"]
    failing = sweep["capacity"]["first_failing"]
    assert failing > capacity and failing <= true_capacity * 1.25
    assert all(point["valid"] for point in sweep["points"])
