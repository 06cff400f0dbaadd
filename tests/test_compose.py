"""The production shape (docker-compose.yml, Dockerfile) matches what the settings read. Docker cannot run here."""

import importlib.util
import os
import re
import secrets
import shlex
import subprocess
import sys

import pytest
import yaml

from apps.common.health import record_worker_heartbeat
from tests.env_names import ROOT, variables_read_by_dossier

COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
SERVICES = COMPOSE["services"]
DOSSIER_SERVICES = ("web", "worker", "beat")
REQUIRED_VARIABLES = {"DATABASE_URL", "CELERY_BROKER_URL", "ALLOWED_HOSTS"}
# What an operator puts in .env (docs/configuration.md); used to interpolate the file as `docker compose` would.
OPERATOR_ENV = {"DOSSIER_HOSTNAME": "dossier.example.com", "POSTGRES_PASSWORD": "a-long-random-password"}

# ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?error}, ${NAME?error}, and $$ for a literal dollar.
INTERPOLATION = re.compile(r"\$\$|\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<operator>:?[-?])(?P<argument>[^}]*))?\}")


class MissingVariable(Exception):
    pass


def interpolate(value: str, operator_env: dict[str, str]) -> str:
    def replace(match: re.Match) -> str:
        if match.group(0) == "$$":
            return "$"
        name, operator, argument = match.group("name", "operator", "argument")
        operator = operator or ""
        present = name in operator_env and (operator_env[name] != "" or not operator.startswith(":"))
        if present:
            return operator_env[name]
        if operator.endswith("?"):
            raise MissingVariable(f"{name}: {argument}")
        return argument if operator.endswith("-") else ""

    return INTERPOLATION.sub(replace, value)


def environment_of(service: str) -> dict[str, str]:
    environment = SERVICES[service].get("environment") or {}
    if isinstance(environment, list):
        environment = dict(item.split("=", 1) for item in environment)
    return {name: str(value) for name, value in environment.items()}


def command_of(service: str) -> list[str]:
    command = SERVICES[service].get("command", "")
    return shlex.split(command) if isinstance(command, str) else list(command)


def test_the_five_services_exist():
    assert {"web", "worker", "beat", "postgres", "redis"} <= set(SERVICES)


@pytest.mark.parametrize("service", ["web", "worker", "beat", "postgres", "redis"])
def test_every_service_has_a_healthcheck_and_a_volume(service):
    definition = SERVICES[service]
    healthcheck = definition.get("healthcheck") or {}
    assert not healthcheck.get("disable", False)
    assert healthcheck.get("test"), f"{service} has no healthcheck test"
    assert healthcheck["test"][0] in ("CMD", "CMD-SHELL")
    volumes = definition.get("volumes") or []
    assert volumes, f"{service} has no volume"
    for volume in volumes:
        source = volume.split(":", 1)[0]
        if not source.startswith((".", "/")):
            assert source in (COMPOSE.get("volumes") or {}), f"named volume {source} is not declared"


@pytest.mark.parametrize("service", DOSSIER_SERVICES)
def test_every_variable_a_dossier_service_sets_is_read_by_the_settings(service):
    unknown = set(environment_of(service)) - variables_read_by_dossier()
    assert unknown == set(), f"{service} sets variables nothing reads: {sorted(unknown)}"


@pytest.mark.parametrize("service", DOSSIER_SERVICES)
def test_every_dossier_service_sets_the_required_variables(service):
    environment = environment_of(service)
    assert set(environment) >= REQUIRED_VARIABLES
    assert {"SECRET_KEY", "SECRET_KEY_FILE"} & set(environment)
    assert interpolate(environment["DATABASE_URL"], OPERATOR_ENV).startswith("postgres://")
    assert "@postgres:5432/" in environment["DATABASE_URL"]
    assert environment["CELERY_BROKER_URL"].startswith("redis://redis:6379/")


@pytest.mark.parametrize("service", DOSSIER_SERVICES)
def test_the_secret_key_file_is_a_declared_compose_secret(service):
    secret_path = environment_of(service)["SECRET_KEY_FILE"]
    name = secret_path.removeprefix("/run/secrets/")
    assert secret_path == f"/run/secrets/{name}"
    assert name in SERVICES[service]["secrets"]
    assert "file" in COMPOSE["secrets"][name]


def test_the_database_url_matches_the_postgres_service():
    postgres = SERVICES["postgres"]["environment"]
    url = interpolate(environment_of("web")["DATABASE_URL"], OPERATOR_ENV)
    expected = f"postgres://{postgres['POSTGRES_USER']}:{OPERATOR_ENV['POSTGRES_PASSWORD']}@postgres:5432/"
    assert url == expected + postgres["POSTGRES_DB"]


def test_compose_refuses_to_start_without_the_operator_values():
    for missing in OPERATOR_ENV:
        incomplete = {name: value for name, value in OPERATOR_ENV.items() if name != missing}
        with pytest.raises(MissingVariable, match=missing):
            for service in DOSSIER_SERVICES:
                for value in environment_of(service).values():
                    interpolate(value, incomplete)


