"""OutputStream over real tokenizers and text: exact for every re-chunking (1..8 IDs per
push), equal to a naive reference (substring search after every ID), and holding back
exactly the live stop prefix."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenpact.runtime import IncrementalDecoder, OutputStream, StopPolicy
from tokenpact.runtime.output_reference import ReferenceOutputStream

from .families import family, texts

NAMES = ["llama3.2", "mistral-sp-v3", "mistral-hf-bytefallback", "minilm-wordpiece"]


def _earliest(text: str, strings: tuple[str, ...], ties: str = "longest") -> str | None:
    """The stop string whose first occurrence ends earliest (ties: the longest, or the
    first listed)."""
    best: tuple[int, int, str] | None = None
    for rank, s in enumerate(strings):
        at = text.find(s)
        if at >= 0:
            key = (at + len(s), -len(s) if ties == "longest" else rank, s)
            best = key if best is None or key < best else best
    return None if best is None else best[2]


def reference(tok, policy: StopPolicy, ids: list[int], skip: bool = False):
    """The definition: decode exactly, search naively after every generated ID."""
    dec = IncrementalDecoder(tok, errors="replace", skip_special_tokens=skip)
    ties = policy.stop_string_ties

    def _earliest_here(text: str, strings: tuple[str, ...]) -> str | None:
        return _earliest(text, strings, ties)

    text, gen, offsets = "", [], []
    include = policy.include_stop_in_output

    def cut_text(stop: str):
        at = text.find(stop)
        return text[: at + len(stop)] if include else text[:at]

    for token_id in ids:
        gen.append(token_id)
        if token_id in policy.stop_token_ids:
            # Kept, the stop ID decodes like any ID (skipped when special and skipping).
            text += (dec.push([token_id]) if include else "") + dec.finish()
            hit = _earliest_here(text, policy.stop_strings)
            if hit:
                return cut_text(hit), gen, "stop", hit
            return text, gen, "stop", token_id
        offsets.append(len(text))
        text += dec.push([token_id])
        for seq in sorted(policy.stop_sequences, key=len, reverse=True):
            if tuple(gen[-len(seq) :]) == seq:
                kept = text + dec.finish() if include else text[: offsets[-len(seq)]]
                return kept, gen, "stop", seq
        hit = _earliest_here(text, policy.stop_strings)
        if hit:
            return cut_text(hit), gen, "stop", hit
        if policy.max_new_tokens is not None and len(gen) >= policy.max_new_tokens:
            text += dec.finish()
            hit = _earliest_here(text, policy.stop_strings)
            return (cut_text(hit), gen, "stop", hit) if hit else (text, gen, "length", None)
    text += dec.finish()
    hit = _earliest_here(text, policy.stop_strings)
    return (cut_text(hit), gen, "stop", hit) if hit else (text, gen, "end", None)


def _expected_hold(text: str, gen: list[int], offsets: list[int], policy: StopPolicy) -> int:
    h = max(
        (k for s in policy.stop_strings for k in range(1, len(s)) if text.endswith(s[:k])),
        default=0,
    )
    boundary = len(text) - h
    d = max(
        (
            k
            for seq in policy.stop_sequences
            for k in range(1, len(seq))
            if k <= len(gen) and tuple(gen[-k:]) == seq[:k]
        ),
        default=0,
    )
    if d:
        boundary = min(boundary, offsets[-d])
    return len(text) - boundary


@st.composite
def scenario(draw, tok):
    corpus = texts()
    text = corpus[draw(st.integers(0, len(corpus) - 1))][: draw(st.integers(1, 600))]
    ids = tok.encode(text)
    rng = random.Random(draw(st.integers(0, 2**32)))
    decoded = tok.decode(ids, errors="replace")
    strings = []
    for _ in range(16):  # 16 stop strings: real substrings (so they occur) and misses
        if decoded and rng.random() < 0.7:
            at = rng.randrange(len(decoded))
            strings.append(decoded[at : at + rng.randint(1, 8)])
        else:
            strings.append(rng.choice(["STOP", "\n\n", "</s>", "###", "€", "日本", "\ufffd"]))
    sequences = []
    for _ in range(rng.randint(0, 3)):
        if ids:
            at = rng.randrange(len(ids))
            sequences.append(ids[at : at + rng.randint(1, 4)])
    if rng.random() < 0.5 and len(ids) > 2:
        ids.insert(rng.randrange(len(ids)), rng.randrange(tok.vocab_size))
    specials = sorted(tok.special_tokens.values())
    policy = StopPolicy(
        stop_token_ids=rng.sample(specials, min(2, len(specials))) if rng.random() < 0.5 else [],
        stop_sequences=sequences,
        stop_strings=rng.sample(strings, rng.randint(0, 16)),
        max_new_tokens=rng.choice([None, None, rng.randint(1, 64)]),
        include_stop_in_output=rng.random() < 0.3,
        stop_string_ties=rng.choice(["longest", "first_listed"]),
    )
    sizes = draw(st.lists(st.integers(1, 8), min_size=1, max_size=5))
    return ids, policy, sizes, rng.random() < 0.5


@pytest.mark.parametrize("impl", [OutputStream, ReferenceOutputStream], ids=["rust", "python"])
@pytest.mark.parametrize("name", NAMES)
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=60)
@given(data=st.data())
def test_stream_matches_reference_for_every_chunking(name: str, impl, data) -> None:
    tok = family(name)
    ids, policy, sizes, skip = data.draw(scenario(tok))
    out = impl(tok, policy, skip_special_tokens=skip)
    text, at, i = "", 0, 0
    gen: list[int] = []
    offsets: list[int] = []
    while at < len(ids) and not out.finished:
        n = sizes[i % len(sizes)]
        delta = out.push(ids[at : at + n])
        assert delta.consumed == len(out.processed_ids) - len(gen)
        text += delta.text
        gen, at, i = list(out.processed_ids), at + n, i + 1
        if not out.finished:
            # Holding back only the live stop prefix (decoder bytes aside).
            offsets = _offsets(tok, gen, skip)
            full = out.visible_text + out.held_text
            assert len(out.held_text) == _expected_hold(full, gen, offsets, policy)
    if not out.finished:
        text += out.finish().text
    want = reference(tok, policy, ids, skip)
    got = (text, out.processed_ids, out.finish_reason, out.matched_stop)
    assert got == want


def _offsets(tok, gen: list[int], skip: bool) -> list[int]:
    dec = IncrementalDecoder(tok, errors="replace", skip_special_tokens=skip)
    offsets, n = [], 0
    for token_id in gen:
        offsets.append(n)
        n += len(dec.push([token_id]))
    return offsets


@pytest.mark.parametrize("name", NAMES)
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=40)
@given(data=st.data())
def test_fixed_window_rust_equals_reference(name: str, data) -> None:
    """``hold="fixed_window"`` (vLLM's hold-back): the Rust engine and the Python
    reference give the same text after every push, and the same final text as the
    default hold."""
    tok = family(name)
    ids, policy, sizes, skip = data.draw(scenario(tok))
    streams = [
        cls(tok, policy, skip_special_tokens=skip, hold="fixed_window")
        for cls in (OutputStream, ReferenceOutputStream)
    ]
    at, i = 0, 0
    while at < len(ids) and not streams[0].finished:
        n = sizes[i % len(sizes)]
        deltas = [s.push(ids[at : at + n]) for s in streams]
        assert deltas[0] == deltas[1]
        at, i = at + n, i + 1
    ends = [s.finish() for s in streams]
    assert ends[0] == ends[1]
    assert streams[0].visible_text == reference(tok, policy, ids, skip)[0]
