"""Test job: raises, or exits the process hard (`mode: crash`), or returns a value that is not a dict."""

import os

KIND = "test_failing"


def run(spec, ctx):
    mode = spec.get("mode", "raise")
    ctx.log("about to fail", mode=mode)
    if mode == "crash":
        os._exit(7)
    if mode == "not_a_dict":
        return [1, 2, 3]
    if mode == "bad_event":
        ctx.event("Bad Kind!", {})
    raise RuntimeError("the device fell over")
