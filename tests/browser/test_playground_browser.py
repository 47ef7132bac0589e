"""The playground in a real browser: Debian's chromium, headless, driven by Playwright.

The app runs under uvicorn on 127.0.0.1 (a free port) in a thread. Playwright never
downloads a browser: it launches the system ``chromium`` (``apt-get install -y
chromium``). Without it the test skips locally, but fails under ``CI=true``.
Screenshots go to the test's tmp directory; with TOKENPACT_UPDATE_SCREENSHOTS=1 they
also replace docs/playground.png (in the README), docs/playground-chat.png,
docs/playground-audit.png and docs/playground-stream.png, so an ordinary test run
leaves the tree clean.
"""

from __future__ import annotations

import io
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.browser.test_audit_report_browser import CHROMIUM, _require_browser
from tests.serve.conftest import chat_model_dir, tokenizer_dir  # noqa: F401 - fixtures

import tokenpact as tp
from tokenpact.runtime import OutputStream, StopPolicy, StreamingEncoder

DOCS = Path(__file__).parents[2] / "docs"
STREAM_TEXT = "Streaming naïve café, then STOP and nothing after it."
TEXT = "The cat sat on the mat. Naïve café, λόγος and Привет!\nx += 1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tokenizer_dir: Path, chat_model_dir: Path) -> Iterator[str]:  # noqa: F811
    uvicorn = pytest.importorskip("uvicorn")
    from tokenpact.serve import TokenizerRegistry, create_app

    registry = TokenizerRegistry([("qwen-2.5", chat_model_dir)], dirs=[tokenizer_dir])
    port = _free_port()
    config = uvicorn.Config(create_app(registry), host="127.0.0.1", port=port, log_level="warning")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    for _ in range(200):
        if srv.started:
            break
        threading.Event().wait(0.05)
    assert srv.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(timeout=10)


def _shown(piece: bytes) -> str:
    """A piece as the page shows it: its text, bytes of a split character as \\xNN."""
    return piece.decode("utf-8", "backslashreplace")


def _tok_attrs(page: Any, selector: str, attr: str) -> list[str]:
    return list(page.locator(selector).evaluate_all(f"els => els.map(e => e.dataset.{attr})"))


def _check_screenshot(png: bytes) -> None:
    from PIL import Image, ImageStat

    image = Image.open(io.BytesIO(png))
    assert image.size[0] >= 1000
    assert ImageStat.Stat(image.convert("L")).stddev[0] > 10, "the screenshot is blank"
    colors = image.convert("RGB").getcolors(maxcolors=1 << 20) or []
    assert len(colors) > 50  # colored token pieces, not just text


