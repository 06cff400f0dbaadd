#!/usr/bin/env python
"""Container health checks used by docker-compose.yml.

    python scripts/healthcheck.py web   # /healthz answers and the web process reaches its database and broker
    python scripts/healthcheck.py beat  # the worker heartbeat that beat schedules is fresh

Exit status 0 means healthy. (The worker's own check is `celery inspect ping`, see docker-compose.yml.)
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_URL = "http://127.0.0.1:8000/healthz"


def host_header(allowed_hosts: str) -> str:
    """A Host header that ALLOWED_HOSTS accepts (the container is reached as 127.0.0.1, which it may not list)."""
    for host in (item.strip() for item in allowed_hosts.split(",")):
        if not host or host == "*":
            continue
        return f"healthcheck{host}" if host.startswith(".") else host
    return "localhost"


def web_is_healthy(url: str = DEFAULT_URL) -> tuple[bool, str]:
    request = urllib.request.Request(  # noqa: S310 - the URL is this container's own, given by the caller
        url,
        # The TLS proxy sets X-Forwarded-Proto in production; without it SECURE_SSL_REDIRECT would answer 301.
        headers={"Host": host_header(os.environ.get("ALLOWED_HOSTS", "")), "X-Forwarded-Proto": "https"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            body = response.read()
    except urllib.error.HTTPError as error:
        body = error.read()  # a 503 still lists which checks failed
    except OSError as error:
        return False, f"no answer from {url}: {error}"
    try:
        # The names of the failing parts are public; each part's detail is not (DOSSIER_HEALTH_TOKEN).
        reported = json.loads(body)["failing"]
    except (ValueError, KeyError, TypeError):
        return False, f"{url} did not answer with the health report"
    # The web container is healthy when its own dependencies answer; a missing worker is the worker's failure.
    failing = [name for name in ("database", "broker") if name in reported]
    if failing:
        return False, "failing: " + ", ".join(failing)
    return True, "database and broker answer"


def beat_is_healthy() -> tuple[bool, str]:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    from django.apps import apps

    if not apps.ready:
        django.setup()
    from apps.common.health import check_worker

    result = check_worker()
    return result.ok, result.detail


def main(arguments: list[str]) -> int:
    if len(arguments) not in (1, 2) or arguments[0] not in ("web", "beat"):
        print(__doc__, file=sys.stderr)
        return 2
    if arguments[0] == "web":
        healthy, detail = web_is_healthy(*arguments[1:])
    else:
        healthy, detail = beat_is_healthy()
    print(detail)
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
