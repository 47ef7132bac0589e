"""Added tokens in text, on every shipped ``tokenizer.json``: the trust rule against HF.

Ordinary (non-special) added tokens are content: with the default policy, ``encode``,
``encode_structured`` and ``encode_batch`` give the IDs and offsets of ``tokenizers``
(``add_special_tokens=False``) on multilingual text with those spellings inserted at
random places, next to whitespace, punctuation and word characters.

Control (special) spellings never yield a control ID from text. What such text encodes to
is defined by a reference built from the peer itself: ``tokenizers`` with
``encode_special_tokens=True`` (a special spelling stays text, skipped in place) on a copy
of the file whose model cannot reach the controls' pieces (renamed to a spelling no text
holds; merges that make or use them dropped). tokenpact must equal that reference, IDs and
offsets, and emit no control ID except the model's own unknown token for text it cannot
spell (WordPiece's ``[UNK]``), which is not a forged control.
"""

from __future__ import annotations

import functools
import json
import random
from functools import cache
from typing import Any

import pytest

import tokenpact as tp

from .peer_data import harvest_texts
from .shipped_files import shipped_tokenizer_jsons

tokenizers = pytest.importorskip("tokenizers")

FILES = shipped_tokenizer_jsons()
TEXTS_PER_MODEL = 40
GLUE = ["", " ", "  ", "\n", "\t", ".", "a", "é", "中", " x", "-"]
UNREACHABLE = "\ufdd0"  # a noncharacter no test text holds


@cache
def _base_texts() -> list[str]:
    """Real text in many scripts: harvested strings plus gettext lines of the shared corpus."""
    texts = [t for t in harvest_texts() if 0 < len(t) < 1500][::40][:120]
    try:
        from .corpus_slices import multilingual_split

        held = multilingual_split()[1]
        texts += [line for lines in held.values() for line in lines[:10]]
    except pytest.skip.Exception:
        pass  # no ../shared corpus on this machine
    return texts


def _insert(spellings: list[str], seed: int, count: int = TEXTS_PER_MODEL) -> list[str]:
    rng = random.Random(seed)
    base = _base_texts()
    out = [" ".join(spellings), "".join(spellings)]
    for _ in range(count):
        text = rng.choice(base)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(text) + 1)
            piece = rng.choice(GLUE) + rng.choice(spellings) + rng.choice(GLUE)
            if rng.random() < 0.2:
                piece = piece.upper()
            text = text[:at] + piece + text[at:]
        out.append(text)
    return out


