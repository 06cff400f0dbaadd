"""English by default, as in the comparison tests."""

from apps.comparison.tests.conftest import _english  # noqa: F401
