"""Added tokens with ``lstrip``, ``rstrip``, ``single_word`` and ``normalized`` match HF.

Peers: ``tokenizers`` with the same ``tokenizer.json``, after setting flags on existing
added tokens and adding new ones with ``AddedToken(...)``. Texts: harvested real text
with added-token spellings (and case variants, whitespace runs, newlines, punctuation,
word characters, pairs of adjacent spellings) inserted at random positions, including
inside words. ``allowed_special="all"`` reproduces HF's default, and the default policy
(ordinary added tokens only) reproduces HF with ``encode_special_tokens=True``; IDs and
offsets must be identical in both. Untrusted spans keep the trust rule with the flags on:
no control token there, ordinary added tokens match as anywhere else.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from . import peer_data, pipeline_data

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import AddedToken  # noqa: E402

MAX_REPORTED = 5
SWEEP_TEXTS = 1500
# Text between and around the inserted tokens: what each flag looks at.
FILLERS = [" ", "   ", "\n", "\n\n", "\t", " \u3000", ".", ",", "-", "a", "x1", "_", "é", "中"]


def _set_flags(data: dict[str, Any], content: str, **flags: bool) -> None:
    for t in data["added_tokens"]:
        if t["content"] == content:
            t.update(flags)
            return
    raise LookupError(content)


def _bert(peer_tok: Any, extra_normalizer: dict[str, Any] | None) -> Any:
    """MiniLM's BERT file: [MASK] lstrip (RoBERTa-style) plus flagged new tokens."""
    data = json.loads(peer_tok.to_str())
    _set_flags(data, "[MASK]", lstrip=True)
    if extra_normalizer is not None:
        data["normalizer"] = {
            "type": "Sequence",
            "normalizers": [data["normalizer"], *extra_normalizer["normalizers"]],
        }
    peer = tokenizers.Tokenizer.from_str(json.dumps(data))
    peer.add_tokens(
        [
            AddedToken("<sw>", single_word=True),
            AddedToken("<rs>", rstrip=True, normalized=False),
            AddedToken("Hello", normalized=True),
            AddedToken("wor", normalized=True, single_word=True, lstrip=True),
            AddedToken("Ünï", normalized=True, rstrip=True),
        ]
    )
    peer.add_special_tokens([AddedToken("<CTL>", lstrip=True, rstrip=True, normalized=False)])
    return peer


def _byte_level(peer_tok: Any) -> Any:
    """A byte-level BPE file: three special tokens get one flag each, plus new tokens."""
    data = json.loads(peer_tok.to_str())
    special = [t for t in data["added_tokens"] if t["special"]][:4]
    special[0]["lstrip"] = True
    special[1]["rstrip"] = True
    special[2]["single_word"] = True
    special[3].update(lstrip=True, rstrip=True, single_word=True)
    peer = tokenizers.Tokenizer.from_str(json.dumps(data))
    peer.add_tokens(
        [
            AddedToken("<sw>", single_word=True),
            AddedToken(" foo", rstrip=True, normalized=False),
            AddedToken("ing", normalized=True, lstrip=True),
            AddedToken("the", normalized=False, single_word=True, rstrip=True),
        ]
    )
    return peer


def _build(name: str) -> Any:
    if name.startswith("minilm"):
        base = tokenizers.Tokenizer.from_file(str(peer_data.minilm_tokenizer_json()))
        # A per-segment Strip and Prepend show that normalized slices are not re-normalized.
        extra = None
        if name == "minilm-strip-prepend":
            extra = {"normalizers": [{"type": "Strip", "strip_left": True, "strip_right": True},
                                     {"type": "Prepend", "prepend": "▁"}]}  # fmt: skip
        peer = _bert(base, extra)
    else:
        path = {
            "llama-3.2": peer_data.llama3_hf_json(),
            "qwen-2.5": pipeline_data.qwen25_files().tokenizer_json,
        }[name]
        peer = _byte_level(tokenizers.Tokenizer.from_file(str(path)))
    peer.no_padding()
    peer.no_truncation()
    return peer


NAMES = ["minilm-bert", "minilm-strip-prepend", "llama-3.2", "qwen-2.5"]


