"""The CI rule: a skipped test fails the run unless its reason is on tests/skip_allowlist.py."""

import os
import subprocess
import sys
import textwrap

import pytest

from tests.env_names import ROOT
from tests.skip_allowlist import is_allowed

EXAMPLE_TESTS = """
    import os
    import pytest

    def test_passes():
        assert True

    def test_skipped_for_a_listed_reason():
        pytest.skip("DOSSIER_EXPECT_DB is not set: the suite may run on any database")

    @pytest.mark.skipif(os.environ.get("SKIP_UNLISTED") == "1", reason="flaky on Tuesdays")
    def test_skipped_for_an_unlisted_reason():
        assert True
"""


def run_pytest(tmp_path, source: str, **variables: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_example.py").write_text(textwrap.dedent(source), encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    environment = {name: value for name, value in os.environ.items() if name not in {"CI", "SKIP_UNLISTED"}}
    environment.update(variables, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.skip_allowlist",
            "-p",
            "no:django",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            "-c",
            str(tmp_path / "pytest.ini"),
            str(tmp_path),
        ],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_allow_list_matches_reasons_not_substrings_of_other_reasons():
    assert is_allowed("DOSSIER_EXPECT_DB is not set: the suite may run on any database")
    assert not is_allowed("chromium is not installed")
    assert not is_allowed("because DOSSIER_EXPECT_DB is not set")


def test_in_ci_an_unlisted_skip_fails_the_run_and_is_named(tmp_path):
    result = run_pytest(tmp_path, EXAMPLE_TESTS, CI="true", SKIP_UNLISTED="1")
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, result.stdout
    assert "test_skipped_for_an_unlisted_reason: flaky on Tuesdays" in result.stdout
    assert "test_skipped_for_a_listed_reason" not in result.stdout.split("skips not on")[-1]


def test_in_ci_listed_skips_pass(tmp_path):
    result = run_pytest(tmp_path, EXAMPLE_TESTS, CI="true", SKIP_UNLISTED="0")
    assert result.returncode == pytest.ExitCode.OK, result.stdout
    assert "skips not on" not in result.stdout


def test_outside_ci_an_unlisted_skip_is_only_reported(tmp_path):
    result = run_pytest(tmp_path, EXAMPLE_TESTS, SKIP_UNLISTED="1")
    assert result.returncode == pytest.ExitCode.OK, result.stdout
    assert "would fail CI" in result.stdout


def test_in_ci_a_module_skipped_at_collection_fails_the_run(tmp_path):
    source = """
        import pytest

        pytest.importorskip("a_module_that_is_not_installed")

        def test_never_runs():
            assert False
    """
    result = run_pytest(tmp_path, source, CI="true")
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, result.stdout
    assert "a_module_that_is_not_installed" in result.stdout
