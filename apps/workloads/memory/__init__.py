"""Memory-fit estimator, moving from one module into sub-modules; this re-export lasts until the importers follow."""

from apps.workloads.memory.shapes import *  # noqa: F403
