"""Request bodies and reply parsing for OpenAI-compatible endpoints (chat completions, completions, embeddings) and
generic HTTP JSON endpoints (a request template and a response check).

A reply is consumed while it arrives (`on_data`, called from the connection's `data_received` with the arrival
time): SSE events are parsed incrementally, each chunk with non-empty generated content (content, reasoning content
or tool-call arguments) is kept with its arrival time and size; `finish` turns the stream into the request's
outcome: error kind, output tokens (the server's `usage.completion_tokens` when it sends it), and tokens per chunk
(from per-chunk usage when the server streams it, else the total spread over the chunks by their text length).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dossier_agent.contract.load_spec import APIS
from dossier_agent.loadgen.http import Exchange
from dossier_agent.loadgen.prompts import PromptItem
from dossier_agent.loadgen.sse import SSEError, SSEParser

SALT = "\x00SALT\x00"
_loads = json.loads
_decode = json.JSONDecoder().raw_decode


class EndpointError(ValueError):
    pass


def read_api_key(endpoint: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> str | None:
    """The API key from `api_key_file` (first line) or the environment variable `api_key_env`. Never logged."""
    environ = os.environ if environ is None else environ
    path = endpoint.get("api_key_file")
    if path:
        try:
            key = Path(path).read_text(encoding="utf-8").strip().splitlines()[0].strip()
        except (OSError, IndexError) as error:
            raise EndpointError(f"cannot read the API key file {path}: {type(error).__name__}") from None
        return key or None
    name = endpoint.get("api_key_env")
    if name:
        key = environ.get(name)
        if not key:
            raise EndpointError(f"the environment variable {name} (API key) is not set")
        return key
    return None


def api_path(base_path: str, api: str) -> str:
    """Path after the endpoint URL's own path: `/v1/chat/completions`, or `/chat/completions` when it ends in /v1."""
    tail = {"chat": "/chat/completions", "completions": "/completions", "embeddings": "/embeddings"}[api]
    return tail if base_path.endswith("/v1") else "/v1" + tail


@dataclass
class Outcome:
    status: int
    error: str | None
    detail: str | None
    output_tokens: int | None
    input_tokens: int | None
    chunk_times: list[float]
    chunk_tokens: list[int]
    text: str
    usage_source: str


def spread_tokens(total: int, sizes: list[int]) -> list[int]:
    """Split `total` tokens over chunks in proportion to their text sizes (largest remainder); each chunk gets at
    least one token when there are at least as many tokens as chunks."""
    count = len(sizes)
    if count == 0:
        return []
    if total == count:
        return [1] * count
    base = [1] * count if total >= count else [0] * count
    left = total - sum(base)
    weights = [max(1, size) for size in sizes]
    scale = left / sum(weights)
    shares = [w * scale for w in weights]
    whole = [int(share) for share in shares]
    remainder = left - sum(whole)
    order = sorted(range(count), key=lambda i: shares[i] - whole[i], reverse=True)
    for i in order[:remainder]:
        whole[i] += 1
    return [b + w for b, w in zip(base, whole, strict=True)]


def _generated_text(choice: dict[str, Any], chat: bool) -> str:
    """Generated text of one streamed choice: content, reasoning content, tool-call arguments (chat) or text."""
    if not chat:
        return choice.get("text") or ""
    delta = choice.get("delta")
    if not delta:
        return ""
    text = delta.get("content") or ""
    if len(delta) > 2 or not text:  # something besides role/content: reasoning or tool calls
        text += (delta.get("reasoning_content") or delta.get("reasoning") or "")
        if delta.get("tool_calls"):
            text += json.dumps(delta["tool_calls"])
    return text


