"""Not a job: shared code of several jobs (no KIND), which the registry skips."""


def double(value):
    return 2 * value
