"""A fake LLM server over real HTTP on 127.0.0.1: Ollama and OpenAI-compatible wire formats.

Usage::

    with FakeLLM() as fake:                        # or the ``fake_llm`` pytest fixture
        fake.script(Reply(text="Hello!"))          # consumed in order, one per chat request
        fake.script(Reply(tool_calls=[{"name": "get_time", "arguments": {"tz": "UTC"}}]))
        fake.script_for(lambda req: req.get("model") == "bot-b", Reply(text="I am B"), persistent=True)
        use_fake_llm(fake, bot_id=bot.id)          # point a bot (or the global default) at it
        ...
        fake.requests                              # every request: {"path", "method", "json", "time"}

Endpoints: Ollama ``POST /api/chat`` (NDJSON streaming or not, tools, ``format``),
``GET /api/tags``, ``POST /api/embed``; OpenAI ``POST /v1/chat/completions`` (SSE streaming
or not, tools, ``response_format``), ``GET /v1/models``; Anthropic ``POST /v1/messages``
(SSE); Gemini ``POST /v1beta/models/<model>:streamGenerateContent`` (SSE) and
``:generateContent``, ``GET /v1beta/models``.

``fake.api_keys = {"sk-..."}``: every other key (or none) gets HTTP 401, as a provider refuses a
wrong key; ``fake.no_model_list = True``: the model lists answer 404.

With nothing scripted a chat request gets ``"Echo: <last user text>"``, streamed in a few
chunks; a request that asks for a JSON schema gets the smallest object valid for it
(empty lists, empty strings, false), so a default answer never breaks a JSON parser: the
Tool Identifier picks no tool, and a Gatekeeper decision (only for messages the reply rules
leave open) is "stay silent". The Archivist's background calls (after a message where the
user says something about themselves) never consume the queue: answer them with
``script_for(is_archivist_request, ...)``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

logger = logging.getLogger(__name__)

DEFAULT_MODELS = ["fake-model", "llama3.2"]


@dataclass
class Reply:
    """One scripted answer of the fake server."""

    text: str = ""
    tool_calls: list[dict[str, Any]] | None = None  # [{"name": ..., "arguments": {...} or "raw string"}]
    delay: float = 0.0  # seconds before the response starts
    hold: threading.Event | None = None  # the response starts once the test sets it (at most 30 s)
    # Streams (Ollama, OpenAI): the text is sent, then the stream ends once the test sets it (at most 30 s),
    # so a test sees what the client makes of the text in flight before the answer is complete.
    hold_end: threading.Event | None = None
    status: int = 200  # >= 400: an HTTP error with ``error`` as its message
    error: str | None = None  # with status 200: an error inside the stream
    headers: dict[str, str] | None = None  # extra response headers (e.g. Retry-After)
    chunks: int = 3  # streamed in this many pieces
    chunk_delay: float = 0.0  # seconds between streamed pieces
    json: Any = None  # a structured answer: sent as the JSON text of this value
    prompt_tokens: int | None = None  # usage to report (estimated when None)
    completion_tokens: int | None = None
    finish_reason: str | None = None  # e.g. "length" (the answer stopped at max_tokens); default: stop / tool_calls
    # The server dies after writing this many events (lines) of the stream: its body, sent without chunked
    # framing (it ends when the connection closes, as some servers and proxies stream), just stops.
    cut_after: int | None = None
    # OpenAI and Anthropic streams: after its text the server only sends SSE keep-alive comments, one every this
    # many seconds, and never ends the answer (until the client hangs up), as a proxy whose upstream hangs does.
    stall: float | None = None
    tool_chunks: int = 2  # OpenAI and Anthropic streams: each tool call's arguments come in this many pieces

    def answer_text(self) -> str:
        if self.json is not None:
            return json.dumps(self.json)
        return self.text


@dataclass
class _Rule:
    match: Callable[[dict[str, Any]], bool]
    replies: list[Reply]
    persistent: bool = False


@dataclass
class RecordedRequest:
    path: str
    method: str
    json: Any
    time: float = field(default_factory=time.monotonic)
    client: tuple[str, int] | None = None  # the client's address (one per connection)
    headers: dict[str, str] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:  # dict-style access: req["json"]
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)


def _split(text: str, parts: int) -> list[str]:
    if not text:
        return [""]
    parts = max(1, min(parts, len(text)))
    size = -(-len(text) // parts)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _wait(reply: Reply) -> None:
    """Before a response starts: the scripted delay, and the test's go when the reply is held."""
    if reply.hold is not None:
        reply.hold.wait(30)
    if reply.delay:
        time.sleep(reply.delay)


