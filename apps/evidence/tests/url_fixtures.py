"""How the URL-access and translation tests build the objects the evidence URLs point at (tests/url_registry.py): a
GPU candidate of a ready workload version with its figures entered with their sources."""

import itertools

from apps.comparison.tests.builders import gpu_candidate, workload
from tests.factories import UserFactory
from tests.url_registry import team_object

_numbers = itertools.count(1)


def make_figure_candidate(team):
    actor = UserFactory(username=f"evidence-fixture-{next(_numbers)}", roles=["platform"], teams=[team])
    return gpu_candidate(team, actor, workload(team), label="H200 on demand", price="3.50", capacity="9")


def make_figure(team):
    return make_figure_candidate(team).figures.get(metric="capacity_at_slo")


URL_FIXTURES = {
    "evidence:candidate-figures": team_object(make_figure_candidate),
    "evidence:figure-edit": team_object(make_figure),
    "evidence:figure-remove": team_object(make_figure),
    "evidence-api:figure-detail": team_object(make_figure),
}
