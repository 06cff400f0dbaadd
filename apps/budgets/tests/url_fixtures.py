"""The objects the budgets URLs point at (see tests/url_registry.py)."""

from apps.budgets import services
from apps.budgets.tests.builders import budget, cost_centre, finance_member
from tests.url_registry import team_object


def _policy(team):
    return services.policy_set(actor=finance_member(team), team=team, mode="warn")


URL_FIXTURES = {
    "budgets:budget-edit": team_object(lambda team: budget(team)),
    "budgets-api:cost-centre-detail": team_object(lambda team: cost_centre(team)),
    "budgets-api:budget-detail": team_object(lambda team: budget(team)),
    "budgets-api:policy-detail": team_object(_policy),
}
