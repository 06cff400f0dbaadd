"""Objects for the parameterised project-level URLs (catalog, audit, the redirects of moved addresses), see
tests/url_registry.py.

Apps with team-owned records register theirs in apps/<app>/tests/url_fixtures.py.
"""

import datetime
import itertools

from apps.catalog.models import SpecKey
from apps.catalog.services import gpu_model_create, gpu_spec_set
from tests.url_registry import global_object, team_object

_numbers = itertools.count(1)


def make_gpu(team=None):
    """A catalog GPU with one sourced figure (the catalog is global: `team` is not used)."""
    number = next(_numbers)
    gpu = gpu_model_create(
        actor="url fixtures",
        name=f"Test GPU {number}",
        variant="SXM",
        form_factor="SXM",
        memory_type="HBM3e",
    )
    gpu_spec_set(
        actor="url fixtures",
        gpu=gpu,
        key=SpecKey.MEMORY_GB,
        value="141",
        source="https://example.test/datasheet.pdf",
        as_of=datetime.date(2025, 1, 15),
    )
    return gpu


def _gpu_figure(team):
    return {"pk": make_gpu(team).pk, "key": SpecKey.MEMORY_GB.value}


def _gpu_history(team):
    gpu = make_gpu(team)
    return {"app_label": gpu._meta.app_label, "model_name": gpu._meta.model_name, "object_id": str(gpu.pk)}


URL_FIXTURES = {
    "catalog:detail": global_object(make_gpu),
    "catalog:spec-edit": global_object(_gpu_figure),
    "catalog-api:gpu-detail": global_object(make_gpu),
    # The history of a global record; team-owned records' history pages are checked in apps/audit/tests.
    "audit:object-history": global_object(_gpu_history),
}

# The redirects of moved addresses (config/legacy_urls.py) point at the objects of the pages they redirect to.
from apps.comparison.tests.url_fixtures import make_compared_workload  # noqa: E402
from apps.evidence.tests.url_fixtures import make_figure, make_figure_candidate  # noqa: E402

URL_FIXTURES.update({
    **{name: team_object(make_compared_workload) for name in (
        "legacy-comparison", "legacy-comparison-print", "legacy-comparison-csv", "legacy-comparison-xlsx")},
    "legacy-candidate-inputs": team_object(make_figure_candidate),
    "legacy-input-edit": team_object(make_figure),
})