def test_the_processes_are_gunicorn_one_worker_kind_and_one_beat():
    web = " ".join(command_of("web"))
    assert "gunicorn config.wsgi" in web
    assert "--worker-class gthread" in web
    assert "manage.py migrate" in web
    assert command_of("worker")[:4] == ["celery", "-A", "config", "worker"]
    assert "-B" not in command_of("worker") and "--beat" not in command_of("worker")
    assert command_of("beat")[:4] == ["celery", "-A", "config", "beat"]


def test_services_wait_for_healthy_dependencies():
    for name, definition in SERVICES.items():
        for dependency, condition in (definition.get("depends_on") or {}).items():
            assert dependency in SERVICES
            assert condition["condition"] == "service_healthy", f"{name} → {dependency}"
    assert set(SERVICES["web"]["depends_on"]) == {"postgres", "redis"}


def test_the_compose_environment_passes_check_deploy(tmp_path):
    secret_file = tmp_path / "secret_key"
    secret_file.write_text(secrets.token_urlsafe(50), encoding="utf-8")
    compose_environment = {name: interpolate(value, OPERATOR_ENV) for name, value in environment_of("web").items()}
    compose_environment.update(
        {
            "SECRET_KEY_FILE": str(secret_file),
            "DOSSIER_VAR_DIR": str(tmp_path / "data"),
            "DOSSIER_MEDIA_ROOT": str(tmp_path / "data/media"),
            "DJANGO_SETTINGS_MODULE": "config.settings",
        }
    )
    inherited = {name: value for name, value in os.environ.items() if name not in variables_read_by_dossier()}
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env={**inherited, **compose_environment},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


# --- the image -----------------------------------------------------------------------------------------------------

DOCKERFILE = (ROOT / "Dockerfile").read_text(encoding="utf-8")
# Variables of the Python runtime, pip and Django itself, which the image may set besides Dossier's own.
RUNTIME_VARIABLES = {"PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PIP_NO_CACHE_DIR", "PIP_DISABLE_PIP_VERSION_CHECK"}


def dockerfile_instructions() -> list[tuple[str, str]]:
    joined = re.sub(r"\\\n", " ", DOCKERFILE)
    lines = [line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def test_the_image_is_python_311_slim_and_runs_as_a_user_that_is_not_root():
    instructions = dockerfile_instructions()
    assert instructions[0] == ("FROM", "python:3.11-slim")
    users = [argument for keyword, argument in instructions if keyword == "USER"]
    assert users and users[-1] not in ("root", "0")


def test_the_image_installs_the_server_pins_and_collects_static_files():
    runs = " ".join(argument for keyword, argument in dockerfile_instructions() if keyword == "RUN")
    assert "['project']['dependencies']" in runs and "pip install -r" in runs
    assert "[dev]" not in runs  # no torch or test tools in production
    assert "manage.py collectstatic --noinput" in runs


def test_the_image_sets_only_variables_that_something_reads():
    names = set()
    for keyword, argument in dockerfile_instructions():
        if keyword == "ENV":
            names.update(re.findall(r"([A-Z][A-Z0-9_]*)=", argument))
    assert names
    assert names - variables_read_by_dossier() - RUNTIME_VARIABLES - {"DJANGO_SETTINGS_MODULE"} == set()


def test_the_build_context_keeps_what_the_image_runs_and_leaves_out_local_state():
    ignored = {
        line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines() if line and not line.startswith("#")
    }
    assert {".git", ".venv", "var", ".env", "secrets"} <= ignored
    for needed in ("scripts", "apps", "config", "templates", "static", "manage.py", "pyproject.toml", "agents"):
        assert needed not in ignored


# --- the health-check script the containers run ----------------------------------------------------------------------


def load_healthcheck_script():
    spec = importlib.util.spec_from_file_location("dossier_healthcheck", ROOT / "scripts/healthcheck.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_healthcheck_script_the_compose_file_runs_exists():
    for definition in SERVICES.values():
        test = definition["healthcheck"]["test"]
        if test[:3] == ["CMD", "python", "scripts/healthcheck.py"]:
            assert (ROOT / test[2]).is_file()


def test_the_web_healthcheck_needs_the_database_and_broker_and_sends_an_allowed_host(live_server, monkeypatch):
    healthcheck = load_healthcheck_script()
    monkeypatch.setenv("ALLOWED_HOSTS", "localhost,dossier.example.com")
    assert healthcheck.host_header("*,.example.com") == "healthcheck.example.com"
    healthy, detail = healthcheck.web_is_healthy(f"{live_server.url}/healthz")
    assert healthy, detail  # no worker heartbeat here: that is the worker's check, not the web container's
    healthy, detail = healthcheck.web_is_healthy("http://127.0.0.1:1/healthz")
    assert not healthy
    assert "no answer" in detail


@pytest.mark.django_db
def test_the_beat_healthcheck_follows_the_worker_heartbeat():
    healthcheck = load_healthcheck_script()
    healthy, detail = healthcheck.beat_is_healthy()
    assert not healthy
    assert "no worker heartbeat" in detail
    record_worker_heartbeat()
    assert healthcheck.beat_is_healthy()[0]
