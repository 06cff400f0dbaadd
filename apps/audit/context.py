"""The request id of the work in progress (HTTP request or Celery task), for the audit log and the logs."""

import contextvars
import uuid

_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("dossier_request_id", default="")


def current_request_id() -> str:
    return _request_id.get()


def set_request_id(value: str | None = None) -> contextvars.Token:
    return _request_id.set(value or uuid.uuid4().hex)


def reset_request_id(token: contextvars.Token) -> None:
    _request_id.reset(token)
