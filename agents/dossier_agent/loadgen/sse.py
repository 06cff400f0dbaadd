"""Incremental server-sent-events parser: feed bytes as they arrive, get the `data` payloads of complete events
(as text: the stream is decoded as UTF-8 incrementally, so a character split between two reads is kept whole).

Follows the WHATWG event-stream rules that matter for model servers: lines end in LF, CRLF or CR; an event ends at
a blank line; several `data:` lines join with LF; one space after the colon is dropped; comment lines (`:`) and the
fields `event`, `id`, `retry` are accepted; a line that is none of these is counted in `unknown_lines` (the spec
ignores it; the load generator reports it as malformed when it matters).
"""

from __future__ import annotations

import codecs

MAX_EVENT_BYTES = 8 * 1024 * 1024
_KNOWN = ("event", "id", "retry")


class SSEError(ValueError):
    pass


class SSEParser:
    __slots__ = ("_buffer", "_decoder", "_pending_cr", "unknown_lines")

    def __init__(self) -> None:
        self._buffer = ""
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending_cr = False
        self.unknown_lines = 0

    def feed(self, data: bytes) -> list[str]:
        """Add bytes; return the data payload of every event completed by them (events without data are skipped)."""
        text = self._decoder.decode(data)
        if self._pending_cr:
            self._pending_cr = False
            if text[:1] == "\n":
                text = text[1:]
        if "\r" in text:
            if text.endswith("\r"):
                self._pending_cr = True
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        buffer = self._buffer + text if self._buffer else text
        if "\n\n" not in buffer:
            if len(buffer) > MAX_EVENT_BYTES:
                raise SSEError(f"an event larger than {MAX_EVENT_BYTES} bytes")
            self._buffer = buffer
            return []
        blocks = buffer.split("\n\n")
        self._buffer = blocks.pop()
        events: list[str] = []
        for block in blocks:
            if block.startswith("data:") and "\n" not in block:  # the usual case: one data line
                events.append(block[6:] if block[5:6] == " " else block[5:])
                continue
            payload = self._block(block)
            if payload is not None:
                events.append(payload)
        return events

    def _block(self, block: str) -> str | None:
        lines = []
        for line in block.split("\n"):
            if not line or line[:1] == ":":
                continue
            name, colon, value = line.partition(":")
            if name == "data":
                lines.append(value[1:] if value[:1] == " " else value)
            elif not colon or name not in _KNOWN:
                self.unknown_lines += 1
        return "\n".join(lines) if lines else None

    def leftover(self) -> str:
        """Text of an event not yet terminated by a blank line (a stream that ended mid-event)."""
        return self._buffer + self._decoder.decode(b"", final=True)
