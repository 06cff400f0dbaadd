from django.http import JsonResponse
from django.shortcuts import render
from django.views import defaults
from django.views.decorators.cache import never_cache
from rest_framework.exceptions import NotFound

from apps.accounts.decorators import login_not_required
from apps.common.health import run_checks


@never_cache
@login_not_required
def healthz(request):
    """200 when the database, the broker and a worker are all fine; 503 naming every failing part."""
    results = run_checks()
    failing = [result.name for result in results if not result.ok]
    body = {
        "status": "ok" if not failing else "failing",
        "failing": failing,
        "checks": {result.name: {"ok": result.ok, "detail": result.detail} for result in results},
    }
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
