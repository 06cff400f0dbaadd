"""How the URL-access and translation tests build the objects the comparison URLs point at (tests/url_registry.py):
a ready workload version with a GPU candidate and an API route, their figures entered with their sources.
"""

import itertools

from apps.comparison.services import mistake_waiver_create
from apps.comparison.tests.builders import api_candidate, gpu_candidate, workload
from tests.factories import UserFactory
from tests.url_registry import team_object

_numbers = itertools.count(1)


def _entering_user(team):
    return UserFactory(username=f"comparison-fixture-{next(_numbers)}", roles=["platform"], teams=[team])


def make_compared_workload(team):
    """A workload version with two compared candidates (an H100 rental and an API route)."""
    actor = _entering_user(team)
    summary = workload(team)
    gpu_candidate(team, actor, summary, label="H100 on demand", price="3.00", capacity="5")
    api_candidate(team, actor, summary, label="Model API")
    return summary


def make_waiver(team):
    """A recorded waiver of the interconnect check for a multi-GPU candidate, by a named platform member."""
    actor = _entering_user(team)
    summary = workload(team)
    candidate = gpu_candidate(team, actor, summary, label="2×H100 replica", price="3.00", capacity="5")
    return mistake_waiver_create(actor=actor, candidate=candidate, rule="interconnect_ignored",
                                 reason="single-node NVLink, vendor all-reduce report attached")


URL_FIXTURES = {
    "comparison-api:waiver-detail": team_object(make_waiver),
    "comparison:comparison": team_object(make_compared_workload),
    "comparison:comparison-print": team_object(make_compared_workload),
    "comparison:comparison-csv": team_object(make_compared_workload),
    "comparison:comparison-xlsx": team_object(make_compared_workload),
    "comparison-api:comparison": team_object(make_compared_workload),
}
