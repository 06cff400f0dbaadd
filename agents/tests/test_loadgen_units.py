"""Load generator pieces without a network: SSE parsing, HTTP parsing on split reads, schedules, prompts, output
checks, token accounting, spec validation and key handling."""

import asyncio
import json
import logging

import numpy as np
import pytest
from dossier_agent.contract import load_schedule
from dossier_agent.contract.load_spec import LoadSpec, SpecError, Target
from dossier_agent.loadgen import clients, output_checks, prompts
from dossier_agent.loadgen.http import Connection, Exchange, build_request
from dossier_agent.loadgen.sse import SSEParser
from dossier_agent.mockserver import MockConfig, MockServer
from hypothesis import given, settings
from hypothesis import strategies as st

# -- SSE -------------------------------------------------------------------------------------------------------------


def test_sse_events_split_anywhere_give_the_same_payloads():
    stream = (b'data: {"a": 1}\n\n: comment\n\ndata: {"b":\ndata: 2}\n\nevent: x\nid: 3\ndata: [DONE]\r\n\r\n'
              + "data: \u00e9t\u00e9\n\n".encode())
    whole = SSEParser().feed(stream)
    assert whole == ['{"a": 1}', '{"b":\n2}', "[DONE]", "\u00e9t\u00e9"]
    for cut in range(1, len(stream)):
        parser = SSEParser()
        assert parser.feed(stream[:cut]) + parser.feed(stream[cut:]) == whole


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)),
                        min_size=1, max_size=20), min_size=1, max_size=10), st.data())
def test_sse_round_trip_with_random_splits(payloads, data):
    newline = data.draw(st.sampled_from(["\n", "\r\n", "\r"]))
    stream = "".join(f"data: {p}{newline}{newline}" for p in payloads).encode()
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=6)))
    parser, out, last = SSEParser(), [], 0
    for cut in [*cuts, len(stream)]:
        out += parser.feed(stream[last:cut])
        last = cut
    assert out == payloads  # "data: " drops exactly the one space the stream put there


def test_sse_counts_unknown_lines_and_keeps_leftover():
    parser = SSEParser()
    assert parser.feed(b"garbage line\ndata: x\n\ndata: partial") == ["x"]
    assert parser.unknown_lines == 1 and parser.leftover() == "data: partial"


# -- HTTP parsing ----------------------------------------------------------------------------------------------------


class _Transport:
    def __init__(self):
        self.written, self.closed = [], False

    def write(self, data):
        self.written.append(data)

    def close(self):
        self.closed = True


def _reply(chunked: bool) -> bytes:
    server = MockServer(MockConfig(output_tokens=5))
    plan = {"tokens": 5, "prompt_tokens": 3, "stream": chunked, "chat": True, "usage": True, "model": "m"}
    return server._generation_bytes(plan, "rid-1")


@pytest.mark.parametrize("chunked", [True, False])
def test_http_parsing_is_the_same_for_any_split(chunked):
    blob = _reply(chunked)

    async def parse(pieces):
        loop = asyncio.get_running_loop()
        connection = Connection(None)
        connection.transport = _Transport()
        state = clients.StreamState(chat=True) if chunked else clients.WholeState("chat")
        exchange = Exchange(on_data=state.on_data, keep_body=not chunked)
        exchange.done = loop.create_future()
        connection.send(exchange, b"request")
        for piece in pieces:
            connection.data_received(piece)
        assert exchange.done.done() and exchange.error is None
        return state.finish(exchange)

    whole = asyncio.run(parse([blob]))
    assert whole.error is None and whole.output_tokens == 5 and whole.text.count("tok") == 5
    for cut in range(1, len(blob), 7):
        split = asyncio.run(parse([blob[:cut], blob[cut:]]))
        assert (split.error, split.output_tokens, split.text) == (whole.error, whole.output_tokens, whole.text)


def test_http_bad_chunk_is_a_protocol_error():
    async def go():
        loop = asyncio.get_running_loop()
        connection = Connection(None)
        connection.transport = _Transport()
        exchange = Exchange()
        exchange.done = loop.create_future()
        connection.send(exchange, b"x")
        connection.data_received(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
        return exchange, connection

    exchange, connection = asyncio.run(go())
    assert exchange.error.kind == "protocol_error" and connection.transport.closed


def test_build_request_and_target():
    target = Target.parse("https://api.example.com/v1/")
    assert (target.port, target.base_path, target.netloc) == (443, "/v1", "api.example.com")
    request = build_request("POST", target, "/chat/completions", {"X": "1"}, b"{}")
    assert request.startswith(b"POST /v1/chat/completions HTTP/1.1\r\nHost: api.example.com\r\n")
    assert request.endswith(b"Content-Length: 2\r\n\r\n{}")
    assert clients.api_path("/v1", "chat") == "/chat/completions"
    assert clients.api_path("", "embeddings") == "/v1/embeddings"
    with pytest.raises(ValueError):
        Target.parse("ftp://x")


# -- token accounting ------------------------------------------------------------------------------------------------


def test_spread_tokens_keeps_the_total():
    assert clients.spread_tokens(4, [1, 1, 1, 1]) == [1, 1, 1, 1]
    assert clients.spread_tokens(6, [4, 4, 12]) == [2, 1, 3]
    assert sum(clients.spread_tokens(3, [5, 5, 5, 5])) == 3
    assert clients.spread_tokens(0, []) == []


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 500), st.lists(st.integers(0, 40), min_size=1, max_size=40))
def test_spread_tokens_property(total, sizes):
    out = clients.spread_tokens(total, sizes)
    assert sum(out) == total and len(out) == len(sizes) and min(out) >= 0
    if total >= len(sizes):
        assert min(out) >= 1


