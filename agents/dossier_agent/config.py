"""Agent configuration from, in order of precedence: command-line flags, DOSSIER_AGENT_* variables, a TOML file.

The file is `--config PATH`, else $DOSSIER_AGENT_CONFIG, else /etc/dossier-agent/agent.toml (root) or
~/.config/dossier-agent/agent.toml (other users) when it exists. Keys are the field names of AgentConfig;
operations for phase-3 jobs are tables: `[operations.restart_serving]` with `command = "systemctl restart vllm"`.
"""

from __future__ import annotations

import difflib
import os
import socket
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dossier_agent.errors import ConfigError

ENV_PREFIX = "DOSSIER_AGENT_"


def default_state_dir() -> Path:
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return Path("/var/lib/dossier-agent")
    return Path.home() / ".local" / "state" / "dossier-agent"


def default_config_file() -> Path:
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return Path("/etc/dossier-agent/agent.toml")
    return Path.home() / ".config" / "dossier-agent" / "agent.toml"


@dataclass
class AgentConfig:
    server_url: str | None = None
    state_dir: Path = field(default_factory=default_state_dir)
    token_file: Path | None = None
    spool_dir: Path | None = None
    work_dir: Path | None = None
    agent_token: str | None = None
    registration_token: str | None = None
    name: str = field(default_factory=socket.gethostname)
    job_kinds: list[str] | None = None
    job_dirs: list[Path] = field(default_factory=list)
    operations: dict[str, dict[str, Any]] = field(default_factory=dict)
    telemetry_interval_s: float = 1.0
    shutdown_grace_s: float = 60.0
    request_timeout_s: float = 30.0
    ca_bundle: str | None = None
    insecure_skip_tls_verify: bool = False
    log_level: str = "info"
    keep_workdirs: bool = False
    advertise_address: str | None = None  # where other ranks of a job group reach this node (default: as seen)
    machine_id: str | None = None  # only to run several agents on one host: each needs its own identity
    config_file: Path | None = None

    def __post_init__(self) -> None:
        self.token_file = self.token_file or self.state_dir / "agent-token"
        self.spool_dir = self.spool_dir or self.state_dir / "spool"
        self.work_dir = self.work_dir or self.state_dir / "work"

    @property
    def agent_file(self) -> Path:
        """Registration details beside the token (agent id, server URL, pool): JSON, no secret."""
        return self.token_file.with_name(self.token_file.name + ".json")

    @property
    def tls_verify(self) -> bool | str:
        if self.insecure_skip_tls_verify:
            return False
        return self.ca_bundle or True


_PATH_FIELDS = {"state_dir", "token_file", "spool_dir", "work_dir"}
_FLOAT_FIELDS = {"telemetry_interval_s", "shutdown_grace_s", "request_timeout_s"}
_BOOL_FIELDS = {"insecure_skip_tls_verify", "keep_workdirs"}
_STRING_FIELDS = {"server_url", "agent_token", "registration_token", "name", "ca_bundle", "log_level",
                  "advertise_address", "machine_id"}
_LOG_LEVELS = {"debug", "info", "warning", "error"}


def _parse_value(key: str, value: Any, origin: str) -> Any:
    if key in _PATH_FIELDS:
        return Path(os.path.expanduser(str(value)))
    if key in _FLOAT_FIELDS:
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{key} from {origin} must be a number of seconds, got {value!r}") from None
        if number <= 0:
            raise ConfigError(f"{key} from {origin} must be greater than 0, got {value!r}")
        return number
    if key in _BOOL_FIELDS:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in {"1", "true", "yes", "on"}:
            return True
        if text in {"0", "false", "no", "off", ""}:
            return False
        raise ConfigError(f"{key} from {origin} must be true or false, got {value!r}")
    if key == "job_kinds":
        items = value.split(",") if isinstance(value, str) else list(value)
        return [str(item).strip() for item in items if str(item).strip()]
    if key == "job_dirs":
        items = value.split(os.pathsep) if isinstance(value, str) else list(value)
        return [Path(os.path.expanduser(str(item))) for item in items if str(item).strip()]
    if key == "operations":
        if not isinstance(value, Mapping) or not all(isinstance(item, Mapping) for item in value.values()):
            raise ConfigError(f"operations in {origin} must be tables: [operations.NAME] with their settings")
        return {str(name): dict(settings) for name, settings in value.items()}
    if key == "log_level":
        text = str(value).lower()
        if text not in _LOG_LEVELS:
            raise ConfigError(f"log_level from {origin} must be one of {sorted(_LOG_LEVELS)}, got {value!r}")
        return text
    if key == "advertise_address":
        import ipaddress

        try:
            return str(ipaddress.ip_address(str(value).strip()))
        except ValueError:
            raise ConfigError(f"advertise_address from {origin} must be an IP address, got {value!r}") from None
    if key == "server_url":
        text = str(value).rstrip("/")
        if not text.startswith(("http://", "https://")):
            raise ConfigError(f"server_url from {origin} must start with https:// (or http:// on loopback): {value!r}")
        return text
    return str(value)


