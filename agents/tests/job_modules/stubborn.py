"""Test job: sleeps `seconds` and ignores cancellation."""

import time

KIND = "test_stubborn"


def run(spec, ctx):
    ctx.log("ignoring cancellation on purpose")
    time.sleep(float(spec.get("seconds", 1.0)))
    return {"done": True, "cancelled_seen": ctx.cancelled()}