@pytest.fixture(scope="module", params=NAMES)
def pair(request: pytest.FixtureRequest, tp: ModuleType) -> tuple[str, Any, Any]:
    from tokenpact.formats.hf_json import load_hf_data

    peer = _build(request.param)
    return request.param, load_hf_data(json.loads(peer.to_str())), peer


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return peer_data.harvest_texts()


def _spellings(ours: Any) -> list[str]:
    """Every added spelling, case variants (for normalized matching) and adjacent pairs."""
    flagged = list(ours.added_token_flags)
    base = flagged + [s for s in ours.special_tokens if s not in flagged][:3]
    variants = [s.lower() for s in base] + [s.upper() for s in base]
    pairs = [a + b for a, b in zip(flagged, flagged[1:] + flagged[:1], strict=True)]
    return base + variants + pairs


def _mix(text: str, rng: random.Random, spellings: list[str]) -> str:
    for _ in range(rng.randint(1, 8)):
        piece = rng.choice(spellings)
        if rng.random() < 0.5:
            piece = rng.choice(FILLERS) + piece + rng.choice(FILLERS)
        at = rng.randint(0, len(text))
        text = text[:at] + piece + text[at:]
    return text


def _difference(ours: Any, peer: Any, text: str) -> str | None:
    return _policy_difference(ours, peer, text, "all") or _policy_difference(ours, peer, text, ())


def _policy_difference(ours: Any, peer: Any, text: str, allowed: Any) -> str | None:
    """Ours under ``allowed`` against HF: every added token ("all"), or specials split
    (the default policy: ordinary added tokens only)."""
    enc = ours.encode_structured(text, allowed_special=allowed)
    peer.encode_special_tokens = allowed != "all"
    try:
        ref = peer.encode(text, add_special_tokens=False)
    finally:
        peer.encode_special_tokens = False
    offsets = [tuple(o) for o in ref.offsets]
    ids = ours.encode(text, allowed_special=allowed)
    if enc.ids == ref.ids == ids and enc.offsets == offsets:
        return None
    at = next(
        (i for i, (a, b) in enumerate(zip(enc.ids, ref.ids, strict=False)) if a != b),
        min(len(enc.ids), len(ref.ids)),
    )
    return (
        f"{text[:80]!r} (allowed {allowed!r}): at {at} ours {enc.ids[at : at + 3]} "
        f"{enc.offsets[at : at + 3]} "
        f"vs {ref.ids[at : at + 3]} {offsets[at : at + 3]} (encode() equal: {ids == ref.ids})"
    )


def _sweep(pair: tuple[str, Any, Any], texts: list[str], seed: int, make: Callable) -> None:
    name, ours, peer = pair
    rng = random.Random(seed)
    spellings = _spellings(ours)
    problems = []
    count = 0
    for text in texts[:SWEEP_TEXTS]:
        problem = _difference(ours, peer, make(text, rng, spellings))
        if problem is not None:
            count += 1
            problems.append(problem)
    assert count == 0, f"{name}: {count} texts differ:\n" + "\n".join(problems[:MAX_REPORTED])


def test_flags_loaded(pair) -> None:
    name, ours, _ = pair
    flags = ours.added_token_flags
    assert any(f.lstrip for f in flags.values()) and any(f.rstrip for f in flags.values())
    assert any(f.single_word for f in flags.values())
    assert any(f.normalized for f in flags.values()), name
    config = ours.to_config()["added_token_flags"]
    assert {c["content"] for c in config} == set(flags)


def test_harvested_text_with_inserted_tokens(pair, texts: list[str]) -> None:
    _sweep(pair, texts, 7, _mix)


def test_long_texts_with_many_tokens(pair, texts: list[str]) -> None:
    """Whole harvested texts (not cut) with many insertions: more adjacency and runs."""
    joined = ["\n".join(texts[i : i + 4]) for i in range(0, 400, 4)]
    _sweep(pair, joined, 11, lambda t, rng, s: _mix(_mix(t, rng, s), rng, s))


@given(data=st.data())
def test_random_insertions_match_hf(pair, texts: list[str], data: st.DataObject) -> None:
    _, ours, peer = pair
    text = data.draw(st.sampled_from(texts[:2000]))[:300]
    pieces = st.sampled_from(_spellings(ours) + FILLERS)
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(0, len(text)))
        text = text[:at] + data.draw(pieces) + data.draw(pieces) + text[at:]
    assert _difference(ours, peer, text) is None


