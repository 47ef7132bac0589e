"""The playground's first impressions: the Chat tab is offered only for tokenizers with a
template, its errors speak to a web user, and the page has an icon."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402

import tokenpact as tp  # noqa: E402
from tokenpact.serve import TokenizerRegistry, create_app  # noqa: E402

from .conftest import corpus  # noqa: E402


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, chat_model_dir: Path) -> TestClient:
    root = tmp_path_factory.mktemp("served")
    # A transformers directory whose tokenizer_config.json has no chat_template.
    tp.train_bpe(corpus(3), vocab_size=320).save_pretrained(root / "plain")
    config = json.loads((root / "plain" / "tokenizer_config.json").read_text())
    assert "chat_template" not in config
    # A model directory with a template.
    shutil.copytree(chat_model_dir, root / "chat")
    registry = TokenizerRegistry(dirs=[root])
    return TestClient(create_app(registry))


def test_chat_tab_only_for_templates(served: TestClient) -> None:
    listed = {
        t["name"]: t["chat_template"] for t in served.get("/api/tokenizers").json()["tokenizers"]
    }
    assert listed == {"chat": True, "plain": False}


def test_chat_without_template_speaks_to_a_web_user(served: TestClient) -> None:
    reply = served.post(
        "/api/chat", json={"tokenizer": "plain", "messages": [{"role": "user", "content": "hi"}]}
    )
    assert reply.status_code == 422
    error = reply.json()["error"]
    assert "chat_template.jinja" in error and "ChatTemplate(" not in error
    ok = served.post(
        "/api/chat", json={"tokenizer": "chat", "messages": [{"role": "user", "content": "hi"}]}
    )
    assert ok.status_code == 200, ok.text


def test_favicon(served: TestClient) -> None:
    reply = served.get("/favicon.ico")
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("image/svg+xml")
    assert reply.content.startswith(b"<svg") and b"http://www.w3.org/2000/svg" in reply.content
    assert 'rel="icon"' in served.get("/").text
