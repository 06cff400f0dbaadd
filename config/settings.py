"""Dossier settings: one module, driven by environment variables (see docs/configuration.md).

Defaults give the one-machine setup: SQLite in var/ and Celery on kombu's filesystem transport in var/.
Production sets DATABASE_URL (PostgreSQL) and CELERY_BROKER_URL (Redis), see docker-compose.yml.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from datetime import timedelta
from pathlib import Path

from csp.constants import NONE, SELF, UNSAFE_INLINE
from django.utils.translation import gettext_lazy as _

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

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("DOSSIER_VAR_DIR", str(BASE_DIR / "var"))).resolve()
VAR_DIR.mkdir(parents=True, exist_ok=True)


def _secret_key() -> str:
    """SECRET_KEY / SECRET_KEY_FILE, else one generated once and kept in var/ (one-machine default)."""
    configured = env_secret("SECRET_KEY")
    if configured:
        return configured
    key_file = VAR_DIR / "secret_key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(50), encoding="utf-8")
        key_file.chmod(0o600)
    return key_file.read_text(encoding="utf-8").strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", ["http://127.0.0.1:8000", "http://localhost:8000"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "axes",  # login throttling (AXES_* below)
    "csp",  # Content-Security-Policy header (CONTENT_SECURITY_POLICY below)
    "apps.common",
    "apps.accounts",
    "apps.audit",
    "apps.catalog",
    "apps.workloads",
    "apps.quotes",
    "apps.evidence",
    "apps.fleet",
    "apps.benchmarks",
    "apps.agent_api",
    "apps.comparison",
    "apps.budgets",
    "apps.decisions",
    "apps.actuals",  # top layer: planned against actual, beside a decision record
    "apps.teams",  # top layer: team administration (people, roles, pools)
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "apps.audit.middleware.RequestIdMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "apps.accounts.language.UserLanguageMiddleware",  # a signed-in user's own language, over the cookie's
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "apps.accounts.middleware.RoleRequiredMiddleware",
    "apps.accounts.middleware.ActiveTeamMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes asks: turns a lockout raised during authenticate() into the 429 answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "apps.accounts.context_processors.navigation",
                "apps.decisions.context_processors.sign_off",
            ],
        },
    },
]

DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'dossier.sqlite3'}")
DATABASES = {"default": parse_database_url("DATABASE_URL", DATABASE_URL)}
# Persistent connections on both engines: opening SQLite (WAL pragmas) or PostgreSQL per request costs more than the
# heartbeat it serves. Django closes a connection after an error or once it is older than this.
DATABASES["default"]["CONN_MAX_AGE"] = env_int("DATABASE_CONN_MAX_AGE", 60, minimum=0)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # Tests on SQLite use a file, not memory, so the end-to-end tests' Celery worker (another process) can open the
    # live test server's database. One file per test run (the process id) in the system's temporary folder.
    DATABASES["default"]["TEST"] = {"NAME": str(Path(tempfile.gettempdir()) / f"dossier-test-{os.getpid()}.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The database cache is shared by the web server and the worker on both databases (worker heartbeat, throttles).
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.db.DatabaseCache",
        "LOCATION": "dossier_cache",
    }
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# django-axes first: it refuses a locked-out account before the password is checked, and counts the failures.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Login throttling (docs/configuration.md, "Login throttling"): after AXES_FAILURE_LIMIT wrong passwords, further
# attempts are refused (429) for AXES_COOLOFF_TIME even with the right password, on /accounts/login/ and /admin/login/
# alike. Unlock early with `manage.py axes_reset_username <name>` (or axes_reset_ip, axes_reset).
LOGIN_LOCKOUT_PARAMETERS = {
    # an account from one address: no office (or proxy) address is locked for everyone by one person's typos
    "account-and-address": [["username", "ip_address"]],
    # an account from anywhere: stops guessing spread over many addresses, at the price of letting anyone lock it
    "account": ["username"],
    # either: an account from anywhere, and an address whatever the account
    "account-or-address": ["username", "ip_address"],
}
AXES_LOCKOUT_PARAMETERS = LOGIN_LOCKOUT_PARAMETERS[
    env_choice("DOSSIER_LOGIN_LOCKOUT", "account-and-address", set(LOGIN_LOCKOUT_PARAMETERS))
]
AXES_FAILURE_LIMIT = env_int("DOSSIER_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("DOSSIER_LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_RESET_ON_SUCCESS = True  # a successful login clears that account's (and address's) failures
AXES_HTTP_RESPONSE_CODE = 429
AXES_SENSITIVE_PARAMETERS = ["password"]

LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "accounts:login"

LANGUAGE_CODE = "en"
LANGUAGES = [("en", _("English")), ("fr", _("French")), ("id", _("Indonesian"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
USE_I18N = True
TIME_ZONE = env_time_zone("DOSSIER_TIME_ZONE", "UTC")
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("DOSSIER_STATIC_ROOT", str(VAR_DIR / "staticfiles")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns on every request while it is missing


def _plotly_js_folder() -> str:
    """plotly.min.js ships inside the plotly package: serve that copy (no CDN, no second copy in the repo)."""
    import plotly

    return str(Path(plotly.__file__).resolve().parent / "package_data")


STATICFILES_DIRS = [BASE_DIR / "static", ("vendor/plotly", _plotly_js_folder())]
MEDIA_ROOT = Path(env_str("DOSSIER_MEDIA_ROOT", str(VAR_DIR / "media")))
MEDIA_URL = "media/"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    # Raw benchmark data uploaded by agents, content-addressed; object storage by naming another backend.
    "artifacts": {
        "BACKEND": env_str("DOSSIER_ARTIFACT_STORAGE_BACKEND", "django.core.files.storage.FileSystemStorage"),
        "OPTIONS": {"location": str(MEDIA_ROOT / "artifacts")},
    },
}
WHITENOISE_USE_FINDERS = True

# Security: safe behind a TLS-terminating proxy in production; DEBUG=true turns the strict parts off locally.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
# Content-Security-Policy (django-csp; docs/configuration.md, "Content-Security-Policy"). Scripts only from this
# server: every template loads its scripts as files (no inline script, no inline handler; charts read their figure
# from a `json_script` element, which is data), and neither plotly.js 4 nor htmx needs 'unsafe-eval' here (htmx's
# eval serves only hx-on / js: attributes, which the templates do not use). Styles need 'unsafe-inline': plotly.js
# inserts <style> elements when it loads and sets style attributes on its SVG text, and the admin site and Swagger UI
# use style attributes. img-src takes data: and blob: for plotly's "download as PNG" and Swagger UI's icons.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF, UNSAFE_INLINE],
        "img-src": [SELF, "data:", "blob:"],
        "font-src": [SELF, "data:"],
        "connect-src": [SELF],
        "worker-src": [SELF, "blob:"],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

# The address people open Dossier at, e.g. https://dossier.example.com: links in e-mails are made absolute with it
# (apps/common/site.py). Unset: the links are paths only, and `check --deploy` warns (common.W001).
DOSSIER_SITE_URL = (
    env_url("DOSSIER_SITE_URL", "", {"http", "https"}).rstrip("/") if env_str("DOSSIER_SITE_URL", "") else ""
)
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "dossier@localhost")
# Read by django.core.mail.backends.smtp.EmailBackend (decision-record notifications) when EMAIL_BACKEND names it.
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1, maximum=65535)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_secret("EMAIL_HOST_PASSWORD") or ""
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10, minimum=1)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "apps.accounts.api_keys.ApiKeyAuthentication",  # `Token <key>`, stored hashed
    ],
    "DEFAULT_PERMISSION_CLASSES": ["apps.accounts.permissions.HasAnyRole"],
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    # The error answers each operation can give are part of its schema (apps/common/api_schema.py).
    "DEFAULT_SCHEMA_CLASS": "apps.common.api_schema.AutoSchema",
    "COERCE_DECIMAL_TO_STRING": True,
    # A service's ValidationError is a 400 in DRF's field-error shape, a Conflict a 409 (docs/api.md).
    "EXCEPTION_HANDLER": "apps.common.api_errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Dossier API",
    "DESCRIPTION": (
        "GPU procurement decision records: workloads, quotes, agents, benchmarks and decisions.\n\n"
        'Errors: a 400 has the field-error shape `{"field": ["message"], "non_field_errors": ["message"]}`, '
        "whether the input or the change was refused; 401, 403, 404 and 409 (the object's state does not allow the "
        'step) are `{"detail": "message"}`. See docs/api.md.'
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["apps.accounts.permissions.HasAnyRole"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # Swagger UI would otherwise send the schema URL to validator.swagger.io for a badge: no calls out at run time.
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # One name per shared choice set, so the schema does not invent FromCurrencyEnum/ToCurrencyEnum twins.
    "ENUM_NAME_OVERRIDES": {
        "CurrencyEnum": "apps.quotes.models.CURRENCY_CHOICES",
        "GpuSpecKeyEnum": "apps.catalog.models.SpecKey",
        "GpuSpecUnitEnum": "apps.catalog.models.SpecUnit",
        "FormFactorEnum": "apps.catalog.models.FormFactor",
        "DecisionRecordStatusEnum": "apps.decisions.models.RecordStatus",
        "ChecklistAnswerStatusEnum": "apps.quotes.models.AnswerStatus",
    },
}

# Agents and benchmark jobs (docs/agent-protocol.md): versions, intervals, leases, limits, retention.
DOSSIER_MIN_AGENT_VERSION = env_str("DOSSIER_MIN_AGENT_VERSION", "0.1.0")
DOSSIER_AGENT_HEARTBEAT_INTERVAL_S = env_int("DOSSIER_AGENT_HEARTBEAT_INTERVAL_S", 30, minimum=1)
DOSSIER_AGENT_CLAIM_INTERVAL_S = env_int("DOSSIER_AGENT_CLAIM_INTERVAL_S", 10, minimum=1)
DOSSIER_AGENT_OFFLINE_AFTER_S = env_int("DOSSIER_AGENT_OFFLINE_AFTER_S", 90, minimum=2)
DOSSIER_JOB_CLAIM_LEASE_S = env_int("DOSSIER_JOB_CLAIM_LEASE_S", 60, minimum=2)
DOSSIER_JOB_LEASE_TTL_S = env_int("DOSSIER_JOB_LEASE_TTL_S", 90, minimum=2)
DOSSIER_JOB_LEASE_RENEW_S = env_int("DOSSIER_JOB_LEASE_RENEW_S", 30, minimum=1)
DOSSIER_JOB_MAX_ATTEMPTS = env_int("DOSSIER_JOB_MAX_ATTEMPTS", 3, minimum=1, maximum=20)
# Job groups (multi-node all-reduce): the rendezvous ports handed out, and how often a waiting rank asks.
DOSSIER_GROUP_PORT_MIN = env_int("DOSSIER_GROUP_PORT_MIN", 29500, minimum=1024, maximum=65535)
DOSSIER_GROUP_PORT_MAX = env_int("DOSSIER_GROUP_PORT_MAX", 29999, minimum=DOSSIER_GROUP_PORT_MIN, maximum=65535)
DOSSIER_GROUP_POLL_S = env_int("DOSSIER_GROUP_POLL_S", 2, minimum=1, maximum=60)
DOSSIER_AGENT_MAX_BODY_BYTES = env_int("DOSSIER_AGENT_MAX_BODY_BYTES", 1024 * 1024, minimum=64 * 1024)
DOSSIER_AGENT_MAX_EVENTS_PER_BATCH = env_int("DOSSIER_AGENT_MAX_EVENTS_PER_BATCH", 500, minimum=1)
DOSSIER_ARTIFACT_MAX_BYTES = env_int("DOSSIER_ARTIFACT_MAX_BYTES", 256 * 1024 * 1024, minimum=1)
DOSSIER_JOB_ARTIFACT_MAX_BYTES = env_int("DOSSIER_JOB_ARTIFACT_MAX_BYTES", 2 * 1024 * 1024 * 1024, minimum=1)
DOSSIER_ARTIFACT_RETENTION_DAYS = env_int("DOSSIER_ARTIFACT_RETENTION_DAYS", 365, minimum=0)  # 0: keep forever
DOSSIER_REAPER_INTERVAL_S = env_int("DOSSIER_REAPER_INTERVAL_S", 15, minimum=1)
DOSSIER_REDRIVE_INTERVAL_S = env_int("DOSSIER_REDRIVE_INTERVAL_S", 60, minimum=1)
DOSSIER_REDRIVE_AFTER_S = env_int("DOSSIER_REDRIVE_AFTER_S", 60, minimum=0)

# Celery: the database is the source of truth, the queue only carries nudges (DESIGN.md, "Celery").
CELERY_BROKER_URL = env_url("CELERY_BROKER_URL", "filesystem://", {"filesystem", "redis", "rediss"})
BROKER_DIR = VAR_DIR / "broker"
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "control_folder": str(BROKER_DIR / "control"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "store_processed": False,
    }
    if CELERY_BROKER_URL.startswith("filesystem")
    else {"visibility_timeout": 3600}
)
if CELERY_BROKER_URL.startswith("filesystem"):
    for _folder in ("queue", "control", "processed"):
        (BROKER_DIR / _folder).mkdir(parents=True, exist_ok=True)
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
WORKER_HEARTBEAT_SECONDS = env_int("DOSSIER_WORKER_HEARTBEAT_SECONDS", 15, minimum=1)
WORKER_HEARTBEAT_MAX_AGE_SECONDS = env_int("DOSSIER_WORKER_HEARTBEAT_MAX_AGE_SECONDS", 90, minimum=5)
# Periodic tasks; each app adds its own entry here (one place to read the whole schedule).
CELERY_BEAT_SCHEDULE = {
    "worker-heartbeat": {"task": "common.worker_heartbeat", "schedule": WORKER_HEARTBEAT_SECONDS},
    "reap-expired-leases": {"task": "benchmarks.reap_expired_leases", "schedule": DOSSIER_REAPER_INTERVAL_S},
    "redrive-pending": {"task": "benchmarks.redrive_pending", "schedule": DOSSIER_REDRIVE_INTERVAL_S},
    "purge-expired-artifacts": {"task": "benchmarks.purge_expired_artifacts", "schedule": 6 * 3600},
    "flag-stale-prices": {"task": "quotes.flag_stale_prices", "schedule": 3600},
    "flag-records-for-revisit": {"task": "decisions.flag_records_for_revisit", "schedule": 3600},
}

# /healthz shows each check's detail (database engine, broker, errors) to staff and to callers sending this value in
# the X-Dossier-Health-Token header; everyone else gets the status only (docs/configuration.md).
DOSSIER_HEALTH_TOKEN = env_secret("DOSSIER_HEALTH_TOKEN")

LOG_LEVELS = {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_choice("LOG_LEVEL", "INFO", LOG_LEVELS)},
    "loggers": {"django.db.backends": {"level": "INFO"}},
}
