"""The `dossier-agent` command: register, run, inventory, self-test, run-job (offline) and replay.

Exit codes: 0 done, 1 a job or check failed / something left to upload, 2 configuration error,
3 the server refused the agent's token (register again), 4 the agent is too old for the server.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

from dossier_agent import __version__, structured_log
from dossier_agent.config import AgentConfig, load_config, unknown_environment
from dossier_agent.errors import AgentTooOld, AuthenticationFailed, ConfigError, PermanentError, TransientError
from dossier_agent.jobs.registry import JobRegistry, discover
from dossier_agent.structured_log import format_fields, log

logger = logging.getLogger("dossier_agent.cli")

EXIT_FAILED = 1
EXIT_CONFIG = 2
EXIT_AUTHENTICATION_FAILED = 3
EXIT_AGENT_TOO_OLD = 4


def _common_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("common options (also DOSSIER_AGENT_* variables or the TOML file)")
    group.add_argument("--config", dest="config_file", help="TOML configuration file")
    group.add_argument("--state-dir", help="folder for the token, spool and work folders")
    group.add_argument("--log-level", choices=["debug", "info", "warning", "error"])
    group.add_argument("--job-dir", dest="job_dirs", action="append", help="extra folder of job modules (repeatable)")
    group.add_argument("--job-kinds", help="comma-separated job kinds to offer (default: all that import)")
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _common_options()
    parser = argparse.ArgumentParser(prog="dossier-agent", description="Dossier GPU agent.")
    parser.add_argument("--version", action="version", version=f"dossier-agent {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    register = commands.add_parser("register", parents=[common], help="register this node with a Dossier server")
    register.add_argument("--server", dest="server_url", help="server URL, e.g. https://dossier.example.com")
    register.add_argument("--registration-token", help="the pool's registration token (dsr_…)")
    register.add_argument("--name", help="agent name shown in Dossier (default: host name)")
    register.add_argument("--token-file", help="where to write the agent token (mode 0600)")

    run = commands.add_parser("run", parents=[common], help="claim and run jobs until stopped")
    run.add_argument("--server", dest="server_url")
    run.add_argument("--token-file")
    run.add_argument("--spool-dir")
    run.add_argument("--work-dir")
    run.add_argument("--shutdown-grace-s", type=float, help="seconds a job gets to finish after SIGTERM")
    run.add_argument("--telemetry-interval-s", type=float)

    commands.add_parser("inventory", parents=[common], help="print this node's inventory as JSON")

    self_test = commands.add_parser("self-test", parents=[common], help="run every job kind on a tiny configuration")
    self_test.add_argument("--kind", action="append", dest="kinds", help="only this kind (repeatable)")

    run_job = commands.add_parser("run-job", parents=[common], help="run one job from a spec file, offline")
    run_job.add_argument("spec", type=Path, help='JSON file: {"kind": "...", "spec": {...}}')
    run_job.add_argument("--spool", type=Path, required=True, help="spool folder to write the run into")
    run_job.add_argument("--work-dir")
    run_job.add_argument("--shutdown-grace-s", type=float)
    run_job.add_argument("--telemetry-interval-s", type=float)

    replay = commands.add_parser("replay", parents=[common], help="upload an offline spool to a server")
    replay.add_argument("directory", type=Path, help="spool folder (or .tar/.tar.gz of one)")
    replay.add_argument("--server", dest="server_url")
    replay.add_argument("--token-file")
    replay.add_argument("--give-up-after-s", type=float, default=300.0,
                        help="stop retrying an unreachable server after this long (the spool is kept); default 300")
    return parser


_CONFIG_KEYS = {
    "config_file", "state_dir", "log_level", "job_dirs", "job_kinds", "server_url", "registration_token", "name",
    "token_file", "spool_dir", "work_dir", "shutdown_grace_s", "telemetry_interval_s",
}


def _config_from(arguments: argparse.Namespace) -> AgentConfig:
    flags = {key: value for key, value in vars(arguments).items() if key in _CONFIG_KEYS}
    return load_config(flags)


def _registry(config: AgentConfig) -> JobRegistry:
    return discover(config.job_dirs, only=config.job_kinds)


def _install_signal_handlers(handler) -> None:
    for signal_number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signal_number, handler)


def _print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


# -- commands --------------------------------------------------------------------------------------------------
def command_register(config: AgentConfig, arguments: argparse.Namespace) -> int:
    from dossier_agent.inventory import collect_inventory
    from dossier_agent.registration import register

    registry = _registry(config)
    details = register(config, registry, collect_inventory())
    print(format_fields({
        "registered": True, "agent_id": details.get("agent_id"), "pool": (details.get("pool") or {}).get("name"),
        "server": config.server_url, "token_file": str(config.token_file), "job_kinds": registry.offered(),
    }))
    return 0


def command_run(config: AgentConfig, arguments: argparse.Namespace) -> int:
    from dossier_agent.registration import load_registration
    from dossier_agent.runner import AgentRunner

    server_url, token, details = load_registration(config)
    runner = AgentRunner(config, _registry(config), server_url=server_url, agent_token=token, details=details)
    _install_signal_handlers(runner.handle_signal)
    return runner.run()


def command_inventory(config: AgentConfig, arguments: argparse.Namespace) -> int:
    from dossier_agent.inventory import collect_inventory

    _print_json(collect_inventory())
    return 0


def command_self_test(config: AgentConfig, arguments: argparse.Namespace) -> int:
    from dossier_agent.selftest import self_test

    report = self_test(_registry(config), kinds=arguments.kinds,
                       settings={"telemetry_interval_s": config.telemetry_interval_s})
    _print_json(report)
    return 0 if report["passed"] else EXIT_FAILED


def command_run_job(config: AgentConfig, arguments: argparse.Namespace) -> int:
    from dossier_agent.offline import offline_supervision, read_job_spec, run_job_offline

    kind, spec = read_job_spec(arguments.spec)
    supervision = offline_supervision(config.shutdown_grace_s)

    def handle_signal(signal_number: int, _frame: object) -> None:
        if supervision.shutdown.is_set():
            supervision.force.set()
        supervision.shutdown.set()

    _install_signal_handlers(handle_signal)
    outcome, attempt = run_job_offline(
        kind, spec, spool_dir=arguments.spool, work_dir=config.work_dir, registry=_registry(config),
        supervision=supervision,
        settings={"telemetry_interval_s": config.telemetry_interval_s, "operations": config.operations},
        log_level=config.log_level, keep_workdir=config.keep_workdirs,
    )
    payload = outcome.finish["payload"]
    print(format_fields({
        "status": outcome.status, "kind": kind, "spool": str(attempt.directory), "events": payload["event_count"],
        "artifacts": len(payload["artifacts"]), "error": (payload["error"] or {}).get("message"),
    }))
    return 0 if outcome.status == "succeeded" else EXIT_FAILED


def command_replay(config: AgentConfig, arguments: argparse.Namespace) -> int:
    from dossier_agent.client import AgentClient
    from dossier_agent.registration import load_registration
    from dossier_agent.replay import open_spool_folder, replay

    server_url, token, _ = load_registration(config)
    root = open_spool_folder(arguments.directory)
    with AgentClient(server_url, agent_token=token, timeout_s=config.request_timeout_s,
                     verify=config.tls_verify) as client:
        summary = replay(root, client, budget_s=arguments.give_up_after_s)
    _print_json(summary)
    return 0 if all(entry["outcome"] == "delivered" for entry in summary) else EXIT_FAILED


COMMANDS = {
    "register": command_register,
    "run": command_run,
    "inventory": command_inventory,
    "self-test": command_self_test,
    "run-job": command_run_job,
    "replay": command_replay,
}


def main(argv: list[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    try:
        config = _config_from(arguments)
    except ConfigError as error:
        structured_log.configure()
        log(logger, logging.ERROR, "configuration error", detail=str(error))
        return EXIT_CONFIG
    structured_log.configure(config.log_level)
    for message in unknown_environment(os.environ):
        log(logger, logging.WARNING, "configuration warning", detail=message)
    try:
        return COMMANDS[arguments.command](config, arguments)
    except ConfigError as error:
        log(logger, logging.ERROR, "configuration error", detail=str(error))
        return EXIT_CONFIG
    except AuthenticationFailed as error:
        log(logger, logging.ERROR, "the server refused the token", error=error.code, detail=error.detail)
        return EXIT_AUTHENTICATION_FAILED
    except AgentTooOld as error:
        log(logger, logging.ERROR, "the server requires a newer agent", detail=error.detail,
            min_agent_version=error.body.get("min_agent_version"))
        return EXIT_AGENT_TOO_OLD
    except (PermanentError, TransientError) as error:
        log(logger, logging.ERROR, "the server refused the request", status=error.status, error=error.code,
            detail=error.detail)
        return EXIT_FAILED
