"""Job modules: each `<kind>.py` here defines `KIND: str` and `run(spec: dict, ctx) -> dict`.

`run` returning means the result is complete. A job that notices `ctx.cancelled()` and stops early raises
`dossier_agent.context.JobCancelled` (or calls `ctx.raise_if_cancelled()`); any other exception fails the job with
its text. Import heavy dependencies (torch) inside `run`, not at module top: the registry imports every module in
the agent process, which should stay small while idle.

Optional module attributes: `SELF_TEST_SPEC: dict` (the tiny configuration `dossier-agent self-test` runs) and
`REQUIRES: tuple[str, ...]` (modules that must be importable for the kind to be offered, for jobs that import
heavy dependencies such as torch lazily inside `run`).
"""
