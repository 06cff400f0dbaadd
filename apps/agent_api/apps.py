from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AgentApiConfig(AppConfig):
    """The agent API under /api/agent/v1/ (docs/agent-protocol.md), in one place: node calls (register, heartbeat)
    served by the fleet's services, job calls (claim, start, lease, events, artifacts, finish) by the benchmarks'."""

    name = "apps.agent_api"
    label = "agent_api"
    verbose_name = _("Agent API")