def test_batch_and_flat_equal_single(pair, texts: list[str]) -> None:
    _, ours, _ = pair
    rng = random.Random(3)
    sample = [_mix(t, rng, _spellings(ours)) for t in texts[:200]]
    single = [ours.encode(t, allowed_special="all") for t in sample]
    assert ours.encode_batch(sample, allowed_special="all", threads=2) == single
    ids, offsets = ours.encode_batch_flat(sample, allowed_special="all", threads=2)
    assert [ids[offsets[i] : offsets[i + 1]].tolist() for i in range(len(sample))] == single


def _beyond_model(ours: Any) -> set[int]:
    """Added-token IDs the model cannot emit by itself (a vocabulary row such as "the"
    or WordPiece's [UNK] can be content); the others are checked through origins."""
    size = len(ours.vocab())
    return {i for i in {**ours.special_tokens, **ours.added_tokens}.values() if i >= size}


def test_untrusted_spans_never_produce_control_ids(pair) -> None:
    """Content spans cannot forge control tokens, and a control next to them never
    absorbs their whitespace (its offsets stay outside the span); an ordinary added token
    is content, matched in the span as anywhere else."""
    _, ours, _ = pair
    ids_of = {**ours.special_tokens, **ours.added_tokens}
    # The model's unknown token stands for content it cannot spell (WordPiece's [UNK]).
    unk = {ours.special_tokens.get(s) for s in ("[UNK]", "<unk>")}
    controls = set(ours.special_tokens.values()) - unk
    flags = ours.added_token_flags
    right = next(s for s, f in flags.items() if f.rstrip and not f.single_word)
    left = next(s for s, f in flags.items() if f.lstrip and not f.single_word)
    for spelling in _spellings(ours):
        for content in (f"  {spelling}  ", f"a {spelling}b", f"{spelling}\n{spelling}"):
            prefix = f"x {right}"
            text = prefix + content + left + " y"
            start, end = len(prefix), len(prefix) + len(content)
            enc = ours.encode_structured(
                text, allowed_special="all", untrusted_spans=[(start, end)]
            )
            for i, (a, b), origin in zip(enc.ids, enc.offsets, enc.origins, strict=True):
                if a < end and b > start:
                    assert origin != "control" and i not in controls, (spelling, text)
            trusted = {i for i, o in zip(enc.ids, enc.origins, strict=True) if o != "content"}
            assert {ids_of[right], ids_of[left]} <= trusted, text
            # The same text with no span: what the ordinary tokens do is unchanged.
            plain = ours.encode_structured(text, allowed_special=())
            assert [i for i in plain.ids if i in controls] == [], text


def test_default_policy_never_emits_control_ids(pair) -> None:
    _, ours, _ = pair
    unk = {ours.special_tokens.get(s) for s in ("[UNK]", "<unk>")}
    controls = set(ours.special_tokens.values()) - unk
    ordinary = set(ours.added_tokens.values()) - controls
    seen_ordinary = False
    for spelling in _spellings(ours):
        enc = ours.encode_structured(f" {spelling} a{spelling}")
        assert not controls & set(enc.ids), spelling
        assert "control" not in enc.origins, spelling
        seen_ordinary |= bool(ordinary & set(enc.ids))
    assert seen_ordinary == bool(ordinary)


def test_disallowed_check_sees_normalized_spellings(pair, tp: ModuleType) -> None:
    """A normalized token found only after normalization ("hello" for "Hello") is
    reported by disallowed_special, like a raw spelling."""
    name, ours, _ = pair
    if not name.startswith("minilm"):
        pytest.skip("only the BERT files lowercase")
    # "hello" alone: with the Prepend variant the pattern is "▁hello", matched at the start.
    # "Hello" is an ordinary added token: "all" names the controls only, so it is named.
    with pytest.raises(tp.SpecialTokenError, match="Hello"):
        ours.encode("hello", disallowed_special={"Hello"})
    ours.encode("hello", disallowed_special="all")  # no control spelled: nothing refused
    assert ours.encode("hello") == [ours.added_tokens["Hello"]]
