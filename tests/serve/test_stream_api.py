"""``POST /api/stream``: the playground's streaming view against the runtime run directly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402

from tokenpact.runtime import OutputStream, StopPolicy, StreamingEncoder  # noqa: E402
from tokenpact.serve import ServeLimits, TokenizerRegistry, create_app  # noqa: E402

TEXT = "naïve café 日本語 🤖 x += 1\nthe cat STOP sat on the mat<|im_end|> after"


@pytest.fixture(scope="module")
def registry(tokenizer_dir: Path, chat_model_dir: Path) -> TokenizerRegistry:
    return TokenizerRegistry([("qwen", chat_model_dir)], dirs=[tokenizer_dir])


@pytest.fixture(scope="module")
def client(registry: TokenizerRegistry) -> TestClient:
    limits = ServeLimits(max_text_chars=2000, max_stream_bytes=600, max_stream_steps=200)
    return TestClient(create_app(registry, limits=limits))


def _stream(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/api/stream", json=body)
    assert response.status_code == 200, response.json()
    data: dict[str, Any] = response.json()
    return data


@pytest.mark.parametrize("name", ["small", "tiny", "qwen"])
@pytest.mark.parametrize("chunk_size", [1, 2, 3, 5, 17, 4096])
def test_committed_ids_are_encode(
    client: TestClient, registry: TokenizerRegistry, name: str, chunk_size: int
) -> None:
    tok = registry.tokenizer(name)
    data = _stream(client, tokenizer=name, text=TEXT, chunk_size=chunk_size)
    expected = tok.encode(TEXT)
    inbound = data["inbound"]
    committed = [i for step in inbound for i in step["committed"]]
    assert committed == data["ids"] == expected
    raw = TEXT.encode()
    assert len(inbound) == -(-len(raw) // chunk_size) + 1  # every push, then finish()
    assert b"".join(bytes.fromhex(s["chunk_hex"]) for s in inbound[:-1]) == raw
    assert inbound[-1]["chunk_hex"] is None and inbound[-1]["provisional"] == []
    assert inbound[-1]["committed_total"] == len(expected)
    total = 0
    for step in inbound[:-1]:
        total += len(step["committed"])
        assert step["committed_total"] == total
        # What is committed is final: a prefix of encode. The provisional tail is the
        # encoding of the undecided text, which is exactly what has arrived beyond it.
        assert expected[:total] == committed[:total]
        assert step["provisional"] == tok.encode(step["pending_text"])
    assert data["rule"] == StreamingEncoder(tok).rule


def test_provisional_matches_a_direct_encoder(
    client: TestClient, registry: TokenizerRegistry
) -> None:
    tok = registry.tokenizer("small")
    data = _stream(client, tokenizer="small", text=TEXT, chunk_size=3)
    encoder = StreamingEncoder(tok, scan_step=0)  # as the demo streams
    raw = TEXT.encode()
    for k, step in enumerate(data["inbound"][:-1]):
        assert step["committed"] == encoder.push_bytes(raw[3 * k : 3 * k + 3])
        assert step["provisional"] == encoder.provisional()
        assert step["pending_text"] == encoder.pending_text
    # A chunk ending inside "ï" is shown with the split byte escaped and marked.
    assert data["inbound"][0]["chunk_text"] == "na\\xc3" and data["inbound"][0]["chunk_partial"]
    assert any(step["provisional"] for step in data["inbound"][:-1])


def _direct(tok: Any, ids: list[int], policy: StopPolicy) -> tuple[list[str], OutputStream]:
    out = OutputStream(tok, policy)
    visible = []
    for token_id in ids:
        delta = out.push(token_id)
        visible.append(delta.text)
        if delta.finished:
            break
    if not out.finished:
        visible.append(out.finish().text)
    return visible, out


@pytest.mark.parametrize(
    ("stops", "budget"),
    [([], None), (["STOP"], None), (["T S", "mat"], None), (["STOP"], 5), (["nowhere"], None)],
)
@pytest.mark.parametrize("name", ["small", "qwen"])
def test_stop_decision_is_the_output_stream(
    client: TestClient,
    registry: TokenizerRegistry,
    name: str,
    stops: list[str],
    budget: int | None,
) -> None:
    tok = registry.tokenizer(name)
    data = _stream(
        client, tokenizer=name, text=TEXT, chunk_size=4, stop_strings=stops, max_new_tokens=budget
    )
    out = data["outbound"]
    visible, direct = _direct(
        tok, tok.encode(TEXT), StopPolicy(stop_strings=stops, max_new_tokens=budget)
    )
    assert [s["visible"] for s in out["steps"]] == visible
    assert out["visible_text"] == direct.visible_text == "".join(visible)
    assert out["finish_reason"] == direct.finish_reason
    assert out["matched_stop"] == direct.matched_stop
    assert out["processed"] == len(direct.processed_ids)
    ids = tok.encode(TEXT)
    if direct.finish_reason == "end":
        assert out["stop_position"] is None and out["steps"][-1]["id"] is None
        assert out["visible_text"] == tok.decode(ids)
    else:
        assert out["stop_position"] == len(direct.processed_ids) - 1
        assert [s["id"] for s in out["steps"]] == ids[: out["stop_position"] + 1]
    if stops == ["STOP"] and budget is None:
        assert out["finish_reason"] == "stop" and out["matched_stop"] == "STOP"
        assert out["visible_text"] == TEXT[: TEXT.index("STOP")]
    if budget == 5:
        assert out["finish_reason"] == "length" and out["stop_position"] == 4


def test_stream_bounds_and_errors(client: TestClient) -> None:
    def post(**body: Any) -> tuple[int, str]:
        response = client.post("/api/stream", json={"tokenizer": "small", "text": "hi", **body})
        return response.status_code, str(response.json().get("error", ""))

    assert post()[0] == 200  # chunk_size defaults
    for chunk in (0, -1, 4097, 2.5, "3", True, None):
        status, message = post(chunk_size=chunk)
        assert status == 400 and "chunk_size" in message, chunk
    for stops in ("STOP", [""], [1], {"a": 1}):
        status, message = post(stop_strings=stops)
        assert status == 400 and "stop_strings" in message, stops
    for budget in (0, -3, 1.5, "2", False, (1 << 20) + 1):
        status, message = post(max_new_tokens=budget)
        assert status == 400 and "max_new_tokens" in message, budget
    status, message = post(text="x" * 601, chunk_size=64)
    assert status == 413 and "600" in message
    status, message = post(text="x" * 2001)  # the general text bound comes first
    assert status == 413 and "2,000" in message
    status, message = post(text="x" * 500, chunk_size=2)
    assert status == 413 and "chunk_size to at least 3" in message
    assert post(text="x" * 500, chunk_size=3)[0] == 200
    status, message = post(stop_strings=["s"] * 17)
    assert status == 413 and "16" in message
    status, message = post(stop_strings=["s" * 257])
    assert status == 413
    assert post(text=5)[0] == 400
    response = client.post("/api/stream", content=b"{not json", headers={"content-type": "x"})
    assert response.status_code == 400
    assert client.post("/api/stream", json=[1, 2]).status_code == 400
    unknown = client.post("/api/stream", json={"tokenizer": "nope", "text": "hi"})
    assert unknown.status_code == 404
    traversal = client.post("/api/stream", json={"tokenizer": "../small", "text": "hi"})
    assert traversal.status_code == 400
    assert client.get("/api/stream").status_code == 405
    limits = client.get("/api/tokenizers").json()["limits"]
    assert limits["max_stream_bytes"] == 600 and limits["max_chunk_size"] == 4096


def test_empty_text_streams_nothing(client: TestClient) -> None:
    data = _stream(client, tokenizer="small", text="", chunk_size=4, stop_strings=["x"])
    assert data["ids"] == [] and len(data["inbound"]) == 1
    assert data["outbound"]["finish_reason"] == "end" and data["outbound"]["visible_text"] == ""