@cache
def _document(name: str) -> dict[str, Any]:
    return json.loads(FILES[name].read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@functools.lru_cache(maxsize=1)
def _ours(name: str) -> tp.Tokenizer:
    # The peer runs without the file's padding/truncation; so does this side.
    return tp.Tokenizer.load(FILES[name]).with_padding(None).with_truncation(None)


def _ordinary(doc: dict[str, Any]) -> list[str]:
    return [t["content"] for t in doc["added_tokens"] if not t["special"]]


def _controls(doc: dict[str, Any]) -> dict[str, int]:
    return {t["content"]: t["id"] for t in doc["added_tokens"] if t["special"]}


def _peer(doc: dict[str, Any], *, split_specials: bool = False) -> Any:
    peer = tokenizers.Tokenizer.from_str(json.dumps(doc))
    peer.no_truncation()
    peer.no_padding()
    peer.encode_special_tokens = split_specials
    return peer


def _unreachable_controls(doc: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``doc`` whose model cannot produce a control's piece from text.

    Unigram, WordPiece and WordLevel pieces are renamed to a spelling no text holds
    (tokenizers then gives those specials new IDs, which the split-specials reference
    never emits); a BPE keeps its vocabulary (renaming would shift every added token's
    ID) and loses the merges that make or use a control's piece."""
    doc = json.loads(json.dumps(doc))
    model = doc["model"]
    ids = set(_controls(doc).values())
    keep = model.get("unk_token")  # WordPiece/WordLevel find their unknown token by name
    vocab = model.get("vocab")
    renamed: set[str] = set()
    if isinstance(vocab, list):  # Unigram: [[piece, score], ...]; unk_id is by position
        for i in ids:
            if i < len(vocab):
                renamed.add(vocab[i][0])
                vocab[i][0] = f"{UNREACHABLE}{i}"
    elif isinstance(vocab, dict):
        inverse = {v: k for k, v in vocab.items()}
        for i in ids:
            piece = inverse.get(i)
            if piece is None or piece == keep:
                continue
            renamed.add(piece)
            if model["type"] != "BPE":
                del vocab[piece]
                vocab[f"{UNREACHABLE}{i}"] = i
    merges = model.get("merges")
    if merges and renamed:

        def parts(m: Any) -> tuple[str, str]:
            return tuple(m) if isinstance(m, list) else tuple(m.split(" ", 1))  # type: ignore[return-value]

        model["merges"] = [m for m in merges if not ({*parts(m), "".join(parts(m))} & renamed)]
    return doc


def _offsets(enc: Any) -> list[tuple[int, int]]:
    return [tuple(o) for o in enc.offsets]


WITH_ORDINARY = sorted(n for n in FILES if _ordinary(_document(n)))


def test_most_shipped_files_declare_ordinary_added_tokens() -> None:
    assert len(WITH_ORDINARY) >= 30, WITH_ORDINARY


@pytest.mark.parametrize("name", sorted(FILES))
def test_added_tokens_in_text(name: str) -> None:
    """Both halves of the rule on one loaded file (loading dominates the cost)."""
    if name in WITH_ORDINARY:
        ordinary_added_tokens_match_as_in_hf(name)
    if _controls(_document(name)):
        control_spellings_never_yield_control_ids(name)


def ordinary_added_tokens_match_as_in_hf(name: str) -> None:
    doc = _document(name)
    ours = _ours(name)
    peer = _peer(doc)
    # HF's default matches controls too: texts here hold no control spelling (the harvested
    # edge cases include some); the other half of the test covers those.
    controls = _controls(doc)
    texts = [
        t for t in _insert(_ordinary(doc), seed=len(name)) if not any(c in t for c in controls)
    ]
    assert len(texts) >= TEXTS_PER_MODEL // 2
    differing = []
    for text in texts:
        ref = peer.encode(text, add_special_tokens=False)
        enc = ours.encode_structured(text)
        if enc.ids != ref.ids or list(enc.offsets) != _offsets(ref):
            differing.append(text)
        elif ours.encode(text) != ref.ids:
            differing.append(text)
    assert ours.encode_batch(texts) == [
        e.ids for e in peer.encode_batch(texts, add_special_tokens=False)
    ]
    assert differing == [], (
        f"{name}: {len(differing)}/{len(texts)} differ: {[d[:200] for d in differing[:2]]!r}"
    )


def control_spellings_never_yield_control_ids(name: str) -> None:
    doc = _document(name)
    controls = _controls(doc)
    ours = _ours(name)
    reference = _peer(_unreachable_controls(doc), split_specials=True)
    # The model's unknown token (by name, or Unigram's unk_id) stands for text it cannot
    # spell: not a forged control.
    unk = doc["model"].get("unk_token")
    forged_ok = {controls[unk]} if unk in controls else set()
    if isinstance(doc["model"].get("unk_id"), int):
        forged_ok.add(doc["model"]["unk_id"])
    texts = _insert(sorted(controls) + _ordinary(doc), seed=len(name) + 1)
    differing, forged = [], []
    for text in texts:
        ref = reference.encode(text, add_special_tokens=False)
        enc = ours.encode_structured(text)
        if enc.ids != ref.ids or list(enc.offsets) != _offsets(ref):
            differing.append(text)
        bad = set(enc.ids) & (set(controls.values()) - forged_ok)
        if bad:
            forged.append((text[:80], sorted(bad)))
    assert forged == [], f"{name}: control IDs from text: {forged[:3]!r}"
    assert differing == [], (
        f"{name}: {len(differing)}/{len(texts)} differ: {[d[:200] for d in differing[:2]]!r}"
    )
    # The same call with the controls allowed gives HF's default (every added token).
    allowed = _peer(doc)
    for text in texts[:10]:
        expected = allowed.encode(text, add_special_tokens=False).ids
        assert ours.encode(text, allowed_special="all") == expected


def test_a_unigram_vocabulary_that_spells_controls_keeps_them_out_of_content() -> None:
    """jiutian's Unigram file (converted from SentencePiece) holds <s> and </s> as pieces
    with score 0: Viterbi used to pick them for the same text, a control ID from content."""
    name = "jiutian-139moe-chat"
    doc = _document(name)
    ours = _ours(name)
    peer = _peer(doc, split_specials=True)
    text = "a</s>b <s> end"
    assert {1, 2} & set(peer.encode(text, add_special_tokens=False).ids)  # the peer forges
    ids = ours.encode(text)
    assert not {1, 2} & set(ids)
    peer_ids = peer.encode(text, add_special_tokens=False).ids
    assert ours.decode(ids) == peer.decode(peer_ids, skip_special_tokens=False) == text
    assert ours.encode(text, allowed_special="all").count(2) == 1
