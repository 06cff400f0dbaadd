"""`dossier-agent register`: trade a pool's registration token for this agent's token, kept in a 0600 file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from dossier_agent import PROTOCOL_VERSION, __version__
from dossier_agent.client import AgentClient
from dossier_agent.config import AgentConfig
from dossier_agent.errors import ConfigError
from dossier_agent.jobs.registry import JobRegistry
from dossier_agent.retry import Backoff, call_with_retries
from dossier_agent.serving_stack import declared_operations
from dossier_agent.timeutil import utc_now_iso

REGISTRATION_TOKEN_PREFIX = "dsr_"  # noqa: S105 - a prefix, not a secret
AGENT_TOKEN_PREFIX = "dsa_"  # noqa: S105 - a prefix, not a secret


def write_private_file(path: Path, text: str) -> None:
    """Create or replace `path` readable by its owner only (0600), also when it existed with wider rights."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_name(f".tmp-{path.name}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(descriptor, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def registration_payload(
    config: AgentConfig, registration_token: str, registry: JobRegistry, inventory: dict[str, Any]
) -> dict[str, Any]:
    return {
        "registration_token": registration_token,
        "name": config.name,
        "agent_version": __version__,
        "protocol_version": PROTOCOL_VERSION,
        "machine_id": config.machine_id or inventory["host"]["machine_id"],
        "job_kinds": registry.offered(),
        "operations": declared_operations(config.operations),
        "inventory": inventory,
        **({"advertise_address": config.advertise_address} if config.advertise_address else {}),
    }


def register(
    config: AgentConfig, registry: JobRegistry, inventory: dict[str, Any], client: AgentClient | None = None
) -> dict[str, Any]:
    """Register with the server, store the token (0600) and the registration details; return the reply."""
    if not config.server_url:
        raise ConfigError("no server URL: pass --server https://dossier.example.com (or DOSSIER_AGENT_SERVER_URL)")
    token = config.registration_token
    if not token or not token.startswith(REGISTRATION_TOKEN_PREFIX):
        raise ConfigError(
            f"a registration token ({REGISTRATION_TOKEN_PREFIX}…) is needed: pass --registration-token, "
            "or set DOSSIER_AGENT_REGISTRATION_TOKEN; copy it from the agent pool's page"
        )
    payload = registration_payload(config, token, registry, inventory)
    own_client = client is None
    client = client or AgentClient(config.server_url, timeout_s=config.request_timeout_s, verify=config.tls_verify)
    try:
        status, reply = call_with_retries(lambda: client.register(payload), backoff=Backoff(cap_s=30.0))
    finally:
        if own_client:
            client.close()
    agent_token = reply["agent_token"]
    if not agent_token.startswith(AGENT_TOKEN_PREFIX):
        raise ConfigError(f"the server returned an agent token without the {AGENT_TOKEN_PREFIX} prefix")
    write_private_file(config.token_file, agent_token + "\n")
    details = {key: value for key, value in reply.items() if key != "agent_token"}
    details.update(server_url=config.server_url, registered_at=utc_now_iso(), http_status=status)
    write_private_file(config.agent_file, json.dumps(details, indent=2, sort_keys=True) + "\n")
    return details


def load_registration(config: AgentConfig) -> tuple[str, str, dict[str, Any]]:
    """(server URL, agent token, registration details) for `run` and `replay`."""
    details: dict[str, Any] = {}
    if config.agent_file.exists():
        details = json.loads(config.agent_file.read_text())
    token = config.agent_token
    if not token:
        try:
            token = config.token_file.read_text().strip()
        except FileNotFoundError:
            raise ConfigError(
                f"no agent token at {config.token_file}: run `dossier-agent register --server URL "
                "--registration-token dsr_…` first (or set DOSSIER_AGENT_AGENT_TOKEN)"
            ) from None
    server_url = config.server_url or details.get("server_url")
    if not server_url:
        raise ConfigError("no server URL: pass --server, set DOSSIER_AGENT_SERVER_URL, or register first")
    return server_url, token, details
