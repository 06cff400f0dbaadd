from django.http import JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache

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
