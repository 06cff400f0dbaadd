"""The budgets API under /api/v1/budgets/: cost centres, budgets and each team's policy. Every role of the owning
team reads; the finance and admin roles write (the others get 403); a user of another team gets 404. Writes call the
same services as the pages, so each is validated and audited."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from rest_framework import mixins, viewsets
from rest_framework.permissions import SAFE_METHODS

from apps.accounts.permissions import HasAnyRole
from apps.accounts.roles import Role, has_role
from apps.budgets import selectors, services
from apps.budgets.api import serializers
from apps.budgets.models import PolicyMode


class ReadAnyRoleWriteFinance(HasAnyRole):
    """Anyone with a role reads; finance and admin write."""

    message = _("Only the finance and admin roles may change budgets.")

    def has_permission(self, request, view) -> bool:
        if not super().has_permission(request, view):
            return False
        return request.method in SAFE_METHODS or has_role(request.user, Role.FINANCE, Role.ADMIN)


class _ScopedViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                     mixins.UpdateModelMixin, viewsets.GenericViewSet):
    permission_classes = [ReadAnyRoleWriteFinance]


class CostCentreViewSet(_ScopedViewSet):
    serializer_class = serializers.CostCentreSerializer
    ordering = ["code"]

    def get_queryset(self):
        return selectors.cost_centres_for(self.request.user)

    def perform_create(self, serializer):
        data = dict(serializer.validated_data)
        team = serializers.team_from(serializer, data)
        serializer.instance = services.cost_centre_create(actor=self.request.user, team=team, **data)

    def perform_update(self, serializer):
        data = dict(serializer.validated_data)
        data.pop("team", None)
        serializer.instance = services.cost_centre_update(
            actor=self.request.user, cost_centre=serializer.instance, **data
        )


class BudgetViewSet(_ScopedViewSet):
    serializer_class = serializers.BudgetSerializer
    filterset_fields = ["cost_centre", "period", "currency"]
    ordering = ["cost_centre__code", "-start_date"]

    def get_queryset(self):
        return selectors.budgets_for(self.request.user)

    def perform_create(self, serializer):
        data = dict(serializer.validated_data)
        team = serializers.team_from(serializer, data)
        serializer.instance = services.budget_create(actor=self.request.user, team=team, **data)

    def perform_update(self, serializer):
        data = dict(serializer.validated_data)
        data.pop("team", None)
        serializer.instance = services.budget_update(actor=self.request.user, budget=serializer.instance, **data)


class BudgetPolicyViewSet(_ScopedViewSet):
    """One policy per team: creating it again for the same team changes it."""

    serializer_class = serializers.BudgetPolicySerializer
    ordering = ["team__name"]

    def get_queryset(self):
        return selectors.policies_for(self.request.user)

    def perform_create(self, serializer):
        data = dict(serializer.validated_data)
        team = serializers.team_from(serializer, data)
        data.setdefault("mode", PolicyMode.WARN)  # the model's default when the body leaves it out
        serializer.instance = services.policy_set(actor=self.request.user, team=team, **data)

    def perform_update(self, serializer):
        data = dict(serializer.validated_data)
        data.pop("team", None)
        data.setdefault("mode", serializer.instance.mode)
        data.setdefault("warn_fraction", serializer.instance.warn_fraction)
        serializer.instance = services.policy_set(actor=self.request.user, team=serializer.instance.team, **data)
