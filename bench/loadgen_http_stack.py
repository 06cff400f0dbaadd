"""Choose the HTTP stack of the load path by measurement: bare closed loops (concurrency 32, streaming chat
completions, 16 tokens, every byte read) on aiohttp, httpx, asyncio streams and an asyncio protocol, each pinned to
CPU 1 against the mock pinned to CPU 0, plus the agent's own client (`dossier_agent.loadgen`) doing the same with
every token time recorded.

    .venv/bin/python bench/loadgen_http_stack.py --seconds 20 --reps 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from urllib.parse import urlsplit

from loadgen_common import AGENTS, CHAT_BODY, PYTHON, PinnedMock, machine, run_client

BODY = json.dumps(CHAT_BODY).encode()
PATH = "/v1/chat/completions"


async def loop_aiohttp(url: str, concurrency: int, deadline: float) -> int:
    import aiohttp

    done = 0
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        async def worker():
            nonlocal done
            while time.monotonic() < deadline:
                async with session.post(url + PATH, data=BODY, headers={"Content-Type": "application/json"}) as r:
                    async for _line in r.content:
                        pass
                done += 1
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done


async def loop_httpx(url: str, concurrency: int, deadline: float) -> int:
    import httpx

    done = 0
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:
        async def worker():
            nonlocal done
            while time.monotonic() < deadline:
                async with client.stream("POST", url + PATH, content=BODY,
                                         headers={"Content-Type": "application/json"}) as r:
                    async for _line in r.aiter_lines():
                        pass
                done += 1
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done


def _request_bytes(url: str) -> bytes:
    parts = urlsplit(url)
    return (f"POST {PATH} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(BODY)}\r\n\r\n").encode() + BODY


async def loop_streams(url: str, concurrency: int, deadline: float) -> int:
    parts = urlsplit(url)
    request = _request_bytes(url)
    done = 0

    async def worker():
        nonlocal done
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        while time.monotonic() < deadline:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200")
            while True:
                size = int((await reader.readline()).strip(), 16)
                await reader.readexactly(size + 2)
                if size == 0:
                    break
            done += 1
        writer.close()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done


class _BareProtocol(asyncio.Protocol):
    """Minimal: waits for the chunked terminator of each reply (enough for a bare loop against the mock)."""

    def __init__(self):
        self.buffer = bytearray()
        self.waiter: asyncio.Future | None = None

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.buffer += data
        if self.buffer.endswith(b"\r\n0\r\n\r\n") and self.waiter is not None:
            self.buffer.clear()
            self.waiter.set_result(None)
            self.waiter = None


async def loop_protocol(url: str, concurrency: int, deadline: float) -> int:
    parts = urlsplit(url)
    request = _request_bytes(url)
    loop = asyncio.get_running_loop()
    done = 0

    async def worker():
        nonlocal done
        transport, protocol = await loop.create_connection(_BareProtocol, parts.hostname, parts.port)
        while time.monotonic() < deadline:
            protocol.waiter = loop.create_future()
            transport.write(request)
            await protocol.waiter
            done += 1
        transport.close()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done


async def loop_dossier(url: str, concurrency: int, deadline: float) -> int:
    sys.path.insert(0, str(AGENTS))
    from dossier_agent.contract.load_spec import LoadSpec
    from dossier_agent.loadgen.runner import run_load

    spec = LoadSpec.from_dict({
        "endpoint": {"url": url, "api": "chat"}, "profile": {"kind": "concurrency", "concurrency": concurrency},
        "duration_s": max(1.0, deadline - time.monotonic()), "warmup_s": 0, "cooldown_s": 0, "min_window_s": 0,
        "prompts": {"synthetic": {"input_tokens_mean": 32, "output_tokens": 16}}, "output_tokens": 16,
    })
    result = await run_load(spec)
    # the rate inside the load window (setup, prompt building and the summary are not the HTTP stack's cost)
    throughput = result.summary["throughput"]
    return round(throughput["requests_per_s"] * result.summary["duration_s"]), result.summary["duration_s"]


LOOPS = {"aiohttp": loop_aiohttp, "httpx": loop_httpx, "asyncio-streams": loop_streams,
         "asyncio-protocol": loop_protocol, "dossier-loadgen": loop_dossier}


def client_main(name: str, url: str, seconds: float, concurrency: int) -> None:
    began = time.monotonic()
    done = asyncio.run(LOOPS[name](url, concurrency, began + seconds))
    elapsed = time.monotonic() - began
    if isinstance(done, tuple):
        done, elapsed = done
    print(json.dumps({"client": name, "completed": done, "seconds": elapsed, "rate": done / elapsed}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--clients", default=",".join(LOOPS))
    parser.add_argument("--client")
    parser.add_argument("--url")
    args = parser.parse_args()
    if args.client:
        client_main(args.client, args.url, args.seconds, args.concurrency)
        return
    results = []
    with PinnedMock() as server:
        for rep in range(1, args.reps + 1):
            for name in args.clients.split(","):
                run = run_client([PYTHON, __file__, "--client", name, "--url", server.url, "--seconds",
                                  str(args.seconds), "--concurrency", str(args.concurrency)], server,
                                 timeout_s=args.seconds * 3 + 60)
                row = json.loads(run["stdout"].strip().splitlines()[-1]) if run["rc"] == 0 else {"client": name,
                                                                                                 "error": run["stderr"]}
                row |= {"rep": rep, "server_cpu_share": round(run["server_cpu_share"], 3)}
                results.append(row)
                print(json.dumps(row), flush=True)
    print(json.dumps({"machine": machine(), "command": " ".join(sys.argv), "results": results}))


if __name__ == "__main__":
    main()