class StreamState:
    """Consumes one streamed (SSE) reply of chat or completions."""

    __slots__ = ("chat", "done_marker", "error", "parser", "sizes", "stream_usage", "texts", "times", "usage")

    def __init__(self, chat: bool):
        self.chat = chat
        self.parser = SSEParser()
        self.times: list[float] = []
        self.sizes: list[int] = []
        self.stream_usage: list[int | None] = []
        self.texts: list[str] = []
        self.usage: dict[str, Any] | None = None
        self.error: tuple[str, str] | None = None
        self.done_marker = False

    def on_data(self, data: bytes, now: float) -> None:
        if self.error is not None:
            return
        try:
            events = self.parser.feed(data)
        except SSEError as error:
            self.error = ("malformed_sse", str(error))
            return
        for payload in events:
            if payload == "[DONE]":
                self.done_marker = True
                continue
            if payload[:1].isspace():
                payload = payload.strip()
            try:
                event, end = _decode(payload)
                if end != len(payload) and payload[end:].strip():
                    raise ValueError("extra data")
            except ValueError:
                self.error = ("malformed_sse", f"data is not JSON: {payload[:60]!r}")
                return
            if type(event) is not dict:
                self.error = ("malformed_sse", "data is not a JSON object")
                return
            if event.get("error"):
                message = event["error"].get("message") if isinstance(event["error"], dict) else event["error"]
                self.error = ("stream_error", str(message)[:200])
                return
            usage = event.get("usage")
            if usage:
                self.usage = usage
            choices = event.get("choices")
            if not choices:
                continue
            text = _generated_text(choices[0], self.chat)
            if len(choices) > 1:
                text += "".join(_generated_text(choice, self.chat) for choice in choices[1:])
            if text:
                self.times.append(now)
                self.sizes.append(len(text))
                self.texts.append(text)
                self.stream_usage.append(usage.get("completion_tokens") if usage else None)

    def finish(self, exchange: Exchange) -> Outcome:
        error = _http_error(exchange)
        self.error = self.error or ("finished", "")  # stop taking data: the outcome below is final
        if error is None and self.error[0] != "finished":
            error = self.error
        if error is None and exchange.status == 200:
            if self.parser.leftover().strip():
                error = ("malformed_sse", "the stream ended inside an event")
            elif not self.done_marker:
                error = ("incomplete_stream", "the stream ended without [DONE]")
        usage = self.usage or {}
        total = usage.get("completion_tokens")
        source = "server"
        tokens: list[int]
        if self.stream_usage and all(value is not None for value in self.stream_usage):
            tokens, previous = [], 0
            for value in self.stream_usage:
                tokens.append(max(0, int(value) - previous))
                previous = int(value)
            source = "server per chunk"
        elif isinstance(total, int):
            tokens = spread_tokens(total, self.sizes)
        else:
            tokens = [1] * len(self.times)
            source = "chunks"
        out = total if isinstance(total, int) else sum(tokens)
        prompt = usage.get("prompt_tokens")
        return Outcome(exchange.status, error[0] if error else None, error[1] if error else None,
                       out if error is None or self.times else None, prompt if isinstance(prompt, int) else None,
                       list(self.times), tokens, "".join(self.texts), source)


class WholeState:
    """Consumes a reply that is not streamed: non-streamed chat/completions, embeddings, generic endpoints."""

    __slots__ = ("api",)

    def __init__(self, api: str):
        self.api = api

    on_data = None

    def finish(self, exchange: Exchange) -> Outcome:
        error = _http_error(exchange)
        if error is not None or self.api == "generic":
            return Outcome(exchange.status, error[0] if error else None, error[1] if error else None, None, None,
                           [], [], exchange.body.decode("utf-8", "replace") if self.api == "generic" else "", "none")
        try:
            body = _loads(exchange.body)
        except ValueError:
            return Outcome(exchange.status, "bad_json", "the reply is not JSON", None, None, [], [], "", "none")
        usage = body.get("usage") or {} if isinstance(body, dict) else {}
        prompt = usage.get("prompt_tokens")
        if self.api == "embeddings":
            data = body.get("data") if isinstance(body, dict) else None
            if not data:
                return Outcome(exchange.status, "bad_reply", "no embedding in the reply", None, prompt, [], [], "",
                               "server")
            return Outcome(exchange.status, None, None, 0, prompt, [], [], "", "server")
        choices = body.get("choices") or [{}]
        choice = choices[0]
        text = (choice.get("message") or {}).get("content") or "" if self.api == "chat" else choice.get("text") or ""
        out = usage.get("completion_tokens")
        out = out if isinstance(out, int) else (1 if text else 0)
        times = [exchange.end] if text else []
        return Outcome(exchange.status, None, None, out, prompt, times, [out] if text else [], text, "server")


def _http_error(exchange: Exchange) -> tuple[str, str] | None:
    if exchange.error is not None:
        return exchange.error.kind, exchange.error.detail
    if exchange.status >= 400 or exchange.status < 200:
        return f"http_{exchange.status}", exchange.body[:200].decode("utf-8", "replace") if exchange.body_parts else ""
    return None


