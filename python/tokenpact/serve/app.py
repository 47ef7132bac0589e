"""The playground's ASGI app: static page files plus a small bounded JSON API.

Routes: ``GET /`` (the page), ``GET /static/...``, ``GET /api/tokenizers``,
``POST /api/encode``, ``POST /api/compare``, ``POST /api/chat``, ``POST /api/stream``,
``GET /api/audit``.
Errors are JSON
``{"error": message}`` with 400 (malformed request: not JSON, nested too deep, an
integer beyond Python's digit limit, a lone surrogate, a bad tokenizer name), 404
(unknown tokenizer), 408 (the body did not arrive in time), 413 (over a bound) or 422
(a valid request the tokenizer or template refuses). Nothing here writes a file; the
page loads no resource from another origin (the Content-Security-Policy header forbids
it).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import InvalidInputError, TokenpactError
from . import streaming, views
from .registry import TokenizerRegistry, UnknownTokenizerName

STATIC = Path(__file__).parent / "static"
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none';"
        b" form-action 'none'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


@dataclass(frozen=True)
class ServeLimits:
    """Bounds on one request; anything larger is refused with 413 before any work."""

    max_body_bytes: int = 1 << 20
    max_text_chars: int = 50_000
    max_messages: int = 64
    max_conversation_chars: int = 50_000
    max_compare: int = 6
    # Streaming replays every push (and re-encodes the provisional tail each time), so
    # its text and step count have their own, smaller bounds.
    max_stream_bytes: int = 8192
    max_stream_steps: int = 1024
    max_chunk_size: int = 4096
    max_stop_strings: int = 16
    max_stop_chars: int = 256
    max_new_tokens: int = 1 << 20
    max_json_depth: int = 32
    # Seconds the whole request body may take to arrive (408 after).
    body_timeout_s: float = 10.0


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class _SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _read_body(request: Request, limits: ServeLimits) -> bytes:
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limits.max_body_bytes:
            raise ApiError(413, f"request body exceeds {limits.max_body_bytes} bytes")
    return bytes(body)


def _check_values(data: Any, limits: ServeLimits) -> None:
    """400 for what no route can use: nesting deeper than ``max_json_depth`` and strings
    holding a lone surrogate (a ``\\ud800`` escape: not text, and not encodable)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > limits.max_json_depth:
            raise ApiError(400, f"the body nests deeper than {limits.max_json_depth} levels")
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise ApiError(400, "the body holds a lone surrogate escape, not text") from None
        elif isinstance(value, dict):
            stack.extend((k, depth + 1) for k in value)
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


async def _read_json(request: Request, limits: ServeLimits) -> dict[str, Any]:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limits.max_body_bytes:
        raise ApiError(
            413, f"request body is {declared} bytes; the limit is {limits.max_body_bytes}"
        )
    # A client that declares more bytes than it sends would hold the request (and a
    # worker) forever: the whole body must arrive within the read timeout.
    try:
        body = await asyncio.wait_for(_read_body(request, limits), limits.body_timeout_s)
    except asyncio.TimeoutError:
        raise ApiError(408, f"the body did not arrive within {limits.body_timeout_s} s") from None
    try:
        data = json.loads(body.decode("utf-8"))
    except RecursionError:
        raise ApiError(400, f"the body nests deeper than {limits.max_json_depth} levels") from None
    except (UnicodeDecodeError, ValueError) as exc:
        # ValueError besides JSONDecodeError: an integer beyond Python's digit limit.
        raise ApiError(400, f"the body is not valid JSON: {str(exc)[:200]}") from None
    _check_values(data, limits)
    if not isinstance(data, dict):
        raise ApiError(400, "the body must be a JSON object")
    return data


def _text(data: dict[str, Any], limits: ServeLimits) -> str:
    text = data.get("text")
    if not isinstance(text, str):
        raise ApiError(400, '"text" must be a string')
    if len(text) > limits.max_text_chars:
        raise ApiError(
            413, f"text has {len(text):,} characters; the limit is {limits.max_text_chars:,}"
        )
    return text


