"""Retries: exponential backoff with full jitter, `Retry-After` honoured, stop on errors a retry cannot fix."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TypeVar

from dossier_agent.errors import TransientError

RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 15 * 60.0

T = TypeVar("T")


def is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUSES


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP-date. None when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    if value.isdigit():
        return min(float(value), MAX_RETRY_AFTER_S)
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    seconds = (moment - (now or datetime.now(UTC))).total_seconds()
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


@dataclass
class Backoff:
    """Full-jitter exponential backoff: delay = uniform(0, min(cap, base * 2**n)), at least the server's Retry-After."""

    base_s: float = 1.0
    cap_s: float = 60.0
    rng: random.Random = field(default_factory=random.Random)
    failures: int = 0

    def next_delay(self, retry_after: float | None = None) -> float:
        ceiling = min(self.cap_s, self.base_s * (2 ** min(self.failures, 30)))
        self.failures += 1
        delay = self.rng.uniform(0.0, ceiling)
        if retry_after is not None:
            delay = max(delay, retry_after)
        return delay

    def reset(self) -> None:
        self.failures = 0


def wait_or_stop(seconds: float, stop: threading.Event | None) -> bool:
    """Sleep `seconds`, waking early when `stop` is set. Returns True when stopped."""
    if stop is None:
        time.sleep(seconds)
        return False
    return stop.wait(seconds)


def call_with_retries(
    operation: Callable[[], T],
    *,
    backoff: Backoff | None = None,
    stop: threading.Event | None = None,
    deadline: float | None = None,
    sleep: Callable[[float, threading.Event | None], bool] = wait_or_stop,
    on_retry: Callable[[TransientError, float], None] | None = None,
) -> T:
    """Run `operation` until it succeeds, retrying TransientError only.

    Gives up (re-raising the last TransientError) when `stop` is set or the monotonic `deadline` would pass.
    Any other exception propagates at once: a 4xx other than 408/429 is not retried.
    """
    backoff = backoff or Backoff()
    while True:
        try:
            return operation()
        except TransientError as error:
            delay = backoff.next_delay(error.retry_after)
            if deadline is not None and time.monotonic() + delay > deadline:
                raise
            if on_retry is not None:
                on_retry(error, delay)
            if sleep(delay, stop):
                raise