def _estimate_tokens(value: Any) -> int:
    return max(1, len(json.dumps(value, default=str)) // 4)


def minimal_instance(schema: Any) -> Any:
    """The smallest value valid for a (simple) JSON schema."""
    if not isinstance(schema, dict):
        return {}
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        # A choice that may be "none" (the Tool Identifier's) is none: the fake calls no tool unless scripted.
        return "none" if "none" in schema["enum"] else schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return minimal_instance(schema[key][0])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = "null" if "null" in kind else (kind[0] if kind else "object")
    if kind == "array":
        return [minimal_instance(schema.get("items", {})) for _ in range(schema.get("minItems", 0))]
    if kind == "string":
        return "x" * schema.get("minLength", 0)
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    props = schema.get("properties", {})
    return {name: minimal_instance(props.get(name, {})) for name in schema.get("required", [])}


def is_archivist_request(body: dict[str, Any]) -> bool:
    """True for the Archivist's background note-taking call (its answer schema has ``notes``)."""
    schema = requested_schema(body)
    return isinstance(schema, dict) and "notes" in (schema.get("properties") or {})


def is_write_check(body: dict[str, Any]) -> bool:
    """True for the tools model's yes/no on whether a message asks for a tool that changes things."""
    schema = requested_schema(body)
    return isinstance(schema, dict) and "asked" in (schema.get("properties") or {})


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages or []):
        if "parts" in message and message.get("role") == "user":  # Gemini contents
            texts = [p.get("text", "") for p in message["parts"] if isinstance(p, dict) and "text" in p]
            if texts:
                return " ".join(texts)
            continue
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):  # OpenAI content parts, Anthropic blocks (tool results have no text)
                texts = [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]
                if not texts:
                    continue
                return " ".join(texts)
            return str(content or "")
    return ""


def requested_schema(body: dict[str, Any]) -> Any:
    """The JSON schema a request asks its answer to follow, if any."""
    fmt = body.get("format")
    if isinstance(fmt, dict):
        return fmt
    if fmt == "json":
        return {"type": "object"}
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "tool":  # Anthropic: a forced "answer" tool
        for tool in body.get("tools") or []:
            if tool.get("name") == choice.get("name"):
                return tool.get("input_schema") or {"type": "object"}
    config = body.get("generationConfig") or {}
    if config.get("responseMimeType") == "application/json":  # Gemini
        return config.get("responseJsonSchema") or config.get("responseSchema") or {"type": "object"}
    rf = body.get("response_format")
    if isinstance(rf, dict):
        if rf.get("type") == "json_schema":
            return (rf.get("json_schema") or {}).get("schema", {"type": "object"})
        if rf.get("type") == "json_object":
            return {"type": "object"}
    return None


