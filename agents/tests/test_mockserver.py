"""The loopback mock: ready time, token pacing, slots, natural length, multi-token chunks, faults."""

import json
import socket
import time

import httpx
import pytest
from dossier_agent.mockserver import MockConfig, MockServer

CLIENT = httpx.Client(timeout=5)


def chat(url, headers=None, client=CLIENT, **body):
    payload = {"messages": [{"role": "user", "content": "one two three"}], "max_tokens": 4, "stream": True,
               "stream_options": {"include_usage": True}} | body
    if client is not None:
        with client.stream("POST", url + "/v1/chat/completions", json=payload, headers=headers or {}) as reply:
            events, times = [], []
            for line in reply.iter_lines():
                if line.startswith("data: "):
                    events.append(line[6:])
                    times.append(time.monotonic())
            return reply, events, times


def test_ready_is_logged_and_startup_delay_is_honoured():
    began = time.time()
    with MockServer(MockConfig(startup_delay_s=0.2)) as server:
        assert server.ready_unix - began >= 0.19
        assert server.log[0]["event"] == "ready"
        assert httpx.get(server.url + "/health").json() == {"status": "ok"}


def test_stream_shape_usage_and_request_id():
    with MockServer(MockConfig()) as server:
        reply, events, _ = chat(server.url, headers={"x-request-id": "abc"})
    assert reply.headers["x-request-id"] == "abc"
    assert json.loads(events[0])["choices"][0]["delta"] == {"role": "assistant"}
    contents = [json.loads(e)["choices"][0]["delta"]["content"] for e in events[1:5]]
    assert contents == [" tok"] * 4
    assert json.loads(events[5])["usage"] == {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
    assert events[-1] == "[DONE]"


def test_token_pacing_and_multi_token_chunks():
    with MockServer(MockConfig(ttft_s=0.03, token_delay_s=0.02, tokens_per_chunk=2)) as server:
        _, events, times = chat(server.url, max_tokens=6)
        start = times[0]  # the role chunk leaves when the request arrives
    content = [e for e in events[1:] if e != "[DONE]" and json.loads(e)["choices"]]
    assert [json.loads(e)["choices"][0]["delta"]["content"] for e in content] == [" tok tok"] * 3
    # the chunk of tokens 2 and 3 leaves when token 2 is ready: 30 ms + 1 × 20 ms, then +40 ms, +40 ms
    assert times[1] - start == pytest.approx(0.05, abs=0.02)
    assert times[3] - times[1] == pytest.approx(0.08, abs=0.02)


def test_natural_length_unless_ignore_eos_or_min_tokens():
    with MockServer(MockConfig(natural_tokens=2)) as server:
        _, short, _ = chat(server.url, max_tokens=5)
        _, held, _ = chat(server.url, max_tokens=5, ignore_eos=True)
        _, minimum, _ = chat(server.url, max_tokens=5, min_tokens=5)
    usage = [json.loads(events[-2])["usage"]["completion_tokens"] for events in (short, held, minimum)]
    assert usage == [2, 5, 5]


def test_slots_queue_requests_for_a_fixed_service_time():
    import concurrent.futures

    with MockServer(MockConfig(slots=2, service_time_s=0.1)) as server:
        start = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda _: chat(server.url, max_tokens=2), range(4)))
        elapsed = time.monotonic() - start
        stats = server.snapshot()
    assert 0.19 <= elapsed < 0.45
    assert stats["peak_in_slots"] == 2 and stats["completed"] == 4


def test_faults_status_malformed_and_every_nth():
    with MockServer(MockConfig(fault="status:503", fault_every=2)) as server:
        statuses = [chat(server.url)[0].status_code for _ in range(4)]
        _, events, _ = chat(server.url, headers={"x-mock-fault": "malformed"})
        faults = server.stats.faults
    assert statuses == [200, 503, 200, 503]
    assert any(e.startswith("{\"choices\": [{\"delta\": {\"content\":") for e in events) and faults == 3


def test_stall_holds_the_connection():
    body = {"messages": [{"role": "user", "content": "x"}], "max_tokens": 4, "stream": True}
    with (MockServer(MockConfig(fault="stall", fault_every=1, stall_after_tokens=1, stall_s=5)) as server,
          httpx.Client(timeout=httpx.Timeout(0.3)) as client, pytest.raises(httpx.ReadTimeout),
          client.stream("POST", server.url + "/v1/chat/completions", json=body) as reply):
        for _ in reply.iter_lines():
            pass


def test_cli_prints_ready_line():
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    process = subprocess.Popen([sys.executable, "-m", "dossier_agent.mockserver", "--port", "0", "--ttft-ms", "1"],
                               stdout=subprocess.PIPE, text=True, cwd=root)
    try:
        line = process.stdout.readline()
        assert line.startswith("MOCK_READY ")
        port = json.loads(line.split(" ", 1)[1])["port"]
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    finally:
        process.terminate()
        process.wait(5)
