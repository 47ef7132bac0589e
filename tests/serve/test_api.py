"""The playground's JSON API through Starlette's TestClient."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402

import tokenpact as tp  # noqa: E402
from tokenpact.errors import ConfigError, InvalidInputError  # noqa: E402
from tokenpact.serve import ServeLimits, TokenizerRegistry, check_name, create_app  # noqa: E402

TEXT = "naïve café 日本語 🤖 x += 1\n<|eos|> the cat"
CONVERSATION = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "What is a token?"},
    {"role": "assistant", "content": "A piece of text."},
]


@pytest.fixture(scope="module")
def registry(tokenizer_dir: Path, chat_model_dir: Path) -> TokenizerRegistry:
    return TokenizerRegistry([("qwen", chat_model_dir)], dirs=[tokenizer_dir])


@pytest.fixture(scope="module")
def client(registry: TokenizerRegistry) -> TestClient:
    limits = ServeLimits(max_text_chars=2000, max_messages=8, max_conversation_chars=4000)
    return TestClient(create_app(registry, limits=limits))


def test_lists_tokenizers(client: TestClient) -> None:
    data = client.get("/api/tokenizers").json()
    by_name = {t["name"]: t for t in data["tokenizers"]}
    assert sorted(by_name) == ["qwen", "small", "tiny"]
    assert by_name["qwen"]["chat_template"] and not by_name["small"]["chat_template"]
    assert data["limits"]["max_text_chars"] == 2000


@pytest.mark.parametrize("name", ["small", "qwen"])
def test_encode_matches_python_api(
    client: TestClient, registry: TokenizerRegistry, name: str
) -> None:
    tok = registry.tokenizer(name)
    data = client.post("/api/encode", json={"tokenizer": name, "text": TEXT}).json()
    expected = tok.encode(TEXT)
    enc = tok.encode_structured(TEXT)
    assert data["ids"] == expected == [t["id"] for t in data["tokens"]]
    assert [(t["start"], t["end"]) for t in data["tokens"]] == [tuple(o) for o in enc.offsets]
    assert b"".join(bytes.fromhex(t["hex"]) for t in data["tokens"]) == TEXT.encode()
    for token in data["tokens"]:
        assert bytes.fromhex(token["hex"]) == tok.token_bytes(token["id"])
    n_bytes = len(TEXT.encode())
    assert data["counts"] == {
        "tokens": len(expected),
        "characters": len(TEXT),
        "bytes": n_bytes,
        "bytes_per_token": round(n_bytes / len(expected), 4),
    }
    # Special spellings are text in the playground's encode, as in Tokenizer.encode.
    assert not any(t["special"] for t in data["tokens"])


def test_partial_utf8_pieces_are_marked(client: TestClient, registry: TokenizerRegistry) -> None:
    # "tiny" has few merges, so a rare CJK character splits into byte pieces.
    text = "鬱"
    data = client.post("/api/encode", json={"tokenizer": "tiny", "text": text}).json()
    assert len(data["tokens"]) > 1
    for token in data["tokens"]:
        piece = bytes.fromhex(token["hex"])
        try:
            piece.decode("utf-8")
            valid = True
        except UnicodeDecodeError:
            valid = False
        assert token["partial"] is (not valid)
        assert (token["start"], token["end"]) == (0, 1)  # the whole character
    assert any(t["partial"] for t in data["tokens"])
    assert "\\x" in data["tokens"][0]["text"]


def test_compare_marks_differing_spans(client: TestClient, registry: TokenizerRegistry) -> None:
    text = "the cat sat on crème brûlée"
    data = client.post("/api/compare", json={"tokenizers": ["small", "tiny"], "text": text}).json()
    results = {r["name"]: r for r in data["results"]}
    spans = {
        name: {(t["start"], t["end"]) for t in results[name]["tokens"]}
        for name in ("small", "tiny")
    }
    for name, other in (("small", "tiny"), ("tiny", "small")):
        assert results[name]["ids"] == registry.tokenizer(name).encode(text)
        for token in results[name]["tokens"]:
            assert token["differs"] is ((token["start"], token["end"]) not in spans[other])
    assert not data["identical"]
    assert data["diff_spans"]
    differing_chars = {
        i
        for r in data["results"]
        for t in r["tokens"]
        if t["differs"]
        for i in range(t["start"], t["end"])
    }
    assert {i for s, e in data["diff_spans"] for i in range(s, e)} == differing_chars
    same = client.post("/api/compare", json={"tokenizers": ["small", "small"], "text": text})
    assert same.json()["identical"] and same.json()["diff_spans"] == []


def test_chat_render_matches_chat_template(client: TestClient, chat_model_dir: Path) -> None:
    tok = tp.Tokenizer.load(chat_model_dir)
    conv = tp.chat.ChatTemplate.from_hf(chat_model_dir, tok).render(
        CONVERSATION, add_generation_prompt=False
    )
    body = {"tokenizer": "qwen", "messages": CONVERSATION, "add_generation_prompt": False}
    data = client.post("/api/chat", json=body).json()
    assert data["ids"] == conv.input_ids
    assert data["prompt_boundary"] == conv.prompt_boundary
    assert [t["assistant"] for t in data["tokens"]] == [bool(m) for m in conv.assistant_mask]
    origins = [t["origin"] for t in data["tokens"]]
    assert [o if o != "role" else "template" for o in origins] == conv.origin
    assert {"control", "role", "content", "template"} <= set(origins)
    role_pieces = {t["text"].strip() for t in data["tokens"] if t["origin"] == "role"}
    assert role_pieces == {"system", "user", "assistant"}


def test_chat_injection_demo(client: TestClient, chat_model_dir: Path) -> None:
    body = {"tokenizer": "qwen", "messages": CONVERSATION[:2], "inject": True}
    data = client.post("/api/chat", json=body).json()
    tok = tp.Tokenizer.load(chat_model_dir)
    specials = dict(tok.special_tokens)
    assert data["spellings"] == sorted(specials)
    safe, naive = data["safe"], data["naive"]
    assert safe["control_ids_from_content"] == 0
    for token in safe["tokens"]:
        if token["origin"] == "content":
            assert token["id"] not in specials.values()
    # The same string encoded with every special recognized forges each injected spelling
    # once per message.
    assert naive["ids"] == tok.encode(safe["text"], allowed_special="all")
    assert naive["forged_count"] == len(specials) * len(body["messages"])
    assert all(naive["tokens"][i]["special"] for i in naive["forged"])


def test_bad_json_is_400(client: TestClient) -> None:
    for body in (b"{not json", b"\xff\xfe", b"[1, 2]"):
        response = client.post("/api/encode", content=body)
        assert response.status_code == 400
        assert "error" in response.json()
    response = client.post("/api/encode", json={"tokenizer": "small", "text": 5})
    assert response.status_code == 400 and '"text"' in response.json()["error"]


def test_unknown_tokenizer_is_404(client: TestClient) -> None:
    response = client.post("/api/encode", json={"tokenizer": "gpt-9", "text": "x"})
    assert response.status_code == 404
    assert "small" in response.json()["error"]  # the message lists what exists


@pytest.mark.parametrize(
    "name", ["../small", "..", "/etc/passwd", "small/../tiny", "a\\b", ".hidden", "", None, 3]
)
def test_path_traversal_names_are_refused(client: TestClient, name: object) -> None:
    response = client.post("/api/encode", json={"tokenizer": name, "text": "x"})
    assert response.status_code == 400
    assert "invalid tokenizer name" in response.json()["error"]
    with pytest.raises(InvalidInputError):
        check_name(name)


def test_dir_entries_escaping_the_dir_are_skipped(tmp_path: Path, tokenizer_dir: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    (served / "escape").symlink_to(tokenizer_dir / "small")
    (served / "notes.txt").write_text("not a tokenizer")
    assert TokenizerRegistry(dirs=[served]).names == []
    with pytest.raises(ConfigError):
        TokenizerRegistry([("x", tmp_path / "missing")])


def test_bounds(client: TestClient) -> None:
    long_text = client.post("/api/encode", json={"tokenizer": "small", "text": "a" * 2001})
    assert long_text.status_code == 413 and "2,000" in long_text.json()["error"]
    assert client.post("/api/encode", json={"tokenizer": "small", "text": "a" * 2000}).is_success
    many = [{"role": "user", "content": "hi"}] * 9
    response = client.post("/api/chat", json={"tokenizer": "qwen", "messages": many})
    assert response.status_code == 413 and "messages" in response.json()["error"]
    big = [{"role": "user", "content": "x" * 5000}]
    response = client.post("/api/chat", json={"tokenizer": "qwen", "messages": big})
    assert response.status_code == 413 and "conversation" in response.json()["error"]
    huge = json.dumps({"tokenizer": "small", "text": "a" * (2 << 20)}).encode()
    response = client.post("/api/encode", content=huge)
    assert response.status_code == 413
    five = ["small"] * 7
    response = client.post("/api/compare", json={"tokenizers": five, "text": "x"})
    assert response.status_code == 413


def test_chat_errors(client: TestClient) -> None:
    no_template = client.post("/api/chat", json={"tokenizer": "small", "messages": CONVERSATION})
    assert no_template.status_code == 422 and "chat template" in no_template.json()["error"]
    bad = client.post("/api/chat", json={"tokenizer": "qwen", "messages": "hello"})
    assert bad.status_code == 400
    assert client.post("/api/chat", json={"tokenizer": "qwen", "messages": []}).status_code == 400
    one = client.post("/api/compare", json={"tokenizers": ["small"], "text": "x"})
    assert one.status_code == 400


def test_page_and_static_files_are_local(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "tokenpact playground" in page.text
    csp = page.headers["content-security-policy"]
    assert "default-src 'self'" in csp
    static = Path(__file__).parents[2] / "python" / "tokenpact" / "serve" / "static"
    for name in ("index.html", "app.js", "style.css"):
        # The SVG namespace is a name, not an address; nothing else may look like a URL.
        text = (static / name).read_text().replace('"http://www.w3.org/2000/svg"', "")
        assert "http://" not in text and "https://" not in text, name  # no CDN, no network
        assert client.get(f"/static/{name}").status_code == 200
    assert client.get("/static/../app.py").status_code == 404


def test_cli_registry_and_host_warning(
    tokenizer_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from tokenpact.cli import serve_cmd
    from tokenpact.cli.main import cli
    from tokenpact.serve.server import MAX_CONNECTIONS

    calls: list[dict[str, object]] = []
    import uvicorn

    def run(server: uvicorn.Server, sockets: list[object]) -> None:
        calls.append({"host": sockets[0].getsockname()[0], "config": server.config})  # type: ignore[attr-defined]

    monkeypatch.setattr(uvicorn.Server, "run", run)
    runner = CliRunner()
    result = runner.invoke(cli, ["serve", "--dir", str(tokenizer_dir), "--port", "0"])
    assert result.exit_code == 0, result.output
    assert calls[-1]["host"] == "127.0.0.1" and "warning" not in result.output
    config = calls[-1]["config"]
    assert config.limit_concurrency == MAX_CONNECTIONS  # type: ignore[attr-defined]
    assert config.http.header_timeout_s == 10.0  # type: ignore[attr-defined]
    assert "small, tiny" in result.output
    result = runner.invoke(
        cli,
        ["serve", "-t", f"mine={tokenizer_dir / 'small'}", "--host", "0.0.0.0", "--port", "0"],
    )
    assert result.exit_code == 0 and "warning: binding to 0.0.0.0" in result.output
    monkeypatch.chdir(tokenizer_dir / "small")  # ... served without arguments
    assert runner.invoke(cli, ["serve", "--port", "0"]).exit_code == 0
    monkeypatch.chdir(tmp_path)  # nothing to serve: the usage error
    assert runner.invoke(cli, ["serve", "--port", "0"]).exit_code == 2
    assert serve_cmd.is_loopback("::1") and not serve_cmd.is_loopback("192.168.1.2")


def test_audit_matches_the_audit_module(client: TestClient, registry: TokenizerRegistry) -> None:
    from tokenpact.audit import audit_vocabulary, cost

    tok = registry.tokenizer("small")
    data = client.get("/api/audit", params={"tokenizer": "small", "d_model": 512}).json()
    expected = audit_vocabulary(tok).counts()
    assert {c["name"]: c["count"] for c in data["classes"]} == expected
    assert sum(c["count"] for c in data["classes"]) == tok.vocab_size == data["vocab_size"]
    assert data["cost"]["vocab_params"] == cost(tok.vocab_size, 512, tied=False).vocab_params
    assert (
        client.get("/api/audit", params={"tokenizer": "small", "d_model": "x"}).status_code == 400
    )
    assert client.get("/api/audit", params={"tokenizer": "nope"}).status_code == 404
    assert client.get("/api/audit", params={"tokenizer": "../small"}).status_code == 400


def test_dir_lists_tokenizers_not_their_configs(tmp_path: Path, tokenizer_dir: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    (served / "tokenizer_config.json").write_text("{}")
    (served / "config.json").write_text("{}")
    (served / "manifest.json").write_text("{}")
    tp.Tokenizer.load(tokenizer_dir / "tiny").export_hf(served / "hf")
    assert TokenizerRegistry(dirs=[served]).names == ["hf"]
