"""Configuration: bad environment values stop start-up with a message naming the variable; production is clean."""

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from apps.common.env import (
    env_bool,
    env_choice,
    env_int,
    env_list,
    env_secret,
    env_str,
    env_time_zone,
    env_url,
    parse_database_url,
)
from tests.env_names import ROOT, variables_read_by_dossier

# Variables that configure Dossier; a subprocess starts from the caller's environment without them.
DOSSIER_VARIABLES = variables_read_by_dossier() | {"DJANGO_SETTINGS_MODULE"}

PRODUCTION_VARIABLES = {
    "DEBUG": "false",
    "ALLOWED_HOSTS": "dossier.example.com",
    "CSRF_TRUSTED_ORIGINS": "https://dossier.example.com",
    "DOSSIER_SITE_URL": "https://dossier.example.com",  # absolute links in e-mails (common.W001 without it)
    "SECURE_SSL_REDIRECT": "true",
    "SESSION_COOKIE_SECURE": "true",
    "CSRF_COOKIE_SECURE": "true",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "SECURE_HSTS_PRELOAD": "true",
    "DATABASE_URL": "postgres://dossier:s3cret@db.internal:5432/dossier",
    "CELERY_BROKER_URL": "redis://redis.internal:6379/0",
}


def run_dossier(arguments: list[str], variables: dict[str, str], var_dir: Path) -> subprocess.CompletedProcess:
    """Run Python in a fresh process with only `variables` configuring Dossier (state kept in var_dir)."""
    environment = {name: value for name, value in os.environ.items() if name not in DOSSIER_VARIABLES}
    environment.update({"DJANGO_SETTINGS_MODULE": "config.settings", "DOSSIER_VAR_DIR": str(var_dir)})
    environment.update(variables)
    return subprocess.run(
        [sys.executable, *arguments],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def django_setup(variables: dict[str, str], var_dir: Path) -> subprocess.CompletedProcess:
    return run_dossier(["-c", "import django; django.setup()"], variables, var_dir)


# --- the typed helpers -------------------------------------------------------------------------------------------


def test_env_str_returns_the_value_or_the_default():
    assert env_str("DOSSIER_TIME_ZONE", "UTC", {}) == "UTC"
    assert env_str("DOSSIER_TIME_ZONE", "UTC", {"DOSSIER_TIME_ZONE": "Asia/Jakarta"}) == "Asia/Jakarta"


@pytest.mark.parametrize(
    ("raw", "expected"), [("true", True), ("Yes", True), ("1", True), ("off", False), ("0", False)]
)
def test_env_bool_reads_the_usual_words(raw, expected):
    assert env_bool("DEBUG", not expected, {"DEBUG": raw}) is expected


def test_env_bool_rejects_other_words_naming_the_variable():
    with pytest.raises(ImproperlyConfigured, match=r"^DEBUG must be one of .*'maybe'"):
        env_bool("DEBUG", False, {"DEBUG": "maybe"})


def test_env_int_rejects_a_non_integer_naming_the_variable():
    with pytest.raises(ImproperlyConfigured, match=r"^SECURE_HSTS_SECONDS must be an integer, not '1y'"):
        env_int("SECURE_HSTS_SECONDS", 0, {"SECURE_HSTS_SECONDS": "1y"})


def test_env_int_enforces_its_bounds_naming_the_variable():
    with pytest.raises(ImproperlyConfigured, match=r"^DATABASE_CONN_MAX_AGE must be at least 0, not -5"):
        env_int("DATABASE_CONN_MAX_AGE", 60, {"DATABASE_CONN_MAX_AGE": "-5"}, minimum=0)
    with pytest.raises(ImproperlyConfigured, match=r"^WORKERS must be at most 8, not 9"):
        env_int("WORKERS", 1, {"WORKERS": "9"}, maximum=8)
    assert env_int("WORKERS", 1, {"WORKERS": " 8 "}, maximum=8) == 8


def test_env_list_splits_on_commas_and_rejects_an_empty_list():
    assert env_list("ALLOWED_HOSTS", [], {"ALLOWED_HOSTS": "a.example, b.example,"}) == ["a.example", "b.example"]
    with pytest.raises(ImproperlyConfigured, match=r"^ALLOWED_HOSTS must list at least one"):
        env_list("ALLOWED_HOSTS", ["localhost"], {"ALLOWED_HOSTS": " , "})


def test_env_choice_rejects_a_value_outside_the_choices_naming_the_variable():
    with pytest.raises(ImproperlyConfigured, match=r"^LOG_FORMAT must be one of json, plain, not 'xml'"):
        env_choice("LOG_FORMAT", "plain", {"json", "plain"}, {"LOG_FORMAT": "xml"})


def test_env_time_zone_accepts_iana_names_and_rejects_others_naming_the_variable():
    assert env_time_zone("DOSSIER_TIME_ZONE", "UTC", {"DOSSIER_TIME_ZONE": "Asia/Jakarta"}) == "Asia/Jakarta"
    for bad in ("Mars/Olympus", "", "../etc/passwd"):
        with pytest.raises(ImproperlyConfigured, match=r"^DOSSIER_TIME_ZONE must be an IANA time zone"):
            env_time_zone("DOSSIER_TIME_ZONE", "UTC", {"DOSSIER_TIME_ZONE": bad})


def test_env_url_rejects_an_unknown_scheme_or_a_missing_separator_naming_the_variable():
    schemes = {"filesystem", "redis"}
    assert env_url("CELERY_BROKER_URL", "filesystem://", schemes, {}) == "filesystem://"
    assert env_url("CELERY_BROKER_URL", "", schemes, {"CELERY_BROKER_URL": "redis://:pw@r:6379/1"}).endswith("/1")
    for bad in ("redis//redis:6379/0", "amqp://guest@rabbit//", "redis"):
        with pytest.raises(ImproperlyConfigured, match=r"^CELERY_BROKER_URL must start with one of filesystem://"):
            env_url("CELERY_BROKER_URL", "filesystem://", schemes, {"CELERY_BROKER_URL": bad})


def test_env_secret_reads_the_file_named_by_the_file_variable(tmp_path):
    secret_file = tmp_path / "secret_key"
    secret_file.write_text("from-a-file\n", encoding="utf-8")
    assert env_secret("SECRET_KEY", {"SECRET_KEY_FILE": str(secret_file)}) == "from-a-file"
    assert env_secret("SECRET_KEY", {"SECRET_KEY": "inline"}) == "inline"
    assert env_secret("SECRET_KEY", {}) is None


def test_env_secret_refuses_both_forms_a_missing_file_and_an_empty_file(tmp_path):
    empty = tmp_path / "empty"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(ImproperlyConfigured, match=r"^Set either SECRET_KEY or SECRET_KEY_FILE"):
        env_secret("SECRET_KEY", {"SECRET_KEY": "a", "SECRET_KEY_FILE": str(empty)})
    with pytest.raises(ImproperlyConfigured, match=r"^SECRET_KEY_FILE: cannot read"):
        env_secret("SECRET_KEY", {"SECRET_KEY_FILE": str(tmp_path / "absent")})
    with pytest.raises(ImproperlyConfigured, match=r"^SECRET_KEY_FILE: .* is empty"):
        env_secret("SECRET_KEY", {"SECRET_KEY_FILE": str(empty)})


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://root@localhost/dossier", r"^DATABASE_URL must start with sqlite:// or postgres://"),
        ("localhost:5432", r"^DATABASE_URL must start with sqlite:// or postgres://"),
        ("sqlite://", r"^DATABASE_URL must look like sqlite:////absolute"),
        ("postgres://user@db.internal", r"^DATABASE_URL must look like postgres://"),
        ("postgres://user@db.internal:port/dossier", r"^DATABASE_URL has a port that is not a number"),
    ],
)
def test_parse_database_url_rejects_malformed_urls_naming_the_variable(url, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        parse_database_url("DATABASE_URL", url)


def test_parse_database_url_reads_postgres_with_a_quoted_password():
    database = parse_database_url("DATABASE_URL", "postgres://dossier:p%40ss@db.internal:6543/records?sslmode=require")
    assert database["ENGINE"] == "django.db.backends.postgresql"
    assert (database["USER"], database["PASSWORD"]) == ("dossier", "p@ss")
    assert (database["HOST"], database["PORT"], database["NAME"]) == ("db.internal", "6543", "records")
    assert database["OPTIONS"] == {"sslmode": "require"}


def test_parse_database_url_gives_sqlite_wal_and_a_busy_timeout():
    database = parse_database_url("DATABASE_URL", "sqlite:////srv/dossier/db.sqlite3")
    assert database["NAME"] == "/srv/dossier/db.sqlite3"
    assert "journal_mode=WAL" in database["OPTIONS"]["init_command"]
    assert database["OPTIONS"]["timeout"] > 0


# --- start-up in a fresh process ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variables", "named"),
    [
        ({"DATABASE_URL": "mysql://root@localhost/dossier"}, "DATABASE_URL"),
        ({"DATABASE_URL": "postgres://dossier@db.internal:five/dossier"}, "DATABASE_URL"),
        ({"DOSSIER_WORKER_HEARTBEAT_SECONDS": "fifteen"}, "DOSSIER_WORKER_HEARTBEAT_SECONDS"),
        ({"SECURE_HSTS_SECONDS": "1 year"}, "SECURE_HSTS_SECONDS"),
        ({"DEBUG": "perhaps"}, "DEBUG"),
        ({"DOSSIER_TIME_ZONE": "Mars/Olympus"}, "DOSSIER_TIME_ZONE"),
        ({"CELERY_BROKER_URL": "redis//127.0.0.1:6379/0"}, "CELERY_BROKER_URL"),
        ({"LOG_LEVEL": "LOUD"}, "LOG_LEVEL"),
        ({"ALLOWED_HOSTS": ","}, "ALLOWED_HOSTS"),
    ],
)
def test_a_bad_variable_stops_start_up_naming_it(tmp_path, variables, named):
    result = django_setup(variables, tmp_path)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert re.search(rf"ImproperlyConfigured: {named}\b", result.stderr), result.stderr[-2000:]


