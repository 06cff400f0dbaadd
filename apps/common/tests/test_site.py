"""Absolute links for e-mails: DOSSIER_SITE_URL read and checked by the settings, joined to a path, and the
`check --deploy` warning when it is unset."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from apps.common.site import absolute_url, site_url_check

ROOT = Path(__file__).resolve().parents[3]


def test_a_path_goes_on_the_site_url_once_whatever_the_trailing_slash(settings):
    settings.DOSSIER_SITE_URL = "https://dossier.example.com/"
    assert absolute_url("/decisions/records/7/") == "https://dossier.example.com/decisions/records/7/"
    settings.DOSSIER_SITE_URL = "https://example.com/dossier"
    assert absolute_url("/decisions/records/7/") == "https://example.com/dossier/decisions/records/7/"


def test_without_a_site_url_the_path_stays_a_path(settings):
    settings.DOSSIER_SITE_URL = ""
    assert absolute_url("/decisions/records/7/") == "/decisions/records/7/"


def test_only_a_path_is_accepted():
    with pytest.raises(ValueError, match="starting with /"):
        absolute_url("decisions/records/7/")


def test_check_deploy_warns_while_the_site_url_is_unset(settings):
    settings.DOSSIER_SITE_URL = ""
    assert [warning.id for warning in site_url_check()] == ["common.W001"]
    settings.DOSSIER_SITE_URL = "https://dossier.example.com"
    assert site_url_check() == []


def _settings_value(value: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DOSSIER_SITE_URL": value}
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); from django.conf import settings; "
         "print(settings.DOSSIER_SITE_URL)"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )


def test_the_settings_read_the_site_url_and_refuse_one_without_http_or_https():
    read = _settings_value("https://dossier.example.com/")
    assert read.returncode == 0, read.stderr
    assert read.stdout.strip() == "https://dossier.example.com"
    refused = _settings_value("dossier.example.com")
    assert refused.returncode != 0 and "DOSSIER_SITE_URL must start with one of http://, https://" in refused.stderr