_ALL_FIELDS = _PATH_FIELDS | _FLOAT_FIELDS | _BOOL_FIELDS | _STRING_FIELDS | {"job_kinds", "job_dirs", "operations"}


def read_config_file(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path} is not valid TOML: {error}") from None
    except OSError as error:
        raise ConfigError(f"cannot read the configuration file {path}: {error.strerror}") from None
    unknown = sorted(set(data) - _ALL_FIELDS)
    if unknown:
        raise ConfigError(unknown_setting_message(unknown[0], sorted(_ALL_FIELDS), str(path)))
    return {key: _parse_value(key, value, str(path)) for key, value in data.items()}


# DOSSIER_AGENT_* variables that are not the agent's settings: the server's own (config/settings.py), which an agent
# on the server's host may inherit, and the configuration file's path.
NOT_AGENT_SETTINGS = frozenset({
    ENV_PREFIX + "CONFIG",
    ENV_PREFIX + "HEARTBEAT_INTERVAL_S", ENV_PREFIX + "CLAIM_INTERVAL_S", ENV_PREFIX + "OFFLINE_AFTER_S",
    ENV_PREFIX + "MAX_BODY_BYTES", ENV_PREFIX + "MAX_EVENTS_PER_BATCH",
})


def unknown_setting_message(name: str, known: list[str], origin: str) -> str:
    """One wording for an unknown setting, in a file or the environment: what is unknown, the closest known one."""
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"{origin}: unknown setting {name}{hint}; known: {', '.join(known)}"


def unknown_environment(environ: Mapping[str, str]) -> list[str]:
    """A message per DOSSIER_AGENT_* variable the agent does not read: a misspelling is otherwise silently ignored."""
    known = sorted(ENV_PREFIX + key.upper() for key in _ALL_FIELDS - {"operations"})
    return [
        unknown_setting_message(name, known, "environment")
        for name in sorted(environ)
        if name.startswith(ENV_PREFIX) and name not in known and name not in NOT_AGENT_SETTINGS
    ]


def read_environment(environ: Mapping[str, str]) -> dict[str, Any]:
    values = {}
    for key in _ALL_FIELDS - {"operations"}:
        name = ENV_PREFIX + key.upper()
        if name in environ:
            values[key] = _parse_value(key, environ[name], name)
    return values


def load_config(flags: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> AgentConfig:
    """Merge file < environment < flags. `flags` holds only the options given on the command line (None = unset)."""
    environ = os.environ if environ is None else environ
    flags = {key: value for key, value in (flags or {}).items() if value is not None}
    explicit_file = flags.pop("config_file", None) or environ.get(ENV_PREFIX + "CONFIG")
    config_file = Path(explicit_file) if explicit_file else default_config_file()
    values: dict[str, Any] = {}
    if explicit_file or config_file.exists():
        values.update(read_config_file(config_file))
        values["config_file"] = config_file
    values.update(read_environment(environ))
    unknown_flags = sorted(set(flags) - _ALL_FIELDS)
    if unknown_flags:
        raise ConfigError(f"unknown option(s): {', '.join(unknown_flags)}")
    values.update({key: _parse_value(key, value, "--" + key.replace("_", "-")) for key, value in flags.items()})
    return AgentConfig(**values)