def test_manage_py_refuses_to_start_with_a_malformed_database_url(tmp_path):
    result = run_dossier(["manage.py", "check"], {"DATABASE_URL": "postgresql:/missing-host"}, tmp_path)
    assert result.returncode != 0
    assert "DATABASE_URL must look like postgres://" in result.stderr


def test_defaults_start_on_sqlite_in_the_var_folder_with_the_filesystem_broker(tmp_path):
    script = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.DATABASES['default']['NAME']); print(s.CELERY_BROKER_URL); "
        "print(s.CELERY_BROKER_TRANSPORT_OPTIONS['data_folder_in'])"
    )
    result = run_dossier(["-c", script], {}, tmp_path)
    assert result.returncode == 0, result.stderr
    database, broker, queue = result.stdout.split()
    assert Path(database) == tmp_path / "dossier.sqlite3"
    assert broker == "filesystem://"
    assert Path(queue).is_dir()
    assert Path(queue).is_relative_to(tmp_path)


def test_secret_key_file_is_read(tmp_path):
    secret_file = tmp_path / "secret_key_from_docker"
    key = secrets.token_urlsafe(50)
    secret_file.write_text(key + "\n", encoding="utf-8")
    script = "import django; django.setup(); from django.conf import settings; print(settings.SECRET_KEY)"
    result = run_dossier(["-c", script], {"SECRET_KEY_FILE": str(secret_file)}, tmp_path / "var")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == key


