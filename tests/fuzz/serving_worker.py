"""Fuzz worker targets for the surfaces of issue 43 (run inside ``worker.py``'s sandboxed
process; never imported by pytest): safetensors headers (differential against the
``safetensors`` library), release bundles and pointers, playground HTTP requests (one
loopback server per worker process) and runtime API calls.

Each ``run_*`` returns ``ok``, ``fail_open`` or ``untyped`` (HTTP 500) / ``hang`` (no
reply) for the server, or raises (a TokenpactError is ``typed``, anything else
``untyped``: ``worker.run_one`` classifies).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

KINDS = ("safetensors", "release", "pointer", "serve", "runtime")


def run(kind: str, path: str, spec: dict[str, Any]) -> str:
    if kind == "safetensors":
        return _run_safetensors(path)
    if kind == "release":
        return _run_release(path, spec)
    if kind == "pointer":
        return _run_pointer(path)
    if kind == "serve":
        return _run_serve(path, spec)
    return _run_runtime(path)


def _values(path: str) -> Any:
    return json.loads(Path(path).read_bytes().decode("utf-8", "surrogatepass"))


# ------------------------------------------------------------------ safetensors
def _run_safetensors(path: str) -> str:
    """Accepted by us => accepted by the library with the same bytes per tensor."""
    import safetensors

    from tokenpact.contract.safetensors_header import read_safetensors

    data = Path(path).read_bytes()
    try:
        theirs: dict[str, bytes] | None = {
            name: bytes(view["data"]) for name, view in safetensors.deserialize(data)
        }
    except Exception:  # noqa: BLE001 - any refusal of the library
        theirs = None
    ours = read_safetensors(path)  # a refusal raises ArtifactError: typed
    if theirs is None or set(theirs) != set(ours.tensors):
        return "fail_open"
    for name, info in ours.tensors.items():
        if data[info.begin : info.end] != theirs[name]:
            return "fail_open"
    return "ok"


# ------------------------------------------------------------------ release
def _run_release(path: str, spec: dict[str, Any]) -> str:
    """A bundle that passes every check is the sealed one, field for field."""
    from tokenpact.migrate import release

    report = release.check_release(path, previous=spec["previous"])
    if not report.ok:
        return "typed"
    try:
        same = json.loads(Path(path).read_text(encoding="utf-8")) == spec["original"]
    except ValueError:
        same = False
    return "ok" if same else "fail_open"


def _run_pointer(path: str) -> str:
    """A pointer either reads as the promoted one or is refused; a rollback through it
    lands on a bundle whose bytes the pointer recorded."""
    from tokenpact.contract import file_sha256
    from tokenpact.migrate import release

    release.current_bundle(path)
    state = json.loads(Path(path).read_text(encoding="utf-8"))
    release.rollback(pointer=path)
    target = state["history"][-1]
    if file_sha256(Path(path).parent / target["bundle"]) != target["bundle_sha256"]:
        return "fail_open"
    return "ok"


# ------------------------------------------------------------------ playground
_SERVER: dict[str, Any] = {}
REPLY_TIMEOUT_S = 60.0


def _port(spec: dict[str, Any]) -> int:
    if "port" not in _SERVER:
        import uvicorn

        from tokenpact.cli.serve_cmd import bind_socket
        from tokenpact.serve import ServeLimits, TokenizerRegistry, create_app

        app = create_app(
            TokenizerRegistry(dirs=[spec["dir"]]), limits=ServeLimits(body_timeout_s=0.5)
        )
        sock = bind_socket("127.0.0.1", 0)
        server = uvicorn.Server(uvicorn.Config(app, log_level="critical", limit_concurrency=64))
        threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
        while not server.started:
            time.sleep(0.01)
        _SERVER.update(port=sock.getsockname()[1], server=server)
    port: int = _SERVER["port"]
    return port


def _request_bytes(request: Any) -> bytes:
    if not isinstance(request, dict):
        request = {"route": "/api/encode", "body": request}
    method = request.get("method", "POST")
    route = request.get("route", "/api/encode")
    body = request.get("body")
    raw = body if isinstance(body, str) else json.dumps(body)
    data = raw.encode("utf-8", "surrogatepass")
    length = len(data) + (100 if request.get("lie") is True else 0)
    head = f"{method} {route} HTTP/1.1\r\nHost: fuzz\r\ncontent-type: application/json\r\n"
    head += f"content-length: {length}\r\nconnection: close\r\n\r\n"
    return head.encode("utf-8", "surrogatepass") + data


def _run_serve(path: str, spec: dict[str, Any]) -> str:
    """Every request is answered with a status that is not 500, in bounded time."""
    payload = _request_bytes(_values(path))
    with socket.create_connection(("127.0.0.1", _port(spec))) as conn:
        conn.settimeout(REPLY_TIMEOUT_S)
        try:
            conn.sendall(payload)
            reply = conn.recv(64)
        except TimeoutError:
            return "hang"
        except ConnectionError:
            reply = b""
    if not reply.startswith(b"HTTP/1.1 "):
        return "untyped"  # closed without a status
    status = int(reply[9:12])
    if status >= 500 and status != 503:
        return "untyped"
    return "ok" if status == 200 else "typed"


# ------------------------------------------------------------------ runtime API
_TOK: list[Any] = []


def _tok() -> Any:
    import tokenpact as tp

    if not _TOK:
        _TOK.append(
            tp.Tokenizer.from_merges(
                [(104, 101), (108, 108), (256, 108)], special_tokens=("<|eos|>",)
            )
        )
    return _TOK[0]


def _ids_like(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(i, int) and not isinstance(i, bool) for i in value
    )


def _run_runtime(path: str) -> str:
    """Typed refusal or the one-shot result: never a wrong type accepted."""
    from tokenpact.chat.stop import StopPolicy
    from tokenpact.runtime import IncrementalDecoder, OutputStream, StreamingEncoder

    call = _values(path)
    if not isinstance(call, dict):
        call = {"api": "push_bytes", "arg": call}
    api, arg = call.get("api"), call.get("arg")
    tok = _tok()
    if api in ("push_bytes", "push_bytes_reference"):
        enc = StreamingEncoder(tok, native=api == "push_bytes")
        data = arg.encode("utf-8", "surrogatepass") if isinstance(arg, str) else arg
        ids = enc.push_bytes(data) + enc.finish()
        if not isinstance(data, bytes):
            return "fail_open"  # a non-bytes argument was accepted
        return "ok" if ids == tok.encode(data.decode("utf-8")) else "fail_open"
    if api == "push":
        enc = StreamingEncoder(tok)
        ids = enc.push(arg) + enc.finish()
        return "ok" if isinstance(arg, str) and ids == tok.encode(arg) else "fail_open"
    if api == "decode_push":
        dec = IncrementalDecoder(tok)
        text = dec.push(arg) + dec.finish()
        batch = [arg] if isinstance(arg, int) and not isinstance(arg, bool) else arg
        if not _ids_like(batch):
            return "fail_open"
        return "ok" if text == tok.decode(batch, errors="replace") else "fail_open"
    options = arg if isinstance(arg, dict) else {"stop_ids": arg}
    # Unknown keyword names are Python's own TypeError, not an input the API parses.
    known = ("stop_ids", "stop_sequences", "stop_strings", "max_new_tokens", "prompt_length")
    policy = StopPolicy(**{k: v for k, v in options.items() if k in known})
    stream = OutputStream(tok, policy)
    stream.push(call.get("ids", [104, 101, 108]))
    stream.finish()
    return "ok"