def _messages(data: dict[str, Any], limits: ServeLimits) -> list[dict[str, Any]]:
    messages = data.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise ApiError(400, '"messages" must be a list of {"role": ..., "content": ...} objects')
    if not messages:
        raise ApiError(400, '"messages" is empty')
    if len(messages) > limits.max_messages:
        raise ApiError(413, f"{len(messages)} messages; the limit is {limits.max_messages}")
    size = len(json.dumps(messages, ensure_ascii=False))
    if size > limits.max_conversation_chars:
        raise ApiError(
            413,
            f"the conversation is {size:,} characters of JSON;"
            f" the limit is {limits.max_conversation_chars:,}",
        )
    for i, message in enumerate(messages):
        if not isinstance(message.get("role"), str):
            raise ApiError(400, f'message {i} has no string "role"')
    return messages


def _stream_options(
    data: dict[str, Any], text: str, limits: ServeLimits
) -> tuple[int, list[str], int | None]:
    """``chunk_size``, ``stop_strings`` and ``max_new_tokens`` of a stream request."""
    chunk = data.get("chunk_size", 4)
    if type(chunk) is not int or not 1 <= chunk <= limits.max_chunk_size:
        raise ApiError(400, f'"chunk_size" must be an integer from 1 to {limits.max_chunk_size}')
    n_bytes = len(text.encode("utf-8"))
    if n_bytes > limits.max_stream_bytes:
        raise ApiError(
            413,
            f"streaming text is {n_bytes:,} bytes; the limit is {limits.max_stream_bytes:,}",
        )
    steps = -(-n_bytes // chunk)
    if steps > limits.max_stream_steps:
        raise ApiError(
            413,
            f"{steps:,} pushes of {chunk} bytes; the limit is {limits.max_stream_steps:,}"
            f" (raise chunk_size to at least {-(-n_bytes // limits.max_stream_steps)})",
        )
    stops = data.get("stop_strings", [])
    if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops):
        raise ApiError(400, '"stop_strings" must be a list of non-empty strings')
    if len(stops) > limits.max_stop_strings:
        raise ApiError(413, f"{len(stops)} stop strings; the limit is {limits.max_stop_strings}")
    if any(len(s) > limits.max_stop_chars for s in stops):
        raise ApiError(413, f"a stop string is longer than {limits.max_stop_chars} characters")
    budget = data.get("max_new_tokens")
    if budget is not None and (type(budget) is not int or not 1 <= budget <= limits.max_new_tokens):
        raise ApiError(
            400, f'"max_new_tokens" must be null or an integer from 1 to {limits.max_new_tokens}'
        )
    return chunk, stops, budget


Handler = Callable[[Request], Awaitable[Any]]


