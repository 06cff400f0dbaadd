"""The decision-record tests use the comparison tests' fixtures: the worked example, English by default."""

from apps.comparison.tests.conftest import _english, example  # noqa: F401