def test_stream_with_per_chunk_usage_uses_it_and_role_chunk_is_not_a_token():
    events = [{"choices": [{"delta": {"role": "assistant"}}]},
              {"choices": [{"delta": {"content": "ab"}}], "usage": {"completion_tokens": 2}},
              {"choices": [{"delta": {"content": "c"}}], "usage": {"completion_tokens": 3}},
              {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}]
    state = clients.StreamState(chat=True)
    for i, event in enumerate(events):
        state.on_data(f"data: {json.dumps(event)}\n\n".encode(), 1.0 + i)
    state.on_data(b"data: [DONE]\n\n", 9.0)
    exchange = Exchange()
    exchange.status = 200
    outcome = state.finish(exchange)
    assert outcome.chunk_times == [2.0, 3.0] and outcome.chunk_tokens == [2, 1]
    assert (outcome.output_tokens, outcome.input_tokens, outcome.usage_source) == (3, 7, "server per chunk")


def test_reasoning_content_counts_as_generated():
    state = clients.StreamState(chat=True)
    state.on_data(b'data: {"choices":[{"delta":{"reasoning_content":"hm","content":null}}]}\n\ndata: [DONE]\n\n', 1.0)
    exchange = Exchange()
    exchange.status = 200
    assert state.finish(exchange).chunk_times == [1.0]


# -- schedules -------------------------------------------------------------------------------------------------------


def test_schedules_are_bounded_sorted_and_have_the_rate():
    constant = load_schedule.build_schedule({"kind": "constant", "rate": 100}, 10)
    assert constant.size == 1000 and np.allclose(np.diff(constant), 0.01)
    poisson = load_schedule.build_schedule({"kind": "poisson", "rate": 200}, 50, seed=1)
    assert abs(poisson.size / 50 - 200) < 10 and np.all(np.diff(poisson) >= 0) and poisson.max() < 50
    gaps = np.diff(load_schedule.build_schedule({"kind": "gamma", "rate": 200, "burstiness": 0.25}, 50, seed=2))
    assert abs(1 / gaps.mean() - 200) < 20
    assert gaps.std() / gaps.mean() == pytest.approx(2.0, rel=0.15)  # CV of gamma(k) = 1/sqrt(k)
    capped = load_schedule.build_schedule({"kind": "poisson", "rate": 1e6}, 100, max_requests=500)
    assert capped.size == 500
    burst = load_schedule.build_schedule({"kind": "burst", "burst_size": 5, "period_s": 1.0}, 3)
    assert burst.tolist() == [0.0] * 5 + [1.0] * 5 + [2.0] * 5
    ramp = load_schedule.build_schedule({"kind": "ramp", "start_rate": 10, "end_rate": 30}, 10)
    assert ramp.size == 200 and (ramp < 5).sum() == pytest.approx(75, abs=2)
    assert load_schedule.build_schedule({"kind": "concurrency", "concurrency": 4}, 10) is None


def test_trace_replay_from_file_and_bad_lines(tmp_path):
    good = tmp_path / "trace.txt"
    good.write_text("100.0\n100.5\n# comment\n{\"timestamp\": 102}\n")
    times = load_schedule.build_schedule({"kind": "trace", "path": str(good), "speed": 2.0}, 10)
    assert times.tolist() == [0.0, 0.25, 1.0]
    bad = tmp_path / "bad.txt"
    bad.write_text("1\nnope\n3\n{\"t\": 1}\n")
    with pytest.raises(load_schedule.ScheduleError, match=r"line 2.*line 4"):
        load_schedule.build_schedule({"kind": "trace", "path": str(bad)}, 10)


@pytest.mark.parametrize("profile", [{"kind": "nope"}, {"kind": "constant", "rate": -1},
                                     {"kind": "gamma", "rate": 1}, {"kind": "concurrency", "concurrency": 0}])
def test_bad_profiles_are_refused(profile):
    with pytest.raises(load_schedule.ScheduleError):
        load_schedule.build_schedule(profile, 10)


# -- prompts and checks ----------------------------------------------------------------------------------------------


