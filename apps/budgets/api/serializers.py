"""Serializers of the budgets API. Money travels as decimal strings, never as JSON numbers."""

from __future__ import annotations

from apps.budgets.models import Budget, BudgetPolicy, CostCentre
from apps.common.api_fields import ScopedPrimaryKeyRelatedField, TeamChoiceField, TeamMemberField
from apps.quotes.api.serializers import ServiceModelSerializer, team_from

__all__ = ["BudgetPolicySerializer", "BudgetSerializer", "CostCentreSerializer", "team_from"]


class CostCentreSerializer(ServiceModelSerializer):
    team = TeamChoiceField()

    class Meta:
        model = CostCentre
        fields = ["id", "team", "code", "name", "created_at"]
        read_only_fields = ["created_at"]
        validators = []  # uniqueness is the service's (and the database's) job


class BudgetSerializer(ServiceModelSerializer):
    team = TeamChoiceField()
    cost_centre = ScopedPrimaryKeyRelatedField(model=CostCentre)
    owner = TeamMemberField(required=False)

    class Meta:
        model = Budget
        fields = ["id", "team", "cost_centre", "amount", "currency", "period", "start_date", "owner", "created_at"]
        read_only_fields = ["created_at"]
        validators = []


class BudgetPolicySerializer(ServiceModelSerializer):
    team = TeamChoiceField()

    class Meta:
        model = BudgetPolicy
        fields = ["id", "team", "mode", "warn_fraction", "updated_at"]
        read_only_fields = ["updated_at"]
        extra_kwargs = {"warn_fraction": {"required": False, "allow_null": True}}
        validators = []
