"""The actuals tests build accepted records on the comparison tests' worked example, English by default."""

from apps.comparison.tests.conftest import _english  # noqa: F401