class _ServerDied(Exception):
    """A scripted reply's server dies in the middle of its stream (``Reply.cut_after``)."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:  # clients hanging up are normal
        logger.debug("FakeLLM: connection from %s ended with an error", client_address, exc_info=sys.exc_info())


class FakeLLM:
    """A scripted LLM server speaking the Ollama and OpenAI wire formats."""

    def __init__(self, *, models: list[str] | None = None, embed_dim: int = 8) -> None:
        self.models = list(models or DEFAULT_MODELS)
        self.embed_dim = embed_dim
        # When set, only these API keys are accepted: any other request gets HTTP 401 (a rejected key).
        self.api_keys: set[str] | None = None
        self.no_model_list = False  # True: the model lists answer 404 (a server without one)
        self.default_delay = 0.0  # seconds before an answer nothing scripted (a model's think time)
        self._lock = threading.Lock()
        self._queue: list[Reply] = []
        self._rules: list[_Rule] = []
        self._requests: list[RecordedRequest] = []
        self.hangups = 0  # streamed answers whose client closed the connection before their end
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> FakeLLM:
        handler = type("_Handler", (_Handler,), {"fake": self})
        server = _Server(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "FakeLLM not started"
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        """Base URL (Ollama)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:
        """Base URL of the OpenAI-compatible API."""
        return self.url + "/v1"

    @property
    def anthropic_url(self) -> str:
        """Base URL of the Anthropic Messages API (``/v1/messages`` below it)."""
        return self.url

    @property
    def gemini_url(self) -> str:
        """Base URL of the Gemini API (``/models/<model>:streamGenerateContent`` below it)."""
        return self.url + "/v1beta"

    def base_url_for(self, provider: str) -> str:
        """The fake's base URL for ``provider``; a named OpenAI-compatible service gets its own path
        (Groq's ``/openai/v1``, OpenRouter's ``/api/v1``)."""
        known = {"ollama": self.url, "openai": self.openai_url, "anthropic": self.anthropic_url,
                 "gemini": self.gemini_url}
        if provider in known:
            return known[provider]
        from urllib.parse import urlparse

        from grobot.core.llm.providers import ENTRIES

        return self.url + urlparse(ENTRIES[provider].base_url).path

    # -- scripting --------------------------------------------------------------------------
    def script(self, *replies: Reply | str) -> FakeLLM:
        """Queue replies, consumed in order by chat requests that no rule matched."""
        with self._lock:
            self._queue.extend(Reply(text=r) if isinstance(r, str) else r for r in replies)
        return self

    def script_for(
        self, match: Callable[[dict[str, Any]], bool], *replies: Reply | str, persistent: bool = False
    ) -> FakeLLM:
        """Replies for chat requests where ``match(request_json)`` is true (checked before the queue).

        The replies are consumed in order; with ``persistent`` the last one keeps answering.
        """
        items = [Reply(text=r) if isinstance(r, str) else r for r in replies]
        with self._lock:
            self._rules.append(_Rule(match=match, replies=items, persistent=persistent))
        return self

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self._rules.clear()
            self._requests.clear()

    @property
    def pending(self) -> int:
        """Scripted replies not consumed yet (queue only)."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def chat_requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of the chat requests (both APIs), in order."""
        return [r.json for r in self.requests
                if r.path in ("/api/chat", "/v1/chat/completions", "/v1/messages") or ":" in r.path.split("?")[0].rsplit("/", 1)[-1]]

    # -- server side ------------------------------------------------------------------------
    def _record(self, path: str, method: str, body: Any, client: Any = None, headers: Any = None) -> None:
        with self._lock:
            self._requests.append(RecordedRequest(path=path, method=method, json=body, client=client,
                                                  headers={k.lower(): v for k, v in (headers or {}).items()}))

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            for rule in list(self._rules):
                try:
                    matched = bool(rule.match(body))
                except Exception:  # a sloppy matcher must not kill the server
                    matched = False
                if not matched:
                    continue
                if len(rule.replies) > 1 or not rule.persistent:
                    reply = rule.replies.pop(0)
                    if not rule.replies:
                        self._rules.remove(rule)
                else:
                    reply = rule.replies[0]
                return reply
            # The Archivist runs in the background after an answer: it never takes a reply queued
            # for the next message (answer it with script_for(is_archivist_request, ...)).
            if self._queue and not is_archivist_request(body):
                return self._queue.pop(0)
        schema = requested_schema(body)
        if schema is not None:
            return Reply(json=minimal_instance(schema), chunks=1, delay=self.default_delay)
        return Reply(text=f"Echo: {_last_user_text(body.get('messages') or body.get('contents') or [])}",
                     delay=self.default_delay)

    def embed(self, text: str) -> list[float]:
        digest = hashlib.sha256(text.encode()).digest()
        return [(digest[i % len(digest)] - 128) / 128 for i in range(self.embed_dim)]


