"""URL map. Browser pages at the top level, the user API under /api/v1/, the agent API under /api/agent/v1/."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from apps.accounts import language
from apps.common import views as common_views
from config import legacy_urls

api_v1 = [
    path("catalog/", include("apps.catalog.api.urls")),
    path("workloads/", include("apps.workloads.api.urls")),
    path("quotes/", include("apps.quotes.api.urls")),
    path("evidence/", include("apps.evidence.api.urls")),
    path("comparisons/", include("apps.comparison.api.urls")),
    path("decisions/records/", include("apps.decisions.api.urls")),
    path("budgets/", include("apps.budgets.api.urls")),
    path("fleet/", include("apps.fleet.api.urls")),
    path("benchmarks/", include("apps.benchmarks.api.urls")),
    path("actuals/", include("apps.actuals.api.urls")),
    path("teams/", include("apps.teams.api.urls")),
]

# A 404 under /api/v1/ is JSON in the API's error shape, even for a URL no route takes (apps/common/views.py).
handler404 = "apps.common.views.not_found"

urlpatterns = [
    path("", common_views.home, name="home"),
    path("healthz", common_views.healthz, name="healthz"),
    path("accounts/", include("apps.accounts.urls")),
    # Django's language switcher, which also keeps a signed-in user's choice on their account.
    path("i18n/setlang/", language.set_language, name="set_language"),
    path("admin/", admin.site.urls),
    path("catalog/", include("apps.catalog.urls")),
    path("workloads/", include("apps.workloads.urls")),
    path("quotes/", include("apps.quotes.urls")),
    path("evidence/", include("apps.evidence.urls")),
    path("comparison/", include("apps.comparison.urls")),
    path("decisions/records/", include("apps.decisions.urls")),
    path("budgets/", include("apps.budgets.urls")),
    path("audit/", include("apps.audit.urls")),
    path("fleet/", include("apps.fleet.urls")),
    path("benchmarks/", include("apps.benchmarks.urls")),
    path("actuals/", include("apps.actuals.urls")),
    path("teams/", include("apps.teams.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/v1/", include(api_v1)),
    path("api/agent/v1/", include("apps.agent_api.urls")),
    *legacy_urls.urlpatterns,
]
