"""Test job: waits `seconds`, checking for cancellation; stops early with JobCancelled."""

import time

from dossier_agent.context import JobCancelled

KIND = "test_sleeper"
SELF_TEST_SPEC = {"seconds": 0.1}


def run(spec, ctx):
    deadline = time.monotonic() + float(spec.get("seconds", 1.0))
    ctx.progress(0.0, "sleeping")
    while time.monotonic() < deadline:
        if ctx.cancelled():
            ctx.log("noticed cancellation", level="warning")
            raise JobCancelled("stopped early")
        time.sleep(0.05)
    ctx.progress(1.0, "awake")
    return {"slept_s": spec.get("seconds", 1.0)}
