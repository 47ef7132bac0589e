"""The playground under hostile requests (issue 43): every request gets a typed status,
a body that never arrives gets 408, SIGTERM stops the server with such a connection
open, a failed bind exits 1, and no file outside a --dir entry is read through a link.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

from starlette.testclient import TestClient  # noqa: E402

from security.hostile import package_root  # noqa: E402
from tokenpact.serve import TokenizerRegistry, create_app  # noqa: E402

POSTS = {
    "/api/encode": {"tokenizer": "small", "text": "hi"},
    "/api/compare": {"tokenizers": ["small", "tiny"], "text": "hi"},
    "/api/chat": {"tokenizer": "small", "messages": [{"role": "user", "content": "hi"}]},
    "/api/stream": {"tokenizer": "small", "text": "hi", "chunk_size": 2},
}


@pytest.fixture(scope="module")
def client(tokenizer_dir: Path) -> TestClient:
    return TestClient(create_app(TokenizerRegistry(dirs=[tokenizer_dir])))


@pytest.mark.parametrize("route", sorted(POSTS))
def test_deep_json_and_huge_integers_are_400(client: TestClient, route: str) -> None:
    """Issue 43: HTTP 500 on a deep JSON body and a 5,000-digit integer (all POST routes)."""
    deep = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
    huge = '{"text": "x", "chunk_size": ' + "9" * 5000 + "}"
    shallow_deep = '{"text": ' + "[" * 40 + "]" * 40 + "}"
    for body in (deep, huge, shallow_deep):
        response = client.post(route, content=body, headers={"content-type": "application/json"})
        assert response.status_code == 400, (route, response.text[:200])
        assert "error" in response.json()


@pytest.mark.parametrize("route", sorted(POSTS))
def test_lone_surrogates_are_400(client: TestClient, route: str) -> None:
    """Issue 43: a lone surrogate in text or stop strings was HTTP 500."""
    for key, value in (("text", "a\\ud800b"), ("stop_strings", ["\\udfff"])):
        body = dict(POSTS[route])
        raw = body | {key: "@@"}
        text = __import__("json").dumps(raw).replace('"@@"', __import__("json").dumps(value))
        text = text.replace("\\\\u", "\\u")
        response = client.post(route, content=text, headers={"content-type": "application/json"})
        assert response.status_code == 400, (route, key, response.text[:200])


@pytest.mark.parametrize("value", ["²", "٣", "1e3", "-4", "0", "9" * 5000, ""])
def test_audit_d_model_must_be_ascii_digits(client: TestClient, value: str) -> None:
    """Issue 43: d_model=² passed isdigit() and crashed int() (HTTP 500)."""
    response = client.get("/api/audit", params={"tokenizer": "small", "d_model": value})
    assert response.status_code == 400, response.text[:200]


@pytest.fixture()
def linked_dir(tokenizer_dir: Path, tmp_path: Path) -> Path:
    """A --dir whose entry links a chat template and a config to a secret outside it."""
    served = tmp_path / "served"
    served.mkdir()
    shutil.copytree(tokenizer_dir / "small", served / "small")
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET {{ messages }}")
    (served / "small" / "chat_template.jinja").symlink_to(secret)
    shutil.copytree(tokenizer_dir / "tiny", served / "tiny")
    (served / "tiny" / "special_tokens_map.json").symlink_to(secret)
    return served


def test_links_out_of_a_dir_entry_are_never_read(linked_dir: Path) -> None:
    """Issue 43: a chat_template.jinja symlink pointing outside the directory was read
    and its text sent to the client."""
    client = TestClient(create_app(TokenizerRegistry(dirs=[linked_dir])))
    listed = {t["name"]: t for t in client.get("/api/tokenizers").json()["tokenizers"]}
    assert not listed["small"]["chat_template"]
    chat = client.post("/api/chat", json=POSTS["/api/chat"])
    assert chat.status_code == 422 and "TOP-SECRET" not in chat.text
    encode = client.post("/api/encode", json={"tokenizer": "tiny", "text": "hi"})
    assert encode.status_code == 422 and "links outside" in encode.json()["error"]
    assert "TOP-SECRET" not in encode.text
    # Named explicitly with --tokenizer, the same directory is the user's choice: served.
    named = TokenizerRegistry([("tiny", linked_dir / "tiny")])
    assert named.tokenizer("tiny").vocab_size > 0


# ------------------------------------------------------------------ a real server
def _serve(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": package_root()}
    return subprocess.Popen(
        [sys.executable, "-m", "tokenpact.cli", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _started(proc: subprocess.Popen[str]) -> int:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert "playground on http://127.0.0.1:" in line, line + (
        proc.stderr.read() if proc.stderr else ""
    )
    return int(line.split("127.0.0.1:")[1].split("/")[0])


def test_a_short_body_gets_408_and_sigterm_stops_the_server(tokenizer_dir: Path) -> None:
    """Issue 43: a Content-Length longer than the body was never answered, and SIGTERM
    did not stop the server while such a connection was open."""
    proc = _serve("--dir", str(tokenizer_dir), "--port", "0", "--body-timeout", "0.5")
    try:
        port = _started(proc)
        with socket.create_connection(("127.0.0.1", port)) as conn:
            # A safety net against a hang, not a timing assertion.
            conn.settimeout(120)
            conn.sendall(
                b"POST /api/encode HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
                b'content-length: 1000\r\n\r\n{"text": '
            )
            reply = conn.recv(4096)
            assert reply.startswith(b"HTTP/1.1 408"), reply[:200]
        held = socket.create_connection(("127.0.0.1", port))
        held.sendall(b"POST /api/encode HTTP/1.1\r\nHost: x\r\ncontent-length: 50\r\n\r\n{")
        proc.send_signal(signal.SIGTERM)
        # uvicorn shuts down, then re-raises the signal: the process ends by SIGTERM.
        assert proc.wait(timeout=120) in (0, -signal.SIGTERM)
        assert "Traceback" not in (proc.stderr.read() if proc.stderr else "")
        held.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _response(conn: socket.socket) -> bytes:
    """One whole HTTP response (head and Content-Length body) read from ``conn``."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        assert chunk, data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = conn.recv(4096)
        assert chunk, body
        body += chunk
    return head + b"\r\n\r\n" + body


