"""Reads about pools, tokens and agents, always scoped to what the user may see."""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet
from django.shortcuts import get_object_or_404

from apps.fleet.models import Agent, AgentPool, AgentStatus, InventorySnapshot, RegistrationToken


def pools_for_user(user) -> QuerySet[AgentPool]:
    return AgentPool.objects.for_user(user).select_related("team").annotate(
        agent_count=Count("agents", distinct=True),
        online_count=Count("agents", filter=Q(agents__status__in=[AgentStatus.ONLINE, AgentStatus.BUSY],
                                              agents__revoked_at__isnull=True), distinct=True),
    )


def pool_get(*, user, pk: int) -> AgentPool:
    return get_object_or_404(AgentPool.objects.for_user(user).select_related("team"), pk=pk)


def registration_token_get(*, user, pk: int) -> RegistrationToken:
    return get_object_or_404(RegistrationToken.objects.for_user(user).select_related("pool", "pool__team"), pk=pk)


def agents_for_user(user) -> QuerySet[Agent]:
    return Agent.objects.for_user(user).select_related("pool", "pool__team")


def agent_get(*, user, pk: int) -> Agent:
    return get_object_or_404(agents_for_user(user), pk=pk)


def latest_inventory(agent: Agent) -> InventorySnapshot | None:
    return agent.latest_inventory()


def agents_flagged_for(candidate) -> QuerySet[Agent]:
    """Agents on this candidate's node whose latest inventory does not match the quote (for the candidate's page)."""
    return Agent.objects.filter(candidate=candidate).exclude(inventory_mismatches=[]).order_by("name", "pk")