def test_without_a_secret_key_one_is_generated_once_and_kept(tmp_path):
    script = "import django; django.setup(); from django.conf import settings; print(settings.SECRET_KEY)"
    first = run_dossier(["-c", script], {}, tmp_path)
    second = run_dossier(["-c", script], {}, tmp_path)
    assert first.returncode == second.returncode == 0
    assert len(first.stdout.strip()) >= 50
    assert first.stdout == second.stdout
    assert (tmp_path / "secret_key").stat().st_mode & 0o077 == 0


def test_check_deploy_is_clean_with_production_variables(tmp_path):
    variables = {**PRODUCTION_VARIABLES, "SECRET_KEY": secrets.token_urlsafe(60)}
    result = run_dossier(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], variables, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_check_deploy_warns_on_the_development_defaults(tmp_path):
    # The counterpart of the test above: the same check does see the insecure one-machine defaults.
    result = run_dossier(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], {}, tmp_path)
    assert result.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016", "common.W001"):
        assert warning in result.stderr


def test_every_variable_dossier_reads_is_documented():
    documented = set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)`", (ROOT / "docs/configuration.md").read_text(), re.M))
    assert variables_read_by_dossier() - documented == set()


# --- which database and broker this run really uses (CI runs the suite once per pair) ------------------------------


@pytest.mark.django_db
def test_the_run_uses_the_database_ci_asked_for():
    expected = os.environ.get("DOSSIER_EXPECT_DB")
    if not expected:
        pytest.skip("DOSSIER_EXPECT_DB is not set: the suite may run on any database")
    assert connection.vendor == expected
    with connection.cursor() as cursor:
        if expected == "postgresql":
            cursor.execute("SELECT version()")
            assert cursor.fetchone()[0].startswith("PostgreSQL")
        else:
            cursor.execute("SELECT sqlite_version()")
            assert cursor.fetchone()[0]


def test_the_run_uses_the_broker_ci_asked_for(settings):
    expected = os.environ.get("DOSSIER_EXPECT_BROKER")
    if not expected:
        pytest.skip("DOSSIER_EXPECT_BROKER is not set: the suite may run with any broker")
    assert settings.CELERY_BROKER_URL.split("://", 1)[0] == expected