def _closed_by_server(conn: socket.socket) -> bool:
    """Whether the server closes ``conn`` (reads until EOF; a reset counts as closed)."""
    # A safety net against a hang, not a timing assertion.
    conn.settimeout(120)
    try:
        while conn.recv(4096):
            pass
    except ConnectionResetError:
        pass
    except TimeoutError:
        return False
    return True


def test_a_request_head_that_never_completes_is_closed(tokenizer_dir: Path) -> None:
    """Slowloris: a connection that sends part of a request head (or nothing) held its
    connection slot forever (uvicorn has no header timeout, and its keep-alive timer
    stops at the first byte of the next request). The server closes it after
    --header-timeout; a complete request is still answered."""
    proc = _serve("--dir", str(tokenizer_dir), "--port", "0", "--header-timeout", "0.5")
    try:
        port = _started(proc)
        head = b"GET /api/tokenizers HTTP/1.1\r\nHost: x\r\n"
        with socket.create_connection(("127.0.0.1", port)) as partial:
            partial.sendall(head + b"X-Slow: 1\r\n")
            assert _closed_by_server(partial)
        with socket.create_connection(("127.0.0.1", port)) as silent:
            assert _closed_by_server(silent)
        with socket.create_connection(("127.0.0.1", port)) as kept:
            kept.settimeout(120)
            # A head sent in pieces is answered; then the next head on the same
            # keep-alive connection gets its own bound.
            kept.sendall(head)
            kept.sendall(b"\r\n")
            assert _response(kept).startswith(b"HTTP/1.1 200")
            kept.sendall(head)
            assert _closed_by_server(kept)
        assert proc.poll() is None  # the server itself runs on
    finally:
        proc.kill()
        proc.wait()
    assert "Traceback" not in (proc.stderr.read() if proc.stderr else "")


def test_a_failed_bind_exits_1_with_a_message(tokenizer_dir: Path) -> None:
    """Issue 43: a failed bind exited 3, outside the documented 0/1/2."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = _serve("--dir", str(tokenizer_dir), "--port", str(port))
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert "cannot listen on 127.0.0.1" in err and "Traceback" not in err
