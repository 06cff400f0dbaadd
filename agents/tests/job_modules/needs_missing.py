"""Test job that imports its heavy dependency lazily and declares it in REQUIRES."""

KIND = "test_needs_missing"
REQUIRES = ("another_module_that_does_not_exist",)


def run(spec, ctx):
    import another_module_that_does_not_exist  # noqa: F401

    return {}
