import hmac

from django.conf import settings
from django.http import JsonResponse
from django.shortcuts import render
from django.views import defaults
from django.views.decorators.cache import never_cache
from rest_framework.exceptions import NotFound

from apps.accounts.decorators import login_not_required
from apps.common.health import run_checks

HEALTH_TOKEN_HEADER = "X-Dossier-Health-Token"  # noqa: S105 (a header name, not a secret)


def may_read_health_details(request) -> bool:
    """Staff and superusers signed in, or a caller sending DOSSIER_HEALTH_TOKEN in the X-Dossier-Health-Token header.

    The details name the database engine, the broker's transport and the errors (host names included): nothing for
    an anonymous caller, who gets the status and the names of the failing parts only.
    """
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated and user.is_active and (user.is_staff or user.is_superuser):
        return True
    expected = getattr(settings, "DOSSIER_HEALTH_TOKEN", None)
    sent = request.headers.get(HEALTH_TOKEN_HEADER)
    return bool(expected and sent and hmac.compare_digest(sent.encode(), expected.encode()))


@never_cache
@login_not_required
def healthz(request):
    """200 when the database, the broker and a worker are all fine; 503 naming every failing part.

    Each check's detail only for staff or the health token (`may_read_health_details`).
    """
    results = run_checks()
    failing = [result.name for result in results if not result.ok]
    body = {"status": "ok" if not failing else "failing", "failing": failing}
    if may_read_health_details(request):
        body["checks"] = {result.name: {"ok": result.ok, "detail": result.detail} for result in results}
    return JsonResponse(body, status=200 if not failing else 503)


def home(request):
    return render(request, "home.html")


#: The user API's prefix (config/urls.py): a URL under it that matches no route still answers in the API's shape.
USER_API_PREFIX = "/api/v1/"


def not_found(request, exception):
    """settings handler404: under the user API a `{"detail": "Not found."}` JSON body, as DRF answers a missing object
    (docs/api.md; an id that no route takes, such as /api/v1/comparisons/-1/); elsewhere the 404 page."""
    if request.path.startswith(USER_API_PREFIX):
        return JsonResponse({"detail": str(NotFound.default_detail)}, status=404)
    return defaults.page_not_found(request, exception)
