"""How the URL-access and translation tests build the objects the decisions URLs point at (tests/url_registry.py).

Phase-4 comparison (issue 9): a ready workload version with a GPU candidate and an API route, their phase-4 inputs
entered with their sources. Decision records (issue 10) register theirs below.
"""

import itertools

from apps.decisions.tests.builders import api_candidate, gpu_candidate, workload
from tests.factories import UserFactory
from tests.url_registry import team_object

_numbers = itertools.count(1)


def _entering_user(team):
    return UserFactory(username=f"phase4-fixture-{next(_numbers)}", roles=["platform"], teams=[team])


def make_compared_workload(team):
    """A workload version with two compared candidates (an H100 rental and an API route)."""
    actor = _entering_user(team)
    summary = workload(team)
    gpu_candidate(team, actor, summary, label="H100 on demand", price="3.00", capacity="5")
    api_candidate(team, actor, summary, label="Model API")
    return summary


def make_input_candidate(team):
    actor = _entering_user(team)
    return gpu_candidate(team, actor, workload(team), label="H200 on demand", price="3.50", capacity="9")


def make_phase4_input(team):
    return make_input_candidate(team).phase4_inputs.get(metric="capacity_at_slo")


URL_FIXTURES = {
    # Phase-4 comparison (issue 9)
    "decisions:comparison": team_object(make_compared_workload),
    "decisions:comparison-print": team_object(make_compared_workload),
    "decisions:comparison-csv": team_object(make_compared_workload),
    "decisions:comparison-xlsx": team_object(make_compared_workload),
    "decisions:candidate-inputs": team_object(make_input_candidate),
    "decisions:input-edit": team_object(make_phase4_input),
    "decisions:input-remove": team_object(make_phase4_input),
    "decisions-api:comparison": team_object(make_compared_workload),
    "decisions-api:phase4-input-detail": team_object(make_phase4_input),
}

# Decision records (issue 10): their builders live in url_fixtures_records.py.
from apps.decisions.tests.url_fixtures_records import RECORD_URL_FIXTURES  # noqa: E402

URL_FIXTURES.update(RECORD_URL_FIXTURES)
