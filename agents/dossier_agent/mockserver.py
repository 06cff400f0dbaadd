"""A loopback mock of an OpenAI-compatible serving stack, fast enough to benchmark a load generator against.

Stdlib only (asyncio protocol, HTTP/1.1 with keep-alive, SSE in chunked transfer encoding, as uvicorn sends it).
Everything a test or a phase-3 check needs to inject, with no jitter unless asked:

- `ttft_s` (first generated token after the request arrived), `token_delay_s` (gap between tokens), `output_tokens`
  (default length when the request gives no `max_tokens`), `tokens_per_chunk` (a chunk is not always one token),
  `role_chunk` (a role-only first chunk sent at once, which must not count as the first token);
- `slots` parallel slots, each request holding one for a fixed `service_time_s` (a FIFO queue in front, as a
  batch-limited engine; slots are kept in virtual time, so event-loop wake-up delays never accumulate): the true
  capacity is exactly `slots / service_time_s`;
- `natural_tokens`: the "model" stops at that length unless the request sets `ignore_eos` or `min_tokens`;
- faults, for every `fault_every`-th request or per request with the header `x-mock-fault`: `status:NNN` (an error
  reply), `stall` (stops sending after `stall_after_tokens` tokens and holds the connection), `malformed` (a data line
  that is not JSON), `close` (drops the connection mid-stream), `hang` (never answers);
- `startup_delay_s` before listening, and the moment it listens logged as "ready" (`ready_unix`, and a `MOCK_READY`
  line on stdout when run as a command), so a phase-3 cold-start check can time a restart against it.

Endpoints: `POST /v1/chat/completions`, `POST /v1/completions`, `POST /v1/embeddings`, `GET /v1/models`,
`GET /health`, `GET /metrics` (Prometheus text), `POST /generic` (a JSON service: answers
`{"ok": true, "id": …, "echo": body}` after `ttft_s`), `GET /mock/stats`. Token counting of the mock: one token
per whitespace-separated word, plus `chat_template_tokens` (default 0) on every chat request's
`usage.prompt_tokens`, as a chat template adds.

Run in a thread with `with MockServer(MockConfig(...)) as server: server.url`, or as a process:
`python -m dossier_agent.mockserver --port 8000 [--ttft-ms 50 --token-ms 10 ...]`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import heapq
import json
import sys
import threading
import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any

_MAX_HEAD = 64 * 1024
_RID = "R1D-PLACEH0LDER-7f3a"  # stands for the request id in cached reply templates
_MAX_BODY = 16 * 1024 * 1024
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 408: "Request Timeout", 413: "Payload Too Large",
            429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable",
            504: "Gateway Timeout"}


@dataclass
class MockConfig:
    ttft_s: float = 0.0
    token_delay_s: float = 0.0
    output_tokens: int = 16
    tokens_per_chunk: int = 1
    role_chunk: bool = True
    natural_tokens: int | None = None
    slots: int | None = None
    service_time_s: float | None = None
    fault: str | None = None
    fault_every: int = 0
    stall_after_tokens: int = 1
    stall_s: float = 30.0
    startup_delay_s: float = 0.0
    model: str = "mock-model"
    embedding_dim: int = 8
    chat_template_tokens: int = 0

    def __post_init__(self):
        if self.output_tokens < 1 or self.tokens_per_chunk < 1:
            raise ValueError("output_tokens and tokens_per_chunk must be at least 1")
        if self.slots is not None and (self.slots < 1 or not self.service_time_s or self.service_time_s <= 0):
            raise ValueError("slots needs a positive service_time_s")
        for name in ("ttft_s", "token_delay_s", "stall_s", "startup_delay_s", "chat_template_tokens"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")


@dataclass
class MockStats:
    requests: int = 0
    completed: int = 0
    faults: int = 0
    active: int = 0
    peak_active: int = 0
    in_slots: int = 0
    peak_in_slots: int = 0
    connections: int = 0
    by_path: dict[str, int] = field(default_factory=dict)


def _count_words(value: Any) -> int:
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, list):
        return sum(_count_words(item) for item in value)
    if isinstance(value, dict):
        return _count_words(value.get("content", "")) + (_count_words(value.get("text", "")) if "text" in value else 0)
    return 0


def _head(status: int, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}"]
    lines += [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


class _Request:
    __slots__ = ("body", "headers", "method", "path")

    def __init__(self, method: str, path: str, headers: dict[str, str], body: bytes):
        self.method, self.path, self.headers, self.body = method, path, headers, body


class _Connection(asyncio.Protocol):
    def __init__(self, server: MockServer):
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.queue: list[_Request] = []
        self.busy = False
        self.closed = False

    def connection_made(self, transport):
        self.transport = transport
        self.server.stats.connections += 1

    def connection_lost(self, exc):
        self.closed = True

    def data_received(self, data: bytes):
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > _MAX_HEAD:
                    self._fail(413)
                return
            head = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
            try:
                method, path, _version = head[0].split(" ", 2)
            except ValueError:
                self._fail(400)
                return
            headers = {}
            for line in head[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0") or 0)
            if length > _MAX_BODY:
                self._fail(413)
                return
            if len(self.buffer) < end + 4 + length:
                return
            body = bytes(self.buffer[end + 4:end + 4 + length])
            del self.buffer[:end + 4 + length]
            self.queue.append(_Request(method, path.split("?", 1)[0], headers, body))
            if not self.busy:
                self._next()

    def _fail(self, status: int):
        if self.transport and not self.closed:
            self.transport.write(_head(status, [("Content-Length", "0"), ("Connection", "close")]))
            self.transport.close()

    def _next(self):
        while self.queue and not self.closed:
            request = self.queue.pop(0)
            immediate = self.server.handle_fast(request, self)
            if immediate:
                continue
            self.busy = True
            task = asyncio.get_running_loop().create_task(self.server.handle_slow(request, self))
            self.server.tasks.add(task)
            task.add_done_callback(self._done)
            return

    def _done(self, task):
        self.server.tasks.discard(task)
        self.busy = False
        if not self.closed:
            self._next()

    def write(self, data: bytes) -> bool:
        if self.closed or self.transport is None:
            return False
        self.transport.write(data)
        return True


class MockServer:
    """The mock, serving from its own event loop in a daemon thread (or `serve_forever` in a process)."""

    def __init__(self, config: MockConfig | None = None, host: str = "127.0.0.1", port: int = 0):
        self.config = config or MockConfig()
        self.host, self.port = host, port
        self.stats = MockStats()
        self.tasks: set[asyncio.Task] = set()
        self.ready_unix: float | None = None
        self.ready_monotonic: float | None = None
        self.log: list[dict[str, Any]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._stop: asyncio.Event | None = None
        self._slot_free: list[float] | None = None
        self._counter = 0
        self._templates: dict[tuple, bytes] = {}

    # -- lifecycle -------------------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start_async(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        if self.config.slots:
            self._slot_free = [0.0] * self.config.slots
        if self.config.startup_delay_s:
            await asyncio.sleep(self.config.startup_delay_s)
        self._server = await self._loop.create_server(lambda: _Connection(self), self.host, self.port, backlog=4096)
        self.port = self._server.sockets[0].getsockname()[1]
        self.ready_unix, self.ready_monotonic = time.time(), time.monotonic()
        self.log.append({"event": "ready", "unix": self.ready_unix, "url": self.url})

    async def stop_async(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self.tasks):
            task.cancel()
        if self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)

    async def serve_forever(self, announce=None) -> None:
        await self.start_async()
        if announce:
            announce(self)
        try:
            await self._stop.wait()
        finally:
            await self.stop_async()

    def start(self, timeout_s: float = 10.0) -> MockServer:
        errors: list[BaseException] = []

        def main():
            try:
                asyncio.run(self.serve_forever(announce=lambda _server: self._started.set()))
            except BaseException as error:  # reported to the starting thread
                errors.append(error)
                self._started.set()

        self._thread = threading.Thread(target=main, name="dossier-mockserver", daemon=True)
        self._thread.start()
        if not self._started.wait(timeout_s + self.config.startup_delay_s):
            raise TimeoutError("the mock server did not start")
        if errors:
            raise errors[0]
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and self._thread is not None:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(10)

    def __enter__(self) -> MockServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def snapshot(self) -> dict[str, Any]:
        return asdict(self.stats) | {"ready_unix": self.ready_unix, "config": asdict(self.config)}

    # -- request handling ------------------------------------------------------------------------------------------
    def _fault_for(self, request: _Request) -> str | None:
        header = request.headers.get("x-mock-fault")
        if header:
            return header
        if self.config.fault and self.config.fault_every > 0 and self._counter % self.config.fault_every == 0:
            return self.config.fault
        return None

    def _plan(self, request: _Request) -> dict[str, Any] | None:
        """What to send for a generation request; None when the body is unusable."""
        try:
            body = json.loads(request.body or b"{}")
        except ValueError:
            return None
        if not isinstance(body, dict):
            return None
        tokens = body.get("max_tokens", body.get("max_completion_tokens", self.config.output_tokens))
        if not isinstance(tokens, int) or tokens < 1:
            return None
        natural = self.config.natural_tokens
        if natural is not None and not body.get("ignore_eos") and int(body.get("min_tokens") or 0) < tokens:
            tokens = max(min(tokens, natural), int(body.get("min_tokens") or 0), 1)
        chat = request.path.endswith("/chat/completions")
        prompt = _count_words(body.get("messages") if chat else body.get("prompt", ""))
        if chat:
            prompt += self.config.chat_template_tokens
        options = body.get("stream_options") or {}
        return {"tokens": tokens, "prompt_tokens": prompt, "stream": bool(body.get("stream")), "chat": chat,
                "usage": bool(options.get("include_usage")), "model": body.get("model") or self.config.model}

    def _prometheus(self) -> str:
        """The counters in Prometheus' text format, as a serving stack's /metrics endpoint exposes them."""
        stats = self.stats
        lines = ["# HELP mock_requests_total Requests received.", "# TYPE mock_requests_total counter"]
        lines += [f'mock_requests_total{{path="{path}"}} {count}' for path, count in sorted(stats.by_path.items())]
        for name, value, kind, text in (
            ("mock_completed_total", stats.completed, "counter", "Generations completed."),
            ("mock_faults_total", stats.faults, "counter", "Faults injected."),
            ("mock_active_requests", stats.active, "gauge", "Requests in flight."),
            ("mock_ready_timestamp_seconds", self.ready_unix or 0, "gauge", "When the server became ready."),
        ):
            lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}", f"{name} {value}"]
        return "\n".join(lines) + "\n"

    def _json_reply(self, status: int, payload: Any, request_id: str) -> bytes:
        data = json.dumps(payload, separators=(",", ":")).encode()
        return _head(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data))),
                              ("x-request-id", request_id)]) + data

    def _delayed(self) -> bool:
        config = self.config
        return bool(config.ttft_s or config.token_delay_s or config.slots)

    def handle_fast(self, request: _Request, connection: _Connection) -> bool:
        """Answer at once when nothing is delayed and no fault applies; False: `handle_slow` must take it."""
        self._counter += 1
        self.stats.requests += 1
        self.stats.by_path[request.path] = self.stats.by_path.get(request.path, 0) + 1
        request_id = request.headers.get("x-request-id") or f"mock-{self._counter}"
        request.headers["x-request-id"] = request_id
        fault = self._fault_for(request)
        request.headers["x-mock-fault-chosen"] = fault or ""
        if fault or self._delayed() or request.path in ("/generic",):
            return False
        if request.path in ("/v1/chat/completions", "/v1/completions"):
            plan = self._plan(request)
            if plan is None:
                connection.write(self._json_reply(400, {"error": {"message": "bad request"}}, request_id))
                return True
            key = (plan["tokens"], plan["prompt_tokens"], plan["stream"], plan["chat"], plan["usage"], plan["model"])
            template = self._templates.get(key)
            if template is None:
                template = self._generation_bytes(plan, _RID)
                if len(self._templates) < 256:
                    self._templates[key] = template
            # The template's body has a fixed-width id, so chunk sizes and Content-Length stay right.
            body_id = (request_id.encode("latin-1") + b"-" * len(_RID))[:len(_RID)]
            reply = template.replace(_RID.encode(), body_id)
            head_end = reply.index(b"\r\n\r\n")
            connection.write(reply[:head_end].replace(body_id, request_id.encode("latin-1")) + reply[head_end:])
            self.stats.completed += 1
            return True
        connection.write(self._simple(request, request_id))
        return True

    def _simple(self, request: _Request, request_id: str) -> bytes:
        if request.path == "/health":
            return self._json_reply(200, {"status": "ok"}, request_id)
        if request.path == "/v1/models":
            return self._json_reply(200, {"object": "list", "data": [{"id": self.config.model, "object": "model"}]},
                                    request_id)
        if request.path == "/mock/stats":
            return self._json_reply(200, self.snapshot(), request_id)
        if request.path == "/metrics":
            data = self._prometheus().encode()
            return _head(200, [("Content-Type", "text/plain; version=0.0.4"), ("Content-Length", str(len(data))),
                               ("x-request-id", request_id)]) + data
        if request.path == "/v1/embeddings":
            try:
                body = json.loads(request.body or b"{}")
            except ValueError:
                return self._json_reply(400, {"error": {"message": "bad json"}}, request_id)
            items = body.get("input", "")
            items = items if isinstance(items, list) else [items]
            data = [{"object": "embedding", "index": i, "embedding": [0.0] * self.config.embedding_dim}
                    for i in range(len(items))]
            prompt = _count_words(items)
            return self._json_reply(200, {"object": "list", "data": data, "model": self.config.model,
                                          "usage": {"prompt_tokens": prompt, "total_tokens": prompt}}, request_id)
        return self._json_reply(404, {"error": {"message": f"no route {request.path}"}}, request_id)

    def _event(self, plan: dict[str, Any], request_id: str, payload: dict[str, Any]) -> bytes:
        base = {"id": request_id, "object": "chat.completion.chunk" if plan["chat"] else "text_completion",
                "created": 0, "model": plan["model"]}
        return _chunk(b"data: " + json.dumps(base | payload, separators=(",", ":")).encode() + b"\n\n")

    def _token_event(self, plan: dict[str, Any], request_id: str, count: int) -> bytes:
        text = " tok" * count
        choice = {"index": 0, "delta": {"content": text}} if plan["chat"] else {"index": 0, "text": text}
        return self._event(plan, request_id, {"choices": [choice]})

    def _stream_head(self, request_id: str) -> bytes:
        return _head(200, [("Content-Type", "text/event-stream"), ("Transfer-Encoding", "chunked"),
                           ("Cache-Control", "no-cache"), ("x-request-id", request_id)])

    def _tail(self, plan: dict[str, Any], request_id: str) -> bytes:
        out = b""
        if plan["usage"]:
            usage = {"prompt_tokens": plan["prompt_tokens"], "completion_tokens": plan["tokens"],
                     "total_tokens": plan["prompt_tokens"] + plan["tokens"]}
            out += self._event(plan, request_id, {"choices": [], "usage": usage})
        return out + _chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"

    def _chunk_sizes(self, tokens: int) -> list[int]:
        per = self.config.tokens_per_chunk
        return [min(per, tokens - start) for start in range(0, tokens, per)]

    def _whole_reply(self, plan: dict[str, Any], request_id: str) -> bytes:
        text = " tok" * plan["tokens"]
        if plan["chat"]:
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}
        else:
            choice = {"index": 0, "text": text, "finish_reason": "length"}
        usage = {"prompt_tokens": plan["prompt_tokens"], "completion_tokens": plan["tokens"],
                 "total_tokens": plan["prompt_tokens"] + plan["tokens"]}
        return self._json_reply(200, {"id": request_id, "object": "chat.completion" if plan["chat"] else
                                      "text_completion", "model": plan["model"], "choices": [choice],
                                      "usage": usage}, request_id)

    def _generation_bytes(self, plan: dict[str, Any], request_id: str) -> bytes:
        if not plan["stream"]:
            return self._whole_reply(plan, request_id)
        parts = [self._stream_head(request_id)]
        if self.config.role_chunk and plan["chat"]:
            parts.append(self._event(plan, request_id, {"choices": [{"index": 0, "delta": {"role": "assistant"}}]}))
        parts += [self._token_event(plan, request_id, size) for size in self._chunk_sizes(plan["tokens"])]
        parts.append(self._tail(plan, request_id))
        return b"".join(parts)

    async def handle_slow(self, request: _Request, connection: _Connection) -> None:
        stats = self.stats
        stats.active += 1
        stats.peak_active = max(stats.peak_active, stats.active)
        request_id = request.headers["x-request-id"]
        fault = request.headers.pop("x-mock-fault-chosen", "") or None
        arrived = time.monotonic()
        try:
            if fault:
                stats.faults += 1
            if fault == "hang":
                await asyncio.sleep(self.config.stall_s)
                return
            if fault and fault.startswith("status:"):
                status = int(fault.split(":", 1)[1])
                connection.write(self._json_reply(status, {"error": {"message": f"injected {status}"}}, request_id))
                return
            if request.path == "/generic":
                await self._sleep_until(arrived + self.config.ttft_s)
                try:
                    echo = json.loads(request.body or b"null")
                except ValueError:
                    echo = None
                connection.write(self._json_reply(200, {"ok": True, "id": request_id, "echo": echo}, request_id))
                stats.completed += 1
                return
            if request.path not in ("/v1/chat/completions", "/v1/completions"):
                connection.write(self._simple(request, request_id))
                return
            plan = self._plan(request)
            if plan is None:
                connection.write(self._json_reply(400, {"error": {"message": "bad request"}}, request_id))
                return
            if self._slot_free is not None:
                # Virtual-time slots: the request takes the slot that frees first, starts when it frees (or now)
                # and holds it exactly service_time_s, so late wake-ups of the event loop never add up and the
                # capacity is exactly slots / service_time_s.
                free_at = heapq.heappop(self._slot_free)
                start = max(arrived, free_at)
                heapq.heappush(self._slot_free, start + self.config.service_time_s)
                busy = sum(1 for moment in self._slot_free if moment > start)  # in virtual time, this one included
                stats.peak_in_slots = max(stats.peak_in_slots, busy)
                await self._sleep_until(start)
                stats.in_slots += 1
                try:
                    await self._generate(plan, request_id, connection, start, fault)
                finally:
                    stats.in_slots -= 1
            else:
                await self._generate(plan, request_id, connection, arrived, fault)
        finally:
            stats.active -= 1

    async def _sleep_until(self, moment: float) -> None:
        delay = moment - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)

    def _token_times(self, plan: dict[str, Any], start: float) -> list[float]:
        """Absolute send time of each chunk (no drift: every time from `start`)."""
        sizes = self._chunk_sizes(plan["tokens"])
        config = self.config
        if config.slots:
            step = config.service_time_s / len(sizes)
            return [start + step * (i + 1) for i in range(len(sizes))]
        times, produced = [], 0
        for size in sizes:
            produced += size
            times.append(start + config.ttft_s + config.token_delay_s * (produced - 1))
        return times

    async def _generate(self, plan: dict[str, Any], request_id: str, connection: _Connection, start: float,
                        fault: str | None) -> None:
        if not plan["stream"]:
            times = self._token_times(plan, start)
            await self._sleep_until(times[-1])
            connection.write(self._whole_reply(plan, request_id))
            self.stats.completed += 1
            return
        head = self._stream_head(request_id)
        if self.config.role_chunk and plan["chat"]:
            head += self._event(plan, request_id, {"choices": [{"index": 0, "delta": {"role": "assistant"}}]})
        if not connection.write(head):
            return
        sizes = self._chunk_sizes(plan["tokens"])
        sent_tokens = 0
        for moment, size in zip(self._token_times(plan, start), sizes, strict=True):
            await self._sleep_until(moment)
            if fault == "stall" and sent_tokens >= self.config.stall_after_tokens:
                await asyncio.sleep(self.config.stall_s)
                return
            if fault == "malformed" and sent_tokens >= 1:
                connection.write(_chunk(b"data: {\"choices\": [{\"delta\": {\"content\": \n\n"))
                connection.write(self._tail({**plan, "usage": False}, request_id))
                return
            if fault == "close" and sent_tokens >= 1:
                if connection.transport is not None:
                    connection.transport.close()
                return
            if not connection.write(self._token_event(plan, request_id, size)):
                return
            sent_tokens += size
        connection.write(self._tail(plan, request_id))
        self.stats.completed += 1


def _parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, MockConfig]:
    parser = argparse.ArgumentParser(prog="python -m dossier_agent.mockserver", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--ttft-ms", type=float, default=0.0)
    parser.add_argument("--token-ms", type=float, default=0.0)
    parser.add_argument("--service-ms", type=float, default=None)
    parser.add_argument("--stall-s", type=float, default=30.0)
    parser.add_argument("--startup-delay-s", type=float, default=0.0)
    for item in fields(MockConfig):
        if item.name in ("output_tokens", "tokens_per_chunk", "slots", "natural_tokens", "fault_every",
                         "stall_after_tokens"):
            parser.add_argument("--" + item.name.replace("_", "-"), type=int, default=item.default)
    parser.add_argument("--fault", default=None)
    parser.add_argument("--no-role-chunk", action="store_true")
    args = parser.parse_args(argv)
    config = MockConfig(
        ttft_s=args.ttft_ms / 1000, token_delay_s=args.token_ms / 1000, output_tokens=args.output_tokens,
        tokens_per_chunk=args.tokens_per_chunk, role_chunk=not args.no_role_chunk, natural_tokens=args.natural_tokens,
        slots=args.slots, service_time_s=None if args.service_ms is None else args.service_ms / 1000,
        fault=args.fault, fault_every=args.fault_every, stall_after_tokens=args.stall_after_tokens,
        stall_s=args.stall_s, startup_delay_s=args.startup_delay_s,
    )
    return args, config


def main(argv: list[str] | None = None) -> int:
    args, config = _parse_args(argv)
    server = MockServer(config, host=args.host, port=args.port)

    def announce(running: MockServer) -> None:
        line = {"event": "ready", "url": running.url, "port": running.port, "ready_unix": running.ready_unix}
        print("MOCK_READY " + json.dumps(line), flush=True)

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(server.serve_forever(announce=announce))
    return 0


if __name__ == "__main__":
    sys.exit(main())
