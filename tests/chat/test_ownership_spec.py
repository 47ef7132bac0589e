"""The fast ownership pass equals its per-token definition (hypothesis).

Spec: a token belongs to the first content span it overlaps (``start < span_end`` and
``end > span_start``), else to nobody; a token of nobody whose ID is a control ID is a
control token, any other is template text; content tokens take their owner's kind. The
fast pass (:func:`tokenize_rendered`) computes owners from two binary searches per span;
UTF-8 offsets of span boundaries are summed per stretch (:func:`utf8_offsets`).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tokenpact.chat import _encode
from tokenpact.chat.conversation import CONTENT, CONTROL, DOCUMENT, TEMPLATE, TOOLS, Owner
from tokenpact.chat.ownership import RenderedText, tokenize_rendered

ALPHABET = ["a", "b", " ", "\n", "é", "日", "👍", "<|", "|>", "eot", "<|eot|>", "<|bos|>", "ab "]


def reference(tok: Any, text: str, spans: list[tuple[int, int, int]], kinds: list[int]) -> Any:
    """IDs, owners and kinds by the definition, through the public encode_structured."""
    enc = tok.encode_structured(
        text,
        allowed_special="all",
        coordinate="raw_utf8_bytes",
        untrusted_spans=[(a, b) for a, b, _ in spans],
    )
    byte = [len(text[:p].encode("utf-8")) for a, b, _ in spans for p in (a, b)]
    byte_spans = [(byte[2 * k], byte[2 * k + 1], o) for k, (_, _, o) in enumerate(spans)]
    control = set(tok.special_tokens.values()) | set(tok.added_tokens.values())
    owners, out_kinds = [], []
    for i, (start, end) in zip(enc.ids, enc.offsets, strict=True):
        owner = next((o for a, b, o in byte_spans if start < b and end > a), -1)
        owners.append(owner)
        if owner >= 0:
            out_kinds.append(kinds[owner])
        else:
            out_kinds.append(CONTROL if i in control else TEMPLATE)
    return list(enc.ids), owners, out_kinds


@st.composite
def rendered_texts(draw: st.DrawFn) -> tuple[str, list[tuple[int, int, int]], list[int]]:
    text = "".join(draw(st.lists(st.sampled_from(ALPHABET), max_size=24)))
    cuts = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=8))))
    pairs = [(cuts[k], cuts[k + 1]) for k in range(0, len(cuts) - 1, 2)]
    spans = [(a, b, k) for k, (a, b) in enumerate(p for p in pairs if p[0] < p[1])]
    kinds = [draw(st.sampled_from([CONTENT, DOCUMENT, TOOLS])) for _ in spans]
    return text, spans, kinds


@settings(max_examples=300, deadline=None)
@given(case=rendered_texts())
def test_fast_ownership_equals_definition(seed_tok: Any, case: Any) -> None:
    text, spans, kinds = case
    owners = [Owner(kind, 0, f"owner{k}") for k, kind in enumerate(kinds)]
    rendered = RenderedText(text, spans, [], owners, ("user",), None)
    tokens = tokenize_rendered(seed_tok, _encode.facts(seed_tok), rendered)
    ids, owner, kind = reference(seed_tok, text, spans, kinds)
    assert tokens.ids.tolist() == ids
    assert tokens.owner.tolist() == owner
    assert tokens.kinds.tolist() == kind
    # The token range kept per span (reused by the masks) is exactly the tokens overlapping it.
    starts, ends = tokens.starts.tolist(), tokens.ends.tolist()
    for k, (lo, hi) in enumerate(zip(tokens.span_lo, tokens.span_hi, strict=True)):
        a, b = int(tokens.span_starts[k]), int(tokens.span_ends[k])
        overlapping = [t for t in range(len(ids)) if starts[t] < b and ends[t] > a]
        assert list(range(lo, hi)) == overlapping


@settings(max_examples=300, deadline=None)
@given(text=st.text(st.characters(exclude_categories=("Cs",)), max_size=40), data=st.data())
def test_utf8_offsets_equal_encoded_prefix_lengths(text: str, data: st.DataObject) -> None:
    positions = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    expected = [len(text[:p].encode("utf-8")) for p in positions]
    assert _encode.utf8_offsets(text, positions) == expected