class RequestBuilder:
    """Pre-serialised request bodies; `body(i, item_index)` adds a per-request salt where the prompt is synthetic."""

    def __init__(self, endpoint: Mapping[str, Any], items: list[PromptItem], *, stream: bool = True,
                 hold_output_length: bool = True, default_max_tokens: int = 128):
        api = endpoint.get("api", "chat")
        if api not in APIS:
            raise EndpointError(f"endpoint.api must be one of {', '.join(APIS)}, got {api!r}")
        self.api = api
        self.stream = stream and api in ("chat", "completions")
        self.model = endpoint.get("model") or "default"
        self.extra = dict(endpoint.get("extra_body") or {})
        self.hold = hold_output_length
        self.default_max_tokens = default_max_tokens
        self.items = items
        self._parts: list[tuple[bytes, bytes | None]] = [self._serialise(item) for item in items]

    def _serialise(self, item: PromptItem) -> tuple[bytes, bytes | None]:
        if self.api == "generic":
            raise EndpointError("generic endpoints build their bodies with GenericTemplate")
        body: dict[str, Any] = {"model": self.model}
        if self.api == "embeddings":
            body["input"] = item.text
        else:
            if self.api == "chat":
                body["messages"] = item.messages if item.messages is not None else [
                    {"role": "user", "content": item.prompt}]
            else:
                body["prompt"] = item.prompt if item.prompt is not None else item.text
            tokens = item.max_tokens or self.default_max_tokens
            body["max_tokens"] = tokens
            if self.hold:
                body["min_tokens"] = tokens
                body["ignore_eos"] = True
            if self.stream:
                body["stream"] = True
                body["stream_options"] = {"include_usage": True}
        body.update(self.extra)
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        marker = json.dumps(SALT)[1:-1].encode()
        if marker in data:
            head, tail = data.split(marker, 1)
            return head, tail
        return data, None

    def body(self, index: int) -> tuple[bytes, PromptItem]:
        position = index % len(self.items)
        head, tail = self._parts[position]
        if tail is None:
            return head, self.items[position]
        return head + str(index).encode() + tail, self.items[position]

    def new_state(self) -> StreamState | WholeState:
        return StreamState(self.api == "chat") if self.stream else WholeState(self.api)


def salted(item: PromptItem) -> PromptItem:
    """Mark a synthetic prompt so each request gets a unique leading number (no prefix-cache hit between two)."""
    if item.messages is not None:
        messages = [dict(m) for m in item.messages]
        last = messages[-1]
        text = str(last.get("content", ""))
        last["content"] = SALT + " " + text.split(" ", 1)[1] if " " in text else SALT
        item.messages = messages
    elif item.prompt is not None:
        item.prompt = SALT + " " + item.prompt.split(" ", 1)[1] if " " in item.prompt else SALT
    return item


class GenericTemplate:
    """Generic HTTP JSON endpoint: `method` (POST), `path`, `headers`, `body` (any JSON; the string "{{prompt}}"
    anywhere inside is replaced by the prompt text, "{{index}}" by the request number), `expect` (response check,
    `acceptance.check_generic`)."""

    def __init__(self, generic: Mapping[str, Any], items: list[PromptItem]):
        self.method = str(generic.get("method", "POST")).upper()
        self.path = str(generic.get("path", "/"))
        if not self.path.startswith("/"):
            raise EndpointError("endpoint.generic.path must start with /")
        self.headers = {str(k): str(v) for k, v in (generic.get("headers") or {}).items()}
        self.expect = dict(generic.get("expect") or {})
        self.items = items
        template = json.dumps(generic.get("body", {"prompt": "{{prompt}}"}), separators=(",", ":"))
        self._templates = [template.replace("{{prompt}}", json.dumps(item.text)[1:-1]) for item in items]
        self.api = "generic"

    def body(self, index: int) -> tuple[bytes, PromptItem]:
        position = index % len(self.items)
        text = self._templates[position].replace("{{index}}", str(index))
        return (text.encode() if self.method not in ("GET", "HEAD", "DELETE") else b""), self.items[position]

    def new_state(self) -> WholeState:
        return WholeState("generic")