def test_dataset_reports_every_bad_line_with_its_number():
    lines = ['{"prompt": "hello"}', "not json", '{"messages": [{"role": "user", "content": "x"}]}',
             '{"prompt": "a", "messages": []}', "", '{"prompt": "b", "max_tokens": 0}', '{"prompt": "c", "regex": "("}']
    with pytest.raises(prompts.DatasetError) as caught:
        prompts.load_dataset(lines)
    text = " ".join(caught.value.problems)
    for number in (2, 4, 6, 7):
        assert f"line {number}:" in text
    assert "line 1:" not in text and "line 3:" not in text
    items = prompts.load_dataset(lines[:1] + lines[2:3])
    assert items[1].messages[0]["content"] == "x" and items[0].line == 1


def test_unsupported_schema_keyword_is_refused_before_the_run():
    items = prompts.load_dataset(['{"prompt": "p", "json_schema": {"type": "object", "patternProperties": {}}}'])
    with pytest.raises(prompts.DatasetError, match=r"line 1.*patternProperties"):
        output_checks.check_items(items)


def test_synthetic_lengths_match_mean_and_p95():
    rng = np.random.default_rng(0)
    lengths = prompts.lognormal_lengths(rng, 500, 1200, 20000)
    assert lengths.mean() == pytest.approx(500, rel=0.03)
    assert np.percentile(lengths, 95) == pytest.approx(1200, rel=0.05)
    assert set(prompts.lognormal_lengths(rng, 64, None, 10)) == {64}
    with pytest.raises(ValueError):
        prompts.lognormal_lengths(rng, 10, 100, 5)


def test_token_counter_calibration():
    counter = prompts.TokenCounter()
    fit = counter.calibrate([8, 32, 128], [8 * 1.3 + 9, 32 * 1.3 + 9, 128 * 1.3 + 9])
    assert fit["per_word"] == pytest.approx(1.3) and fit["intercept"] == pytest.approx(9)
    assert counter.words_for(139) == 100
    with pytest.raises(ValueError):
        counter.calibrate([8, 8], [10, 10])


def test_output_checks():
    item = prompts.PromptItem(prompt="p", regex=r"\d+", json_schema=None)
    assert output_checks.check_output("", 0, None) == "empty"
    assert output_checks.check_output("abc 12", 3, item) == "ok"
    assert output_checks.check_output("abc", 3, item) == "regex"
    assert output_checks.check_output("x", 3, None, bounds=(5, None)) == "too_short"
    exact = prompts.PromptItem(prompt="p", expected="Paris")
    assert output_checks.check_output(" Paris\n", 1, exact) == "ok"
    assert output_checks.check_output("Lyon", 1, exact) == "exact"
    schema = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer", "minimum": 1}},
              "additionalProperties": False}
    typed = prompts.PromptItem(prompt="p", json_schema=schema)
    assert output_checks.check_output('```json\n{"n": 2}\n```', 5, typed) == "ok"
    assert output_checks.check_output('{"n": 0}', 5, typed) == "schema"
    assert output_checks.check_output('{"n": 1, "m": 2}', 5, typed) == "schema"
    assert output_checks.check_output("{nope", 5, typed) == "json"
    assert output_checks.check_generic(200, b'{"data": [{"url": "x"}]}', {"json_path": "data.0.url"}) == "ok"
    assert output_checks.check_generic(200, b'{"data": []}', {"json_path": "data.0.url"}) == "json_path"
    assert output_checks.check_generic(500, b"", {}) == "status"


# -- spec and API key ------------------------------------------------------------------------------------------------


def _spec(**extra):
    return {"endpoint": {"url": "http://127.0.0.1:9"}, "profile": {"kind": "constant", "rate": 1},
            "duration_s": 20, "warmup_s": 2, "cooldown_s": 2, "prompts": {"synthetic": {"input_tokens_mean": 8}},
            **extra}


@pytest.mark.parametrize("bad", [{"duration_s": 0}, {"warmup_s": 15, "cooldown_s": 10}, {"min_window_s": 30},
                                 {"slo": {"p99": 1}}, {"profile": {"kind": "constant"}}, {"surprise": 1},
                                 {"endpoint": {"url": "nope"}}, {"max_requests": 0}])
def test_spec_validation(bad):
    with pytest.raises(SpecError):
        LoadSpec.from_dict(_spec(**bad))


def test_api_key_from_env_or_file_and_never_in_the_stored_spec(tmp_path, caplog):
    key_file = tmp_path / "key"
    key_file.write_text("sk-file-secret\n")
    assert clients.read_api_key({"api_key_file": str(key_file)}) == "sk-file-secret"
    assert clients.read_api_key({"api_key_env": "K"}, environ={"K": "sk-env-secret"}) == "sk-env-secret"
    with pytest.raises(clients.EndpointError) as caught:
        clients.read_api_key({"api_key_env": "MISSING_KEY_VAR"}, environ={})
    assert "MISSING_KEY_VAR" in str(caught.value)
    spec = LoadSpec.from_dict(_spec(endpoint={"url": "http://127.0.0.1:9", "api_key_file": str(key_file),
                                              "headers": {"Authorization": "Bearer sk-header-secret"}}))
    stored = json.dumps(spec.redacted())
    assert "sk-" not in stored and str(key_file) in stored
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("dossier_agent").info("spec %s", stored)
    assert "secret" not in caplog.text
