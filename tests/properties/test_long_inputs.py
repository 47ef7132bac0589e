"""Long inputs (seed 0x01B): internal chunking never changes the IDs.

Texts of 1 MB and more are pre-tokenized whole and their pieces encoded in parallel
groups; the result must equal the serial definition exactly, on real text, on long
no-whitespace runs and on hostile repetitions.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance import peer_data

MB = 1 << 20


@pytest.fixture(scope="module")
def big_text() -> str:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    parts, size = [], 0
    for path in sorted(stdlib.glob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        parts.append(text)
        size += len(text)
        if size > 3 * MB:
            break
    return "".join(parts)


@pytest.fixture(scope="module")
def tokenizers(tp: ModuleType, big_text: str) -> list:
    trained = tp.train_bpe([big_text[: MB // 2]], vocab_size=2000, special_tokens=())
    cl100k = tp.Tokenizer.from_tiktoken(peer_data.cl100k_tiktoken(), pattern="gpt4")
    return [trained, cl100k]


def test_real_text_parallel_equals_serial(tokenizers: list, big_text: str) -> None:
    for tok in tokenizers:
        ids = tok.encode(big_text)
        assert ids == tok._core.encode_serial(big_text)
        assert tok.decode(ids) == big_text


def test_no_whitespace_run_parallel_equals_serial(tokenizers: list, big_text: str) -> None:
    squeezed = "".join(big_text.split())
    for tok in tokenizers:
        assert tok.encode(squeezed) == tok._core.encode_serial(squeezed)


def test_batch_of_long_texts_equals_single(tokenizers: list, big_text: str) -> None:
    texts = [big_text[: MB + 17], big_text[MB:], "x" * (MB + 3)]
    for tok in tokenizers:
        assert tok.encode_batch(texts, threads=2) == [tok._core.encode_serial(t) for t in texts]


@settings(max_examples=5, deadline=None)
@given(fragment=st.text(min_size=1, max_size=40), extra=st.text(max_size=20))
def test_repeated_fragments_parallel_equals_serial(
    tokenizers: list, fragment: str, extra: str
) -> None:
    text = fragment * (MB // max(1, len(fragment.encode("utf-8"))) + 1) + extra
    for tok in tokenizers:
        assert tok.encode(text) == tok._core.encode_serial(text)
