"""Serializers of the user API for pools and agents (read-only: agents write through the agent API)."""

from django.conf import settings
from django.utils import timezone
from rest_framework import serializers

from apps.fleet.models import Agent, AgentPool, InventorySnapshot


class AgentPoolSerializer(serializers.ModelSerializer):
    team = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = AgentPool
        fields = ["id", "name", "description", "team", "is_active", "created_at"]


class InventorySnapshotSerializer(serializers.ModelSerializer):
    class Meta:
        model = InventorySnapshot
        fields = ["id", "source", "sha256", "taken_at", "gpu_count", "gpu_names", "data"]


class AgentSerializer(serializers.ModelSerializer):
    pool = serializers.PrimaryKeyRelatedField(read_only=True)
    status = serializers.SerializerMethodField()
    inventory = serializers.SerializerMethodField()

    class Meta:
        model = Agent
        fields = ["id", "name", "pool", "status", "reported_state", "version", "job_kinds", "operations",
                  "last_heartbeat_at", "uptime_s", "spool_pending", "machine_id", "token_prefix", "registered_at",
                  "revoked_at", "inventory"]

    def get_status(self, agent: Agent) -> str:
        return agent.status_at(timezone.now(), settings.DOSSIER_AGENT_OFFLINE_AFTER_S)

    def get_inventory(self, agent: Agent) -> dict | None:
        snapshot = agent.latest_inventory()
        return InventorySnapshotSerializer(snapshot).data if snapshot else None