def test_playground(
    server: str,
    tokenizer_dir: Path,  # noqa: F811
    chat_model_dir: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    sync_playwright = _require_browser()
    small = tp.Tokenizer.load(tokenizer_dir / "small")
    tiny = tp.Tokenizer.load(tokenizer_dir / "tiny")
    requests: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.on("request", lambda r: requests.append(r.url))
            page.goto(server + "/")
            page.wait_for_selector("body[data-ready='1']")
            page.select_option("#tok-select", "small")

            # Type text: the count and the pieces are the Python API's.
            page.fill("#text", "")
            page.type("#text", TEXT, delay=2)
            ids = small.encode(TEXT)
            enc = small.encode_structured(TEXT)
            page.wait_for_selector(f"#counts[data-tokens='{len(ids)}']")
            assert page.locator("#counts [data-count='bytes']").inner_text() == str(
                len(TEXT.encode())
            )
            assert [int(i) for i in _tok_attrs(page, "#tokens .tok", "id")] == ids
            pieces = _tok_attrs(page, "#tokens .tok", "text")
            assert pieces == [_shown(small.token_bytes(i)) for i in ids]
            partial = page.locator("#tokens .tok.partial")
            assert partial.count() >= 1  # Greek and Cyrillic, unseen in training, split into bytes

            # Hover: the token's source span lights up, and only it.
            chars = list(TEXT)
            k = max(range(len(ids)), key=lambda i: enc.offsets[i][1] - enc.offsets[i][0])
            start, end = enc.offsets[k]
            page.locator("#tokens .tok").nth(k).hover()
            lit = page.locator("#source .lit")
            assert lit.count() == end - start
            assert "".join(lit.all_inner_texts()) == "".join(chars[start:end])
            screenshot = page.screenshot(full_page=True)

            # Select text: the tokens that overlap it light up.
            sel_start, sel_end = TEXT.index("café"), TEXT.index("café") + 4
            page.evaluate(
                f"""() => {{ const a = document.querySelector('#text');
                a.focus(); a.setSelectionRange({sel_start}, {sel_end});
                a.dispatchEvent(new Event('select')); }}"""
            )
            expected = [i for i, (s, e) in enumerate(enc.offsets) if s < sel_end and sel_start < e]
            page.wait_for_function(
                "n => document.querySelectorAll('#tokens .tok.selected').length === n",
                arg=len(expected),
            )
            assert [int(i) for i in _tok_attrs(page, "#tokens .tok.selected", "index")] == expected

            # Side by side: two trained tokenizers, differing tokens and spans marked.
            page.click(".tab[data-tab='compare']")
            page.uncheck("#cmp-list input[value='qwen-2.5']")
            page.check("#cmp-list input[value='small']")
            page.check("#cmp-list input[value='tiny']")
            page.fill("#cmp-text", TEXT)
            page.wait_for_function(
                "text => document.querySelector('#cmp-results').dataset.text === text", arg=TEXT
            )
            names = page.locator(".cmp-col").evaluate_all("els => els.map(e => e.dataset.name)")
            assert names == ["small", "tiny"]
            spans = {
                name: [tuple(o) for o in tok.encode_structured(TEXT).offsets]
                for name, tok in (("small", small), ("tiny", tiny))
            }
            for name, other in (("small", "tiny"), ("tiny", "small")):
                col = f".cmp-col[data-name='{name}'] .tok"
                differs = page.locator(col).evaluate_all(
                    "els => els.map(e => e.classList.contains('differs'))"
                )
                assert differs == [s not in set(spans[other]) for s in spans[name]]
            diff_chars = {
                i
                for name, other in (("small", "tiny"), ("tiny", "small"))
                for s in spans[name]
                if s not in set(spans[other])
                for i in range(*s)
            }
            marked = {int(i) for i in _tok_attrs(page, "#cmp-source .diff", "i")}
            assert marked == diff_chars and marked

            # Chat: the injection demo on a real chat template.
            page.click(".tab[data-tab='chat']")
            page.select_option("#chat-select", "qwen-2.5")
            page.click("#chat-render")
            page.wait_for_selector("#chat-output[data-mode='render'] .boundary")
            origins = set(_tok_attrs(page, "#chat-output .tok", "origin"))
            assert {"control", "template", "role", "content"} <= origins
            assert page.locator("#chat-output .tok.assistant").count() > 0
            page.click("#chat-inject")
            page.wait_for_selector("#inject-safe")
            qwen = tp.Tokenizer.load(chat_model_dir)
            special_ids = set(dict(qwen.special_tokens).values())
            n_messages = len(
                page.evaluate("JSON.parse(document.querySelector('#chat-json').value)")
            )
            assert page.locator("#inject-safe").get_attribute("data-control-from-content") == "0"
            content_ids = [
                int(i) for i in _tok_attrs(page, "#inject-safe .tok[data-origin='content']", "id")
            ]
            assert content_ids and not special_ids & set(content_ids)
            forged = int(page.locator("#inject-naive").get_attribute("data-forged") or -1)
            assert forged == len(special_ids) * n_messages
            assert page.locator("#inject-naive .tok.forged").count() == forged
            chat_screenshot = page.screenshot(full_page=True)

            # Streaming: committed vs provisional IDs per push, then the stop decision.
            page.click(".tab[data-tab='stream']")
            page.select_option("#stream-select", "small")
            page.fill("#stream-stops", "STOP,\\n\\n")
            page.fill("#stream-text", "")
            page.type("#stream-text", STREAM_TEXT, delay=2)
            page.wait_for_function(
                "text => document.querySelector('#stream-ids').dataset.text === text",
                arg=STREAM_TEXT,
            )
            stream_ids = small.encode(STREAM_TEXT)
            ids_box = page.locator("#stream-ids")
            assert ids_box.get_attribute("data-committed-total") == str(len(stream_ids))
            assert [int(i) for i in _tok_attrs(page, "#stream-ids .tok.committed", "id")] == (
                stream_ids
            )
            assert page.locator("#stream-ids .tok.provisional").count() == 0
            direct = OutputStream(small, StopPolicy(stop_strings=["STOP", "\n\n"]))
            direct.push(stream_ids)
            assert direct.finish_reason == "stop" and direct.matched_stop == "STOP"
            decision = page.locator("#stream-decision")
            assert decision.get_attribute("data-reason") == "stop"
            assert "finish_reason = stop" in decision.inner_text()
            assert '"STOP"' in decision.inner_text()
            assert page.locator("#stream-visible").inner_text() == direct.visible_text
            # Step 1: the first chunk's provisional IDs, shown in their own style.
            encoder = StreamingEncoder(small, scan_step=0)  # as the demo streams
            first = encoder.push_bytes(STREAM_TEXT.encode()[:4])
            page.eval_on_selector(
                "#stream-step", "el => { el.value = 0; el.dispatchEvent(new Event('input')); }"
            )
            assert ids_box.get_attribute("data-committed-total") == str(len(first))
            provisional = [int(i) for i in _tok_attrs(page, "#stream-ids .tok.provisional", "id")]
            assert provisional == encoder.provisional() and provisional
            page.eval_on_selector(  # a step with both kinds of IDs for the screenshot
                "#stream-step", "el => { el.value = 6; el.dispatchEvent(new Event('input')); }"
            )
            stream_screenshot = page.screenshot(full_page=True)

            # Vocabulary audit: one stacked bar per tokenizer, its marks sum to the vocabulary.
            page.click(".tab[data-tab='audit']")
            page.click("#audit-run")
            page.wait_for_selector("#audit-chart[data-done='1']", timeout=60_000)
            for name, tok in (("qwen-2.5", qwen), ("small", small), ("tiny", tiny)):
                values = page.locator(f"#audit-chart .mark[data-tokenizer='{name}']").evaluate_all(
                    "els => els.map(e => Number(e.dataset.value))"
                )
                assert sum(values) == tok.vocab_size, name
            assert page.locator("#audit-table tr").count() == 4
            audit_screenshot = page.screenshot()
        finally:
            browser.close()
    assert requests and all(url.startswith(server + "/") for url in requests), requests
    _check_screenshot(screenshot)
    _check_screenshot(chat_screenshot)
    _check_screenshot(audit_screenshot)
    _check_screenshot(stream_screenshot)
    shots = {
        "playground.png": screenshot,
        "playground-chat.png": chat_screenshot,
        "playground-audit.png": audit_screenshot,
        "playground-stream.png": stream_screenshot,
    }
    targets = [tmp_path]
    if os.environ.get("TOKENPACT_UPDATE_SCREENSHOTS") == "1":
        targets.append(DOCS)
    for target in targets:
        for name, png in shots.items():
            (target / name).write_bytes(png)


def _ink(png: bytes) -> int:
    """Pixels clearly darker than the token's background (drawn glyphs)."""
    from PIL import Image

    histogram = Image.open(io.BytesIO(png)).convert("L").histogram()
    background = max(v for v, n in enumerate(histogram) if n)
    return sum(histogram[: max(background - 60, 0)])


def test_whitespace_tokens_are_visible(server: str, tokenizer_dir: Path) -> None:  # noqa: F811
    sync_playwright = _require_browser()
    small = tp.Tokenizer.load(tokenizer_dir / "small")
    text = "    indented  line\n\tx"
    statuses: list[tuple[str, int]] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.on("response", lambda r: statuses.append((r.url, r.status)))
            page.goto(server + "/")
            page.wait_for_selector("body[data-ready='1']")
            page.select_option("#tok-select", "small")
            page.fill("#text", text)
            page.wait_for_selector(f"#counts[data-tokens='{len(small.encode(text))}']")
            tokens = page.locator("#tokens .tok")
            blank = [
                k
                for k, piece in enumerate(_tok_attrs(page, "#tokens .tok", "text"))
                if piece and not piece.strip()
            ]
            assert blank, "the text has whitespace-only tokens"
            for k in blank:
                glyphs = tokens.nth(k).locator(".ws").all_inner_texts()
                assert glyphs and set("".join(glyphs)) <= set("\u00b7\u21b5\u2192\u240d")
                # Pixels, not only the DOM: the whitespace token draws visible glyphs.
                assert _ink(tokens.nth(k).locator(".ws").first.screenshot()) > 0
            assert tokens.first.inner_text().startswith("\u00b7")  # leading spaces show
        finally:
            browser.close()
    # The page and its icon load; nothing is missing.
    assert all(status < 400 for _, status in statuses), statuses


def test_audit_bars_show_every_class(server: str, tokenizer_dir: Path) -> None:  # noqa: F811
    from PIL import Image

    sync_playwright = _require_browser()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.goto(server + "/")
            page.wait_for_selector("body[data-ready='1']")
            page.click(".tab[data-tab='audit']")
            page.click("#audit-run")
            page.wait_for_selector("#audit-chart[data-done='1']", timeout=60_000)
            marks = page.locator("#audit-chart .mark[data-tokenizer='qwen-2.5']")
            widths = marks.evaluate_all("els => els.map(e => Number(e.getAttribute('width')))")
            colors = marks.evaluate_all("els => els.map(e => e.getAttribute('fill'))")
            png = page.locator("#audit-chart svg").screenshot()
        finally:
            browser.close()
    # Log-scaled segments: no class fills (nearly) the whole bar.
    assert len(widths) >= 3 and max(widths) / sum(widths) < 0.8, widths
    assert len(set(colors)) == len(colors)
    # Pixels: each class of the bar is drawn in its own color, visibly wide.
    image = Image.open(io.BytesIO(png)).convert("RGB")
    counts = {c: 0 for c in colors}
    wanted = {tuple(int(c[i : i + 2], 16) for i in (1, 3, 5)): c for c in colors}
    for n, pixel in image.getcolors(maxcolors=1 << 20) or []:
        if pixel in wanted:
            counts[wanted[pixel]] += n
    assert sum(n > 400 for n in counts.values()) >= 3, counts  # a legend swatch is 144
