"""The agent protocol's timings and limits, read from Django settings when asked (never at import time)."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings


@dataclass(frozen=True)
class AgentProtocolSettings:
    min_agent_version: str
    heartbeat_interval_s: int
    claim_interval_s: int
    offline_after_s: int
    claim_lease_s: int
    lease_ttl_s: int
    lease_renew_s: int
    max_attempts: int
    max_body_bytes: int
    max_events_per_batch: int
    max_artifact_bytes: int
    max_job_artifact_bytes: int
    group_port_min: int
    group_port_max: int
    group_poll_s: int

    def limits(self) -> dict[str, int]:
        return {
            "max_body_bytes": self.max_body_bytes,
            "max_events_per_batch": self.max_events_per_batch,
            "max_artifact_bytes": self.max_artifact_bytes,
            "max_job_artifact_bytes": self.max_job_artifact_bytes,
        }


def protocol_settings() -> AgentProtocolSettings:
    return AgentProtocolSettings(
        min_agent_version=settings.DOSSIER_MIN_AGENT_VERSION,
        heartbeat_interval_s=settings.DOSSIER_AGENT_HEARTBEAT_INTERVAL_S,
        claim_interval_s=settings.DOSSIER_AGENT_CLAIM_INTERVAL_S,
        offline_after_s=settings.DOSSIER_AGENT_OFFLINE_AFTER_S,
        claim_lease_s=settings.DOSSIER_JOB_CLAIM_LEASE_S,
        lease_ttl_s=settings.DOSSIER_JOB_LEASE_TTL_S,
        lease_renew_s=settings.DOSSIER_JOB_LEASE_RENEW_S,
        max_attempts=settings.DOSSIER_JOB_MAX_ATTEMPTS,
        max_body_bytes=settings.DOSSIER_AGENT_MAX_BODY_BYTES,
        max_events_per_batch=settings.DOSSIER_AGENT_MAX_EVENTS_PER_BATCH,
        max_artifact_bytes=settings.DOSSIER_ARTIFACT_MAX_BYTES,
        max_job_artifact_bytes=settings.DOSSIER_JOB_ARTIFACT_MAX_BYTES,
        group_port_min=settings.DOSSIER_GROUP_PORT_MIN,
        group_port_max=settings.DOSSIER_GROUP_PORT_MAX,
        group_poll_s=settings.DOSSIER_GROUP_POLL_S,
    )
