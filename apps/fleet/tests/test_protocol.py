"""The plain helpers of the agent protocol: tokens, timestamps, canonical hashes, versions."""

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apps.fleet import protocol


def test_tokens_are_prefixed_random_and_47_characters_long():
    tokens = {protocol.new_token("dsa_") for _ in range(100)}
    assert len(tokens) == 100
    assert all(token.startswith("dsa_") and len(token) == 47 for token in tokens)


def test_a_token_matches_its_hash_only():
    token = protocol.new_token("dsj_")
    stored = protocol.token_hash(token)
    assert len(stored) == 64 and token not in stored
    assert protocol.token_matches(token, stored)
    assert not protocol.token_matches(token[:-1] + ("A" if token[-1] != "A" else "B"), stored)


def test_the_display_prefix_keeps_eight_characters_after_the_prefix():
    assert protocol.token_display_prefix("dsr_Jx8wAbCdEfGh") == "dsr_Jx8wAbCd"


def test_timestamps_are_utc_with_milliseconds_and_a_z():
    moment = datetime(2025, 1, 31, 19, 0, 0, 125999, tzinfo=timezone(timedelta(hours=7)))
    assert protocol.format_timestamp(moment) == "2025-01-31T12:00:00.125Z"


@given(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)))
def test_a_formatted_timestamp_reads_back_to_the_millisecond(moment):
    parsed = protocol.parse_timestamp(protocol.format_timestamp(moment))
    assert parsed == moment.replace(microsecond=moment.microsecond // 1000 * 1000)


@pytest.mark.parametrize("text", ["", "yesterday", "2025-01-31T12:00:00", "2025-13-01T00:00:00Z", 17])
def test_timestamps_without_a_zone_or_malformed_are_refused(text):
    with pytest.raises(ValueError):
        protocol.parse_timestamp(text)


def test_the_canonical_hash_ignores_key_order_and_spacing():
    assert protocol.canonical_sha256({"b": 1, "a": [1, 2]}) == protocol.canonical_sha256({"a": [1, 2], "b": 1})
    assert protocol.canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'.encode()


@pytest.mark.parametrize(
    ("agent", "minimum", "older"),
    [("0.1.0", "0.2.0", True), ("0.2.0", "0.2.0", False), ("0.10.0", "0.9.1", False), ("1.0.0rc1", "1.0.0", True)],
)
def test_versions_compare_as_pep_440(agent, minimum, older):
    assert protocol.is_older(agent, minimum) is older


def test_a_version_that_is_not_pep_440_is_refused():
    with pytest.raises(ValueError):
        protocol.parse_version("latest")
