"""Test job whose import fails, like a torch job on a node without torch: it must not be offered."""

import module_that_does_not_exist  # noqa: F401

KIND = "test_broken"


def run(spec, ctx):
    return {}