def _api(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """Turn a handler's result into JSON and every expected failure into a JSON error."""

    async def endpoint(request: Request) -> Response:
        try:
            return JSONResponse(await handler(request))
        except ApiError as exc:
            return JSONResponse({"error": str(exc)}, status_code=exc.status)
        except UnknownTokenizerName as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        except InvalidInputError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        except TokenpactError as exc:
            return JSONResponse({"error": f"{type(exc).__name__}: {exc}"}, status_code=422)

    return endpoint


# The page's icon (browsers ask for /favicon.ico whatever the page declares).
FAVICON = (
    b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
    b'<rect width="16" height="16" rx="3" fill="#2b59c3"/>'
    b'<rect x="3" y="4" width="4" height="8" rx="1" fill="#fff"/>'
    b'<rect x="9" y="4" width="4" height="8" rx="1" fill="#ffd166"/></svg>'
)


def create_app(registry: TokenizerRegistry, *, limits: ServeLimits | None = None) -> Starlette:
    """The playground app over the tokenizers of ``registry``."""
    bounds = limits or ServeLimits()

    async def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    async def list_tokenizers(request: Request) -> dict[str, Any]:
        return {
            "tokenizers": registry.describe(),
            "limits": {
                "max_text_chars": bounds.max_text_chars,
                "max_messages": bounds.max_messages,
                "max_conversation_chars": bounds.max_conversation_chars,
                "max_compare": bounds.max_compare,
                "max_stream_bytes": bounds.max_stream_bytes,
                "max_stream_steps": bounds.max_stream_steps,
                "max_chunk_size": bounds.max_chunk_size,
                "max_stop_strings": bounds.max_stop_strings,
            },
        }

    async def encode(request: Request) -> dict[str, Any]:
        data = await _read_json(request, bounds)
        text = _text(data, bounds)
        name = data.get("tokenizer")
        registry.entry(name)  # 400/404 before any loading
        tok = await run_in_threadpool(registry.tokenizer, name)
        return {"tokenizer": name, **await run_in_threadpool(views.encode_view, tok, text)}

    async def compare(request: Request) -> dict[str, Any]:
        data = await _read_json(request, bounds)
        text = _text(data, bounds)
        names = data.get("tokenizers")
        if not isinstance(names, list) or len(names) < 2:
            raise ApiError(400, '"tokenizers" must be a list of at least two names')
        if len(names) > bounds.max_compare:
            raise ApiError(413, f"{len(names)} tokenizers; the limit is {bounds.max_compare}")
        for name in names:
            registry.entry(name)
        named = [(name, await run_in_threadpool(registry.tokenizer, name)) for name in names]
        return await run_in_threadpool(views.compare_view, named, text)

    async def chat(request: Request) -> dict[str, Any]:
        data = await _read_json(request, bounds)
        messages = _messages(data, bounds)
        name = data.get("tokenizer")
        registry.entry(name)
        template = await run_in_threadpool(registry.chat_template, name)
        if template is None:
            raise ApiError(
                422,
                f"tokenizer {name!r} has no chat template: serve a model directory holding "
                "chat_template.jinja or a tokenizer_config.json with a chat_template",
            )
        tok = registry.tokenizer(name)
        generation = bool(data.get("add_generation_prompt", True))
        view = views.injection_view if data.get("inject") else views.chat_view
        try:
            result = await run_in_threadpool(
                lambda: view(tok, template, messages, add_generation_prompt=generation)
            )
        except (ValueError, TypeError) as exc:  # message-shape problems the template found
            if isinstance(exc, TokenpactError):
                raise
            raise ApiError(422, f"cannot render this conversation: {exc}") from None
        return {"tokenizer": name, "inject": bool(data.get("inject")), **result}

    async def stream(request: Request) -> dict[str, Any]:
        data = await _read_json(request, bounds)
        text = _text(data, bounds)
        chunk, stops, budget = _stream_options(data, text, bounds)
        name = data.get("tokenizer")
        registry.entry(name)
        tok = await run_in_threadpool(registry.tokenizer, name)
        view = await run_in_threadpool(
            lambda: streaming.stream_view(
                tok, text, chunk_size=chunk, stop_strings=stops, max_new_tokens=budget
            )
        )
        return {"tokenizer": name, **view}

    audits: dict[tuple[str, int], dict[str, Any]] = {}

    async def audit(request: Request) -> dict[str, Any]:
        name = request.query_params.get("tokenizer")
        registry.entry(name)
        raw = request.query_params.get("d_model", "4096")
        # isdigit() alone admits '²' and other digits int() refuses.
        if not (raw.isascii() and raw.isdigit() and len(raw) <= 6) or not 1 <= int(raw) <= 1 << 16:
            raise ApiError(400, '"d_model" must be an integer from 1 to 65536')
        key = (str(name), int(raw))
        if key not in audits:  # the vocabulary audit takes a second or two on 150k IDs
            tok = await run_in_threadpool(registry.tokenizer, name)
            audits[key] = await run_in_threadpool(lambda: views.audit_view(tok, d_model=key[1]))
        return {"tokenizer": name, **audits[key]}

    async def favicon(request: Request) -> Response:
        return Response(FAVICON, media_type="image/svg+xml")

    routes = [
        Route("/", index),
        Route("/favicon.ico", favicon),
        Route("/api/tokenizers", _api(list_tokenizers)),
        Route("/api/encode", _api(encode), methods=["POST"]),
        Route("/api/compare", _api(compare), methods=["POST"]),
        Route("/api/chat", _api(chat), methods=["POST"]),
        Route("/api/stream", _api(stream), methods=["POST"]),
        Route("/api/audit", _api(audit)),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes)
    app.add_middleware(_SecurityHeaders)
    return app