def _tool_args(args: Any) -> Any:
    return args if isinstance(args, str) else json.dumps(args)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeLLM
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr
        pass

    # -- plumbing ---------------------------------------------------------------------------
    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return {}
        try:
            return json.loads(raw)
        except ValueError:
            return {"_raw": raw.decode(errors="replace")}

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _start_stream(self, content_type: str, headers: dict[str, str] | None = None, *,
                      cut_after: int | None = None) -> None:
        """Start a streamed body: chunked, or (``cut_after``) one that ends when the connection closes."""
        self._cut_after = cut_after
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        if cut_after is None:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Connection", "close")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        cut_after = getattr(self, "_cut_after", None)
        if cut_after is None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            return
        if cut_after <= 0:
            raise _ServerDied()
        self.wfile.write(data)
        self._cut_after = cut_after - 1

    def _stall(self, every: float) -> None:
        """Keep the stream open with SSE comments only, until the client hangs up."""
        while True:
            self._chunk(b": PROCESSING\n\n")
            time.sleep(every)

    def _end_stream(self) -> None:
        if getattr(self, "_cut_after", None) is None:
            self.wfile.write(b"0\r\n\r\n")  # (a body without chunked framing ends with its connection)

    def _key_refused(self) -> bool:
        """With ``fake.api_keys`` set, answer 401 (in the provider's shape) to a request without one of them."""
        accepted = self.fake.api_keys
        if accepted is None:
            return False
        auth = self.headers.get("Authorization") or ""
        given = {auth.removeprefix("Bearer ").strip(), self.headers.get("x-api-key") or "",
                 self.headers.get("x-goog-api-key") or ""}
        if given & accepted:
            return False
        message = "Incorrect API key provided"
        if self.path.startswith("/v1beta"):
            payload: Any = {"error": {"code": 401, "message": message, "status": "UNAUTHENTICATED"}}
        elif self.path.startswith("/api/"):
            payload = {"error": "unauthorized"}
        else:
            payload = {"error": {"message": message, "type": "invalid_api_key", "code": "invalid_api_key"}}
        self._send_json(401, payload)
        return True

    def do_GET(self) -> None:
        self.fake._record(self.path, "GET", None, self.client_address, dict(self.headers))
        if self._key_refused():
            return
        if self.fake.no_model_list and self.path.split("?")[0].endswith(("/api/tags", "/models")):
            self._send_json(404, {"error": {"message": f"not found: {self.path}"}})
            return
        if self.path == "/api/tags":
            models = [
                {"name": m, "model": m, "modified_at": "2025-01-01T00:00:00Z", "size": 1, "digest": "0" * 64,
                 "details": {"format": "gguf", "family": "fake", "parameter_size": "1B", "quantization_level": "Q4"}}
                for m in self.fake.models
            ]
            self._send_json(200, {"models": models})
        elif self.path.split("?")[0] == "/v1beta/models":
            self._send_json(200, {"models": [{"name": f"models/{m}", "displayName": m} for m in self.fake.models]})
        elif self.path.startswith("/") and self.path.endswith("/v1/models"):
            self._send_json(200, {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "fake"} for m in self.fake.models]})
        elif self.path in ("/", "/api/version"):
            self._send_json(200, {"version": "0.0.0-fake"})
        else:
            self._send_json(404, {"error": f"not found: {self.path}"})

    def do_POST(self) -> None:
        body = self._body()
        self.fake._record(self.path, "POST", body, self.client_address, dict(self.headers))
        if self._key_refused():
            return
        try:
            if self.path == "/api/chat":
                self._ollama_chat(body)
            # also below a prefix (Groq's /openai/v1, OpenRouter's /api/v1)
            elif self.path.startswith("/") and self.path.endswith("/v1/chat/completions"):
                self._openai_chat(body)
            elif self.path == "/v1/messages":
                self._anthropic(body)
            elif self.path.startswith("/v1beta/models/") and ":" in self.path:
                self._gemini(body)
            elif self.path == "/api/embed":
                inputs = body.get("input", [])
                inputs = [inputs] if isinstance(inputs, str) else inputs
                self._send_json(200, {"model": body.get("model", ""), "embeddings": [self.fake.embed(t) for t in inputs]})
            else:
                self._send_json(404, {"error": f"not found: {self.path}"})
        except (BrokenPipeError, ConnectionResetError):
            with self.fake._lock:
                self.fake.hangups += 1
        except _ServerDied:
            self.close_connection = True
            self.wfile.flush()

    # -- Ollama -----------------------------------------------------------------------------
    def _ollama_chat(self, body: dict[str, Any]) -> None:
        reply = self.fake._next_reply(body)
        _wait(reply)
        model = body.get("model", "fake-model")
        if reply.status >= 400:
            self._send_json(reply.status, {"error": reply.error or f"fake error {reply.status}"}, reply.headers)
            return
        text = reply.answer_text()
        calls = []
        for call in reply.tool_calls or []:
            args = call.get("arguments", {})
            if isinstance(args, str):
                try:
                    args = json.loads(args)
                except ValueError:
                    pass  # real Ollama never sends this; kept to test client-side handling
            calls.append({"function": {"name": call["name"], "arguments": args}})
        prompt_tokens = reply.prompt_tokens or _estimate_tokens(body.get("messages", []))
        completion_tokens = reply.completion_tokens or max(1, len(text) // 4 + len(calls) * 10)
        final = {
            "model": model, "created_at": "2025-01-01T00:00:00Z", "done": True, "done_reason": reply.finish_reason or "stop",
            "total_duration": 1000, "load_duration": 0, "prompt_eval_count": prompt_tokens,
            "prompt_eval_duration": 1, "eval_count": completion_tokens, "eval_duration": 1,
        }
        if body.get("stream", True) is False:
            if reply.error:
                self._send_json(500, {"error": reply.error}, reply.headers)
                return
            message: dict[str, Any] = {"role": "assistant", "content": text}
            if calls:
                message["tool_calls"] = calls
            self._send_json(200, {**final, "message": message}, reply.headers)
            return
        self._start_stream("application/x-ndjson", reply.headers, cut_after=reply.cut_after)
        for i, piece in enumerate(_split(text, reply.chunks)):
            if i and reply.chunk_delay:
                time.sleep(reply.chunk_delay)
            line = {"model": model, "created_at": "2025-01-01T00:00:00Z", "message": {"role": "assistant", "content": piece}, "done": False}
            self._chunk(json.dumps(line).encode() + b"\n")
        if reply.hold_end is not None:
            reply.hold_end.wait(30)
        if reply.error:
            self._chunk(json.dumps({"error": reply.error}).encode() + b"\n")
            self._end_stream()
            return
        if calls:
            line = {"model": model, "created_at": "2025-01-01T00:00:00Z", "message": {"role": "assistant", "content": "",
                                                                                      "tool_calls": calls}, "done": False}
            self._chunk(json.dumps(line).encode() + b"\n")
        self._chunk(json.dumps({**final, "message": {"role": "assistant", "content": ""}}).encode() + b"\n")
        self._end_stream()

    # -- OpenAI -----------------------------------------------------------------------------
    def _openai_chat(self, body: dict[str, Any]) -> None:
        reply = self.fake._next_reply(body)
        _wait(reply)
        model = body.get("model", "fake-model")
        if reply.status >= 400:
            kind = {401: "invalid_api_key", 403: "permission_denied", 429: "rate_limit_exceeded"}.get(reply.status, "error")
            payload = {"error": {"message": reply.error or f"fake error {reply.status}", "type": kind, "code": kind}}
            self._send_json(reply.status, payload, reply.headers)
            return
        text = reply.answer_text()
        calls = [
            {"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
             "function": {"name": c["name"], "arguments": _tool_args(c.get("arguments", {}))}}
            for c in reply.tool_calls or []
        ]
        prompt_tokens = reply.prompt_tokens or _estimate_tokens(body.get("messages", []))
        completion_tokens = reply.completion_tokens or max(1, len(text) // 4 + len(calls) * 10)
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens}
        finish = reply.finish_reason or ("tool_calls" if calls else "stop")
        cid = f"chatcmpl-{uuid.uuid4().hex[:12]}"
        if not body.get("stream"):
            if reply.error:
                self._send_json(500, {"error": {"message": reply.error, "type": "server_error"}}, reply.headers)
                return
            message: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None}
            if calls:
                message["tool_calls"] = calls
            self._send_json(200, {
                "id": cid, "object": "chat.completion", "created": int(time.time()), "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage,
            }, reply.headers)
            return
        self._start_stream("text/event-stream", reply.headers, cut_after=reply.cut_after)

        def event(payload: Any) -> None:
            self._chunk(b"data: " + json.dumps(payload).encode() + b"\n\n")

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            return {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

        event(chunk({"role": "assistant", "content": ""}))
        if text:
            for i, piece in enumerate(_split(text, reply.chunks)):
                if i and reply.chunk_delay:
                    time.sleep(reply.chunk_delay)
                event(chunk({"content": piece}))
        if reply.hold_end is not None:
            reply.hold_end.wait(30)
        if reply.stall is not None:
            self._stall(reply.stall)
        if reply.error:
            event({"error": {"message": reply.error, "type": "server_error"}})
            self._end_stream()
            return
        for index, call in enumerate(calls):
            first, *rest = _split(call["function"]["arguments"], reply.tool_chunks)
            event(chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                         "function": {"name": call["function"]["name"], "arguments": first}}]}))
            for piece in rest:
                if reply.chunk_delay:
                    time.sleep(reply.chunk_delay)
                event(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
        event(chunk({}, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            event({"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model, "choices": [],
                   "usage": usage})
        self._chunk(b"data: [DONE]\n\n")
        self._end_stream()


    # -- Anthropic --------------------------------------------------------------------------
    def _anthropic(self, body: dict[str, Any]) -> None:
        reply = self.fake._next_reply(body)
        _wait(reply)
        if reply.status >= 400:
            kind = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error"}.get(reply.status, "api_error")
            self._send_json(reply.status, {"type": "error", "error": {"type": kind,
                                                                      "message": reply.error or f"fake error {reply.status}"}},
                            reply.headers)
            return
        forced = (body.get("tool_choice") or {}).get("name") if (body.get("tool_choice") or {}).get("type") == "tool" else None
        text = reply.answer_text()
        blocks: list[dict[str, Any]] = []
        if forced:
            blocks.append({"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:12]}", "name": forced, "json": text or "{}"})
        elif text:
            blocks.append({"type": "text", "text": text})
        for call in reply.tool_calls or []:
            blocks.append({"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:12]}", "name": call["name"],
                           "json": _tool_args(call.get("arguments", {}))})
        tokens_in = reply.prompt_tokens or _estimate_tokens(body.get("messages", []))
        tokens_out = reply.completion_tokens or max(1, len(text) // 4)
        self._start_stream("text/event-stream", reply.headers, cut_after=reply.cut_after)

        def event(name: str, payload: dict[str, Any]) -> None:
            self._chunk(f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode())

        event("message_start", {"type": "message_start", "message": {"id": f"msg_{uuid.uuid4().hex[:12]}", "type": "message",
              "role": "assistant", "model": body.get("model"), "content": [], "usage": {"input_tokens": tokens_in, "output_tokens": 1}}})
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                event("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
                for i, piece in enumerate(_split(block["text"], reply.chunks)):
                    if i and reply.chunk_delay:
                        time.sleep(reply.chunk_delay)
                    event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta",
                                                                                                           "text": piece}})
            else:
                event("content_block_start", {"type": "content_block_start", "index": index, "content_block": {
                    "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}})
                for i, piece in enumerate(_split(block["json"], reply.tool_chunks)):
                    if i and reply.chunk_delay:
                        time.sleep(reply.chunk_delay)
                    event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                  "delta": {"type": "input_json_delta", "partial_json": piece}})
            event("content_block_stop", {"type": "content_block_stop", "index": index})
        if reply.stall is not None:
            self._stall(reply.stall)
        if reply.error:
            event("error", {"type": "error", "error": {"type": "api_error", "message": reply.error}})
            self._end_stream()
            return
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": tokens_out}})
        event("message_stop", {"type": "message_stop"})
        self._end_stream()

    # -- Gemini -----------------------------------------------------------------------------
    def _gemini(self, body: dict[str, Any]) -> None:
        reply = self.fake._next_reply(body)
        _wait(reply)
        if reply.status >= 400:
            status = {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 429: "RESOURCE_EXHAUSTED"}.get(reply.status, "INTERNAL")
            self._send_json(reply.status, {"error": {"code": reply.status, "message": reply.error or f"fake error {reply.status}",
                                                     "status": status}}, reply.headers)
            return
        text = reply.answer_text()
        tokens_in = reply.prompt_tokens or _estimate_tokens(body.get("contents", []))
        tokens_out = reply.completion_tokens or max(1, len(text) // 4)
        pieces = [{"text": p} for p in _split(text, reply.chunks)] if text else []
        calls = [{"functionCall": {"name": c["name"], "args": c.get("arguments") if isinstance(c.get("arguments"), dict) else {}}}
                 for c in reply.tool_calls or []]
        usage = {"promptTokenCount": tokens_in, "candidatesTokenCount": tokens_out, "totalTokenCount": tokens_in + tokens_out}
        if ":streamGenerateContent" not in self.path:
            parts = ([{"text": text}] if text else []) + calls
            self._send_json(200, {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
                                  "usageMetadata": usage}, reply.headers)
            return
        self._start_stream("text/event-stream", reply.headers, cut_after=reply.cut_after)
        events = [[p] for p in pieces] + ([calls] if calls else [])
        for i, parts in enumerate(events or [[{"text": ""}]]):
            if i and reply.chunk_delay:
                time.sleep(reply.chunk_delay)
            last = i == len(events or [[]]) - 1
            candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
            if last and not reply.error:
                candidate["finishReason"] = "STOP"
            payload: dict[str, Any] = {"candidates": [candidate]}
            if last:
                payload["usageMetadata"] = usage
            self._chunk(b"data: " + json.dumps(payload).encode() + b"\r\n\r\n")
        if reply.error:
            self._chunk(b"data: " + json.dumps({"error": {"code": 500, "message": reply.error,
                                                          "status": "INTERNAL"}}).encode() + b"\r\n\r\n")
        self._end_stream()


# --------------------------------------------------------------------------- helpers for tests


def use_fake_llm(
    fake: FakeLLM,
    bot_id: int | None = None,
    provider: str = "ollama",
    *,
    model: str = "fake-model",
    categories: tuple[str, ...] = ("decision", "tools", "output"),
    **fields: Any,
) -> None:
    """Point a bot (or the global default when ``bot_id`` is None) at ``fake`` for every category.

    ``provider`` is ``"ollama"``, ``"openai"`` (an OpenAI-compatible server), ``"anthropic"`` or ``"gemini"``; extra
    ``fields`` (context_window, temperature, fallback_model, api_key ...) go to ``set_llm``.
    """
    from grobot.core.db import session_scope
    from grobot.core.services import llm_settings

    base_url = fake.base_url_for(provider)
    if provider != "ollama":
        fields.setdefault("api_key", "sk-test-fake")
    with session_scope() as session:
        for category in categories:
            llm_settings.set_llm(session=session, category=category, bot_id=bot_id, provider=provider,
                                 base_url=base_url, model=model, **fields)


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A started :class:`FakeLLM`, stopped after the test."""
    fake = FakeLLM().start()
    try:
        yield fake
    finally:
        fake.stop()


# --------------------------------------------------------------------------- chain test helpers


class EventCollector:
    """An event sink that keeps every event (``await collector(event)``)."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    async def __call__(self, event: Any) -> None:
        self.events.append(event)

    def kinds(self) -> list[str]:
        return [e.kind.value for e in self.events]

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.kind.value == kind]

    def text(self) -> str:
        return "".join(e.data["text"] for e in self.of("token"))


class FakeToolCatalog:
    """A :class:`~grobot.core.tools.base.ToolCatalog` of Python functions, for chain tests.

    ``add(name, func, schema=..., read_only=..., writes=..., fallback=..., timeout=..., from_user=..., source=...)``
    (``writes`` defaults to whether it keeps the user's words, ``from_user``): ``func`` is an
    async function taking the arguments as keywords and returning a string or a ToolResult
    (or raising ToolError). ``calls`` records ``(name, arguments)`` in call order.
    """

    def __init__(self) -> None:
        self.specs: dict[str, Any] = {}
        self.funcs: dict[str, Callable[..., Any]] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.missing: dict[str, str] = {}

    def add(self, name: str, func: Callable[..., Any], *, schema: dict[str, Any] | None = None, description: str = "",
            read_only: bool = False, writes: bool | None = None, fallback: str | None = None,
            timeout: float | None = None, from_user: tuple[str, ...] = (), source: str = "builtin") -> FakeToolCatalog:
        from grobot.core.tools.base import ToolSpec

        self.specs[name] = ToolSpec(name=name, description=description or f"the {name} tool",
                                    input_schema=schema or {"type": "object", "properties": {}},
                                    read_only=read_only, writes=bool(from_user) if writes is None else writes,
                                    fallback=fallback, timeout_seconds=timeout, from_user=from_user, source=source)
        self.funcs[name] = func
        return self

    async def list_tools(self) -> list[Any]:
        return list(self.specs.values())

    async def call_tool(self, name: str, arguments: dict[str, Any], *, context: Any, timeout: float) -> Any:
        from grobot.core.tools.base import SERVER_FAILED, ToolError, ToolResult

        self.calls.append((name, dict(arguments)))
        if name not in self.funcs:
            raise ToolError(f"unknown tool {name!r}")
        try:  # like the real catalogs, the call's own timeout is a retryable fault
            value = await asyncio.wait_for(self.funcs[name](**arguments), timeout)
        except TimeoutError:
            raise ToolError(f"tool {name} did not answer within {timeout:g} s (timed out)", may_have_run=True) from None
        except ToolError as exc:  # a tool of an MCP server fails as the hub's do: in plain words for the model
            if self.specs[name].source != "builtin":
                exc.told = exc.told or SERVER_FAILED
            raise
        return value if isinstance(value, ToolResult) else ToolResult(content=str(value))

    def unavailable(self) -> dict[str, str]:
        return dict(self.missing)
