"""The HTTP/1.1 client of the load path: asyncio protocols, keep-alive connection pool, incremental parsing.

Chosen by measurement over aiohttp, httpx and asyncio streams (bench/loadgen_http_stack.py, docs/PERFORMANCE.md):
parsing happens inside `data_received`, so each chunk is timestamped when its bytes arrive (not when a coroutine
gets around to it) and a streamed reply costs one future, not one coroutine switch per line.

Supports: http and https (TLS through `ssl`), Content-Length, chunked and close-delimited bodies, keep-alive reuse,
per-request connect / total / idle (stall) timeouts. Not supported: HTTP proxies, HTTP/2, content encodings (the
client asks for `identity`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import Callable

from dossier_agent.contract.load_spec import Target

MAX_HEAD_BYTES = 64 * 1024

_clock = time.monotonic


class RequestFailed(Exception):
    """A request that did not produce a complete HTTP reply; `kind` is the error kind recorded."""

    def __init__(self, kind: str, detail: str = ""):
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind
        self.detail = detail


class Exchange:
    """One request/response on a connection. Subclasses (or callbacks) consume the body as it arrives.

    Times (`time.monotonic()`): `sent` (just before the request bytes are written), `first_byte`, `end`.
    """

    __slots__ = ("body_parts", "done", "end", "error", "first_byte", "headers", "keep_body", "last_data",
                 "on_data", "sent", "status")

    def __init__(self, on_data: Callable[[bytes, float], None] | None = None, keep_body: bool = False):
        self.status = 0
        self.headers: dict[str, str] = {}
        self.sent = 0.0
        self.first_byte = 0.0
        self.end = 0.0
        self.last_data = 0.0
        self.error: RequestFailed | None = None
        self.on_data = on_data
        self.keep_body = keep_body
        self.body_parts: list[bytes] = []
        self.done: asyncio.Future | None = None

    @property
    def body(self) -> bytes:
        return b"".join(self.body_parts)

    def deliver(self, data: bytes, now: float) -> None:
        if self.on_data is not None:
            self.on_data(data, now)
        if self.keep_body:
            self.body_parts.append(data)

    def finish(self, now: float, error: RequestFailed | None = None) -> None:
        if self.done is None or self.done.done():
            return
        self.end = now
        self.error = error
        self.done.set_result(None)


_HEAD, _LENGTH, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_CRLF, _TRAILER, _UNTIL_CLOSE, _IDLE = range(8)


class Connection(asyncio.Protocol):
    __slots__ = ("_buffer", "_remaining", "_state", "closed", "exchange", "keep_alive", "pool", "reused",
                 "transport")

    def __init__(self, pool: ConnectionPool | None = None):
        self.pool = pool
        self.transport: asyncio.Transport | None = None
        self.exchange: Exchange | None = None
        self._buffer = bytearray()
        self._state = _IDLE
        self._remaining = 0
        self.keep_alive = True
        self.closed = False
        self.reused = False

    # -- asyncio callbacks ------------------------------------------------------------------------------------------
    def connection_made(self, transport):
        self.transport = transport

    def connection_lost(self, exc):
        self.closed = True
        exchange = self.exchange
        if exchange is not None:
            now = _clock()
            if self._state == _UNTIL_CLOSE:
                self._complete(now)
            else:
                kind = "connection_reset" if exchange.first_byte else "connection_closed"
                exchange.finish(now, RequestFailed(kind, str(exc) if exc else "closed by the server"))
            self.exchange = None
        if self.pool is not None:
            self.pool.forget(self)

    def data_received(self, data: bytes):
        now = _clock()
        exchange = self.exchange
        if exchange is None:  # bytes nobody asked for: the connection cannot be trusted any more
            self.close()
            return
        if not exchange.first_byte:
            exchange.first_byte = now
        exchange.last_data = now
        buffer = self._buffer
        buffer += data
        try:
            self._parse(exchange, buffer, now)
        except RequestFailed as error:
            self.exchange = None
            exchange.finish(now, error)
            self.close()

    # -- parsing ----------------------------------------------------------------------------------------------------
    def _parse(self, exchange: Exchange, buffer: bytearray, now: float) -> None:
        while buffer and self.exchange is exchange:
            state = self._state
            if state == _HEAD:
                end = buffer.find(b"\r\n\r\n")
                if end < 0:
                    if len(buffer) > MAX_HEAD_BYTES:
                        raise RequestFailed("protocol_error", "response head too large")
                    return
                self._head(exchange, bytes(buffer[:end]))
                del buffer[:end + 4]
            elif state == _CHUNK_SIZE:
                if self._whole_chunks(exchange, buffer, now):
                    continue
                end = buffer.find(b"\r\n")
                if end < 0:
                    if len(buffer) > 1024:
                        raise RequestFailed("protocol_error", "bad chunk size line")
                    return
                line = bytes(buffer[:end]).split(b";", 1)[0].strip()
                del buffer[:end + 2]
                try:
                    size = int(line, 16)
                except ValueError:
                    raise RequestFailed("protocol_error", f"bad chunk size {line[:20]!r}") from None
                if size == 0:
                    self._state = _TRAILER
                else:
                    self._remaining, self._state = size, _CHUNK_DATA
            elif state == _CHUNK_DATA:
                take = self._remaining
                if len(buffer) <= take:
                    piece = bytes(buffer)
                    buffer.clear()
                else:
                    piece = bytes(buffer[:take])
                    del buffer[:take]
                self._remaining -= len(piece)
                if self._remaining == 0:
                    self._state = _CHUNK_CRLF
                exchange.deliver(piece, now)
            elif state == _CHUNK_CRLF:
                if len(buffer) < 2:
                    return
                if buffer[:2] != b"\r\n":
                    raise RequestFailed("protocol_error", "chunk not followed by CRLF")
                del buffer[:2]
                self._state = _CHUNK_SIZE
            elif state == _TRAILER:
                end = buffer.find(b"\r\n")
                if end < 0:
                    return
                del buffer[:end + 2]
                if end == 0:
                    self._complete(now)
            elif state == _LENGTH:
                take = self._remaining
                piece = bytes(buffer[:take])
                del buffer[:take]
                self._remaining -= len(piece)
                exchange.deliver(piece, now)
                if self._remaining == 0:
                    self._complete(now)
            elif state == _UNTIL_CLOSE:
                piece = bytes(buffer)
                buffer.clear()
                exchange.deliver(piece, now)
            else:
                raise RequestFailed("protocol_error", "bytes after the end of the reply")

    def _whole_chunks(self, exchange: Exchange, buffer: bytearray, now: float) -> bool:
        """Fast path: take every complete chunk at the front of the buffer in one go and deliver their data as one
        piece (they arrived together). False when not even one complete chunk is there."""
        position, size_of, pieces = 0, len(buffer), []
        while True:
            end = buffer.find(b"\r\n", position, position + 1024)
            if end < 0:
                break
            try:
                size = int(buffer[position:end].split(b";", 1)[0], 16)
            except ValueError:
                raise RequestFailed("protocol_error", "bad chunk size line") from None
            if size == 0:
                break
            stop = end + 2 + size
            if stop + 2 > size_of:
                break
            if buffer[stop:stop + 2] != b"\r\n":
                raise RequestFailed("protocol_error", "chunk not followed by CRLF")
            pieces.append(buffer[end + 2:stop])
            position = stop + 2
        if not position:
            return False
        del buffer[:position]
        exchange.deliver(b"".join(pieces), now)
        return True

    def _head(self, exchange: Exchange, head: bytes) -> None:
        lines = head.decode("latin-1").split("\r\n")
        status_line = lines[0].split(" ", 2)
        if len(status_line) < 2 or not status_line[0].startswith("HTTP/1."):
            raise RequestFailed("protocol_error", f"bad status line {lines[0][:60]!r}")
        try:
            status = int(status_line[1])
        except ValueError:
            raise RequestFailed("protocol_error", f"bad status {status_line[1][:10]!r}") from None
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if 100 <= status < 200:  # an interim reply (100 Continue): the real head follows
            return
        exchange.status, exchange.headers = status, headers
        connection = headers.get("connection", "").lower()
        self.keep_alive = status_line[0] == "HTTP/1.1" and "close" not in connection
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self._state = _CHUNK_SIZE
        elif "content-length" in headers:
            try:
                self._remaining = int(headers["content-length"])
            except ValueError:
                raise RequestFailed("protocol_error", "bad Content-Length") from None
            self._state = _LENGTH
            if self._remaining == 0:
                self._complete(exchange.first_byte)
        elif status in (204, 304):
            self._complete(exchange.first_byte)
        else:
            self._state, self.keep_alive = _UNTIL_CLOSE, False

    def _complete(self, now: float) -> None:
        exchange = self.exchange
        self.exchange = None
        self._state = _IDLE
        if exchange is not None:
            exchange.finish(now)
        if not self.keep_alive:
            self.close()
        elif self.pool is not None and not self.closed:
            self.reused = True
            self.pool.release(self)

    # -- use --------------------------------------------------------------------------------------------------------
    def send(self, exchange: Exchange, request: bytes) -> None:
        self.exchange = exchange
        self._state = _HEAD
        self._buffer.clear()
        exchange.sent = _clock()
        self.transport.write(request)

    def abandon(self) -> None:
        """Give up on the current exchange (timeout): the connection is closed, its reply is never read."""
        self.exchange = None
        self.close()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class ConnectionPool:
    """Keep-alive connections to one target; at most `limit` open at once (waiters queue in order)."""

    def __init__(self, target: Target, limit: int = 1024, connect_timeout_s: float = 10.0,
                 ssl_context: ssl.SSLContext | None = None):
        self.target = target
        self.limit = limit
        self.connect_timeout_s = connect_timeout_s
        self.ssl = ssl_context if ssl_context is not None else (
            ssl.create_default_context() if target.scheme == "https" else None)
        self.idle: list[Connection] = []
        self.open = 0
        self.opened_total = 0
        self._waiters: list[asyncio.Future] = []

    def take_idle(self) -> Connection | None:
        """An idle keep-alive connection, without waiting (None when there is none)."""
        while self.idle:
            connection = self.idle.pop()
            if not connection.closed:
                return connection
        return None

    async def acquire(self) -> Connection:
        while self.idle:
            connection = self.idle.pop()
            if not connection.closed:
                return connection
        if self.open >= self.limit:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            return await waiter
        self.open += 1
        try:
            return await self._connect()
        except BaseException:
            self.open -= 1
            raise

    async def _connect(self) -> Connection:
        loop = asyncio.get_running_loop()
        try:
            _transport, connection = await asyncio.wait_for(
                loop.create_connection(lambda: Connection(self), self.target.host, self.target.port, ssl=self.ssl,
                                       server_hostname=self.target.host if self.ssl else None),
                self.connect_timeout_s)
        except TimeoutError:
            raise RequestFailed("connect_timeout", f"no connection within {self.connect_timeout_s} s") from None
        except ConnectionRefusedError as error:
            raise RequestFailed("connect_refused", str(error)) from None
        except ssl.SSLError as error:
            raise RequestFailed("tls_error", str(error)) from None
        except OSError as error:
            raise RequestFailed("connect_error", str(error)) from None
        self.opened_total += 1
        return connection

    def release(self, connection: Connection) -> None:
        while self._waiters:
            waiter = self._waiters.pop(0)
            if not waiter.done():
                waiter.set_result(connection)
                return
        self.idle.append(connection)

    def forget(self, connection: Connection) -> None:
        """A connection closed: free its place (a queued waiter gets a fresh one)."""
        with contextlib.suppress(ValueError):
            self.idle.remove(connection)
        self.open = max(0, self.open - 1)
        while self._waiters:
            waiter = self._waiters.pop(0)
            if not waiter.done():
                self.open += 1
                task = asyncio.ensure_future(self._connect())
                task.add_done_callback(lambda done, w=waiter: self._hand_over(done, w))
                return

    def _hand_over(self, done: asyncio.Future, waiter: asyncio.Future) -> None:
        if waiter.done():
            if done.exception() is None:
                done.result().close()
            return
        if done.exception() is not None:
            self.open = max(0, self.open - 1)
            waiter.set_exception(done.exception())
        else:
            waiter.set_result(done.result())

    async def prewarm(self, count: int) -> int:
        """Open up to `count` idle connections before a run (so the first seconds do not pay for handshakes)."""
        count = min(count, self.limit - self.open)
        results = await asyncio.gather(*(self._prewarm_one() for _ in range(max(0, count))), return_exceptions=True)
        return sum(1 for result in results if result is True)

    async def _prewarm_one(self) -> bool:
        self.open += 1
        try:
            connection = await self._connect()
        except RequestFailed:
            self.open -= 1
            return False
        self.idle.append(connection)
        return True

    def close(self) -> None:
        for connection in self.idle:
            connection.close()
        self.idle.clear()


def build_request(method: str, target: Target, path: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    """Request bytes (head + body). `headers` must not carry Host or Content-Length."""
    lines = [f"{method} {target.base_path}{path} HTTP/1.1", f"Host: {target.netloc}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


async def perform(pool: ConnectionPool, exchange: Exchange, request: bytes, *, timeout_s: float,
                  idle_timeout_s: float | None = None) -> Exchange:
    """Send `request` on a pooled connection and wait for the whole reply; failures are recorded on the exchange
    (`exchange.error`), never raised. A reused keep-alive connection found closed before any byte of the reply is
    retried once on a fresh connection (the server had closed it while idle)."""
    loop = asyncio.get_running_loop()
    began = _clock()
    deadline = began + timeout_s
    for attempt in range(2):
        try:
            connection = pool.take_idle() or await asyncio.wait_for(pool.acquire(), max(0.001, deadline - _clock()))
        except RequestFailed as error:
            exchange.sent = exchange.sent or _clock()
            exchange.end, exchange.error = _clock(), error
            return exchange
        except TimeoutError:
            exchange.sent = exchange.sent or _clock()
            exchange.end, exchange.error = _clock(), RequestFailed("timeout", "no connection became free in time")
            return exchange
        exchange.done = loop.create_future()
        exchange.first_byte = exchange.last_data = 0.0
        reused = connection.reused
        connection.send(exchange, request)
        watchdog = _Watchdog(loop, connection, exchange, deadline, idle_timeout_s)
        try:
            await exchange.done
        except asyncio.CancelledError:
            connection.abandon()  # its reply will never be read: the connection cannot be reused
            raise
        finally:
            watchdog.cancel()
        error = exchange.error
        if (attempt == 0 and reused and error is not None and error.kind == "connection_closed"
                and not exchange.first_byte and _clock() < deadline):
            exchange.error = None
            continue
        return exchange
    return exchange


class _Watchdog:
    """One timer per request: fires at the earlier of the total deadline and the idle deadline, re-arms itself."""

    __slots__ = ("connection", "deadline", "exchange", "handle", "idle", "loop")

    def __init__(self, loop, connection: Connection, exchange: Exchange, deadline: float, idle: float | None):
        self.loop, self.connection, self.exchange = loop, connection, exchange
        self.deadline, self.idle = deadline, idle
        self.handle = loop.call_at(self._next(), self._fire)

    def _next(self) -> float:
        if self.idle is None:
            return self.deadline
        last = self.exchange.last_data or self.exchange.sent
        return min(self.deadline, last + self.idle)

    def _fire(self) -> None:
        now = _clock()
        exchange = self.exchange
        if exchange.done is None or exchange.done.done():
            return
        if now >= self.deadline:
            kind, detail = "timeout", "the reply did not complete in time"
        elif self.idle is not None and now >= (exchange.last_data or exchange.sent) + self.idle:
            kind = "stalled" if exchange.first_byte else "timeout"
            detail = f"no byte for {self.idle} s"
        else:
            self.handle = self.loop.call_at(self._next(), self._fire)
            return
        self.connection.abandon()
        exchange.finish(now, RequestFailed(kind, detail))

    def cancel(self) -> None:
        self.handle.cancel()
