"""Exceptions of the agent: what the server answered, and what the agent must do about it."""


class AgentError(Exception):
    """Base class of the agent's own errors."""


class ConfigError(AgentError):
    """The configuration is missing something or holds a bad value; the message says which and how to fix it."""


class ServerReplyError(AgentError):
    """The server answered with an error status. `code` is the protocol's machine-readable error code."""

    def __init__(self, status: int, code: str, detail: str, body: dict | None = None, retry_after: float | None = None):
        self.status = status
        self.code = code
        self.detail = detail
        self.body = body or {}
        self.retry_after = retry_after
        super().__init__(f"HTTP {status} {code}: {detail}")


class TransientError(ServerReplyError):
    """Worth retrying later: network failure, 408, 429, 5xx. `retry_after` carries the server's Retry-After."""


class PermanentError(ServerReplyError):
    """A 4xx that a retry cannot fix (validation, not found, forbidden, conflict, too large)."""


class AuthenticationFailed(PermanentError):
    """401: the agent token (or registration token) is unknown, revoked or expired. The agent stops."""


class AgentTooOld(PermanentError):
    """426: the server requires a newer agent. The agent stops."""


class AttemptSuperseded(PermanentError):
    """409 on start/lease: this attempt is no longer the job's current attempt. Abort without finishing."""


class JobCancelled(Exception):
    """Raised by a job module when it notices `ctx.cancelled()` and stops early."""
