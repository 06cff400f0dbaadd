"""One line per event, `key=value`, readable by people and by grep: `ts=… level=info event="job claimed" job=42`."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/@+,")


def format_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (dict, list, tuple)):
        value = json.dumps(value, separators=(",", ":"), default=str)
    text = str(value)
    if text and all(character in _SAFE for character in text):
        return text
    return json.dumps(text, ensure_ascii=False)


def format_fields(fields: dict[str, object]) -> str:
    return " ".join(f"{key}={format_value(value)}" for key, value in fields.items())


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        moment = datetime.fromtimestamp(record.created, UTC)
        line = {
            "ts": moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        line.update(getattr(record, "fields", {}))
        text = format_fields(line)
        if record.exc_info:
            text += " traceback=" + format_value(self.formatException(record.exc_info))
        return text


def log(logger: logging.Logger, level: int, event: str, **fields: object) -> None:
    """Log one event with its fields: `log(logger, logging.INFO, "job claimed", job=42, attempt=1)`."""
    logger.log(level, event, extra={"fields": fields})


def configure(level: str = "info", stream=None) -> None:
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(KeyValueFormatter())
    root = logging.getLogger("dossier_agent")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
