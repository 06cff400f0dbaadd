"""Backoff with full jitter, Retry-After honoured, no retry on a 4xx a retry cannot fix — over real HTTP."""

import random
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from dossier_agent.client import AgentClient
from dossier_agent.errors import PermanentError, TransientError
from dossier_agent.retry import Backoff, call_with_retries, is_retryable_status, parse_retry_after


def test_full_jitter_stays_within_the_growing_ceiling():
    backoff = Backoff(base_s=1.0, cap_s=8.0, rng=random.Random(7))
    for failures in range(8):
        delay = backoff.next_delay()
        assert 0.0 <= delay <= min(8.0, 2 ** failures)


def test_full_jitter_spreads_agents_out():
    delays = {round(Backoff(rng=random.Random(seed)).next_delay(), 6) for seed in range(20)}
    assert len(delays) == 20


def test_retry_after_is_a_floor_for_the_delay():
    backoff = Backoff(base_s=0.01, cap_s=0.02)
    assert backoff.next_delay(retry_after=5.0) >= 5.0


@pytest.mark.parametrize(("header", "expected"), [("7", 7.0), ("0", 0.0), (" 12 ", 12.0), ("soon", None),
                                                   (None, None), ("", None), ("999999", 900.0)])
def test_retry_after_seconds(header, expected):
    assert parse_retry_after(header) == expected


def test_retry_after_http_date():
    now = datetime(2025, 1, 31, 12, 0, 0, tzinfo=UTC)
    header = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after(header, now=now) == 30.0
    assert parse_retry_after(format_datetime(now - timedelta(seconds=30), usegmt=True), now=now) == 0.0


def test_which_statuses_are_retried():
    assert all(is_retryable_status(code) for code in (408, 429, 500, 502, 503, 504))
    assert not any(is_retryable_status(code) for code in (400, 401, 403, 404, 409, 413, 426))


def test_a_429_is_retried_after_the_servers_retry_after(server):
    token = server.register_agent()
    server.state.inject("POST", "/heartbeat", 429, times=2, headers={"Retry-After": "3"}, error="rate_limited")
    slept = []

    with AgentClient(server.url, agent_token=token) as client:
        reply = call_with_retries(
            lambda: client.heartbeat({"state": "idle"}),
            backoff=Backoff(base_s=0.001, cap_s=0.002),
            sleep=lambda seconds, stop: slept.append(seconds) or False,
        )

    assert reply["commands"] == []
    assert slept and all(seconds >= 3.0 for seconds in slept) and len(slept) == 2
    assert server.state.count("POST", "/heartbeat$") == 3


def test_a_503_without_retry_after_backs_off_with_jitter(server):
    token = server.register_agent()
    server.state.inject("POST", "/heartbeat", 503, times=3)
    slept = []

    with AgentClient(server.url, agent_token=token) as client:
        call_with_retries(lambda: client.heartbeat({}), backoff=Backoff(base_s=0.5, cap_s=60.0),
                          sleep=lambda seconds, stop: slept.append(seconds) or False)

    assert len(slept) == 3
    assert all(0 <= seconds <= 0.5 * 2 ** attempt for attempt, seconds in enumerate(slept))


def test_a_400_is_not_retried(server):
    token = server.register_agent()
    server.state.inject("POST", "/heartbeat", 400, times=5, error="validation_error")

    with AgentClient(server.url, agent_token=token) as client, pytest.raises(PermanentError) as raised:
        call_with_retries(lambda: client.heartbeat({}), sleep=lambda seconds, stop: False)

    assert raised.value.code == "validation_error"
    assert server.state.count("POST", "/heartbeat$") == 1


def test_retries_stop_at_the_deadline(server):
    token = server.register_agent()
    server.state.inject("POST", "/heartbeat", 503, times=100, headers={"Retry-After": "60"})

    began = time.monotonic()
    with AgentClient(server.url, agent_token=token) as client, pytest.raises(TransientError):
        call_with_retries(lambda: client.heartbeat({}), deadline=time.monotonic() + 1.0)

    assert time.monotonic() - began < 1.0  # a 60 s Retry-After cannot fit: give up at once


def test_an_unreachable_server_is_a_transient_error():
    with AgentClient("http://127.0.0.1:9", agent_token="dsa_x", timeout_s=2) as client, \
            pytest.raises(TransientError) as raised:
        client.heartbeat({})
    assert raised.value.code == "network_error"
