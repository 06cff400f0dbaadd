"""System checks for the agent settings: a mistake stops `manage.py check` with the variable's name."""

from django.conf import settings
from django.core.checks import Error, register

from apps.fleet.protocol import parse_version


@register()
def agent_settings_check(app_configs=None, **kwargs) -> list[Error]:
    errors = []
    try:
        parse_version(settings.DOSSIER_MIN_AGENT_VERSION)
    except ValueError:
        errors.append(Error(
            f"DOSSIER_MIN_AGENT_VERSION={settings.DOSSIER_MIN_AGENT_VERSION!r} is not a PEP 440 version.",
            hint="Use a version such as 0.1.0.", id="fleet.E001",
        ))
    if settings.DOSSIER_JOB_LEASE_RENEW_S >= settings.DOSSIER_JOB_LEASE_TTL_S:
        errors.append(Error(
            "DOSSIER_JOB_LEASE_RENEW_S must be shorter than DOSSIER_JOB_LEASE_TTL_S, or every lease expires before "
            "the agent renews it.", id="fleet.E002",
        ))
    if settings.DOSSIER_JOB_LEASE_RENEW_S >= settings.DOSSIER_JOB_CLAIM_LEASE_S:
        errors.append(Error(
            "DOSSIER_JOB_LEASE_RENEW_S must be shorter than DOSSIER_JOB_CLAIM_LEASE_S, or a claimed job is reaped "
            "before the agent's first renewal.", id="fleet.E003",
        ))
    if settings.DOSSIER_AGENT_OFFLINE_AFTER_S <= settings.DOSSIER_AGENT_HEARTBEAT_INTERVAL_S:
        errors.append(Error(
            "DOSSIER_AGENT_OFFLINE_AFTER_S must be longer than DOSSIER_AGENT_HEARTBEAT_INTERVAL_S, or healthy agents "
            "show as offline between heartbeats.", id="fleet.E004",
        ))
    if settings.DOSSIER_ARTIFACT_MAX_BYTES > settings.DOSSIER_JOB_ARTIFACT_MAX_BYTES:
        errors.append(Error(
            "DOSSIER_ARTIFACT_MAX_BYTES must not exceed DOSSIER_JOB_ARTIFACT_MAX_BYTES.", id="fleet.E005",
        ))
    return errors
