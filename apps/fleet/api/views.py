"""User API of the fleet: pools and agents of the user's teams, read-only."""

from rest_framework import viewsets

from apps.fleet.api.serializers import AgentPoolSerializer, AgentSerializer
from apps.fleet.filters import AgentFilterSet
from apps.fleet.models import Agent, AgentPool


class AgentPoolViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = AgentPoolSerializer
    ordering_fields = ["name", "created_at"]

    def get_queryset(self):
        return AgentPool.objects.for_user(self.request.user).select_related("team").order_by("name", "pk")


class AgentViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = AgentSerializer
    filterset_class = AgentFilterSet
    ordering_fields = ["name", "last_heartbeat_at"]

    def get_queryset(self):
        return Agent.objects.for_user(self.request.user).select_related("pool").order_by("pool__name", "name", "pk")
