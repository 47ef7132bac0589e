"""Detectors that read a tokenizer (and its raw ``tokenizer.json`` where there is one)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..errors import TokenpactError
from .findings import detector
from .subject import Subject

if TYPE_CHECKING:
    from .. import Tokenizer

Found = Iterator[tuple[str, str]]

# Probes: real text in several scripts plus the shapes that expose whitespace handling.
WHITESPACE_PROBES = ("a  b", "line one\n\nline two", "\tindented\n    code()", " lead", "trail ")
TEXT_PROBES = (
    "The cat sleeps.",
    "Le café naïf coûte 3,50 €.",
    "Straße und Öl",
    "日本語の文章です。",
    "Привет, мир!",
    "مرحبا بالعالم",
    "emoji 👩‍👩‍👧 ok",
    "def f(x_1): return x_1 ** 2",
)
OFFSET_PROBES = ("ﬁne", "e\u0301", "Å", "İstanbul", "½", "ＡＢＣ", "Straße")
# Spellings that look like control markers in chat templates.
MARKER = re.compile(r"<\|[^|<>\s]{1,64}\|>|<｜[^｜<>]{1,64}｜>|\[/?[A-Z_]{2,32}\]|</?s>")


def _decode(tok: Tokenizer, text: str) -> tuple[str, str]:
    return tok.normalize(text), tok.decode(tok.encode(text), errors="replace")


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _ink(text: str) -> str:
    """Text without whitespace: what a decode must keep even if it re-spaces."""
    return re.sub(r"\s+", "", text)


@detector(
    "special-id-collision",
    failure="special IDs collide with base IDs",
    needs=("hf_json",),
)
def special_id_collision(subject: Subject) -> Found:
    doc = subject.hf_json
    if not doc or not isinstance(doc.get("model"), dict):
        return
    model = doc["model"]
    vocab = model.get("vocab")
    by_id: dict[int, str] = {}
    if isinstance(vocab, dict):
        by_id = {i: t for t, i in vocab.items() if isinstance(i, int)}
    elif isinstance(vocab, list):  # Unigram: [[piece, score], ...], ID = index
        by_id = {i: e[0] for i, e in enumerate(vocab) if isinstance(e, list) and e}
    clashes = []
    for added in doc.get("added_tokens") or ():
        if not isinstance(added, dict) or not added.get("special"):
            continue
        token_id, content = added.get("id"), added.get("content")
        base = by_id.get(token_id) if isinstance(token_id, int) else None
        if base is not None and base != content:
            clashes.append(f"ID {token_id} is special {content!r} and base piece {base!r}")
    if clashes:
        yield (
            f"{len(clashes)} special token(s) reuse base-vocabulary IDs: " + "; ".join(clashes[:5]),
            "allocate special IDs after the base vocabulary (num_base_tokens + i) and retrain "
            "or remap the affected rows; one ID must not mean both text and control",
        )


@detector(
    "control-spelled-by-vocabulary",
    failure="the vocabulary spells a control token as an ordinary piece",
    needs=("tokenizer",),
    severity="warning",
)
def control_spelled_by_vocabulary(subject: Subject) -> Found:
    """A model that reaches a control's ID from its spelling (a SentencePiece conversion
    keeping ``</s>`` as a Unigram piece): other runtimes emit that control from user text.
    tokenpact keeps control IDs out of segmentation; the probe is the same model without
    that rule, encoding each control's spelling as text."""
    tok = subject.tokenizer
    if tok is None or not tok.special_tokens:
        return
    from ..core import Tokenizer as _Tokenizer

    try:
        bare = _Tokenizer(tok.spec.replace(special_tokens=()))
    except TokenpactError:
        return  # specials that are the model's own rows (Tekken): no model without them
    reached = []
    for spelling, token_id in sorted(tok.special_tokens.items(), key=lambda x: x[1]):
        try:
            ids = [i for probe in ("", "a", " ") for i in bare.encode(f"{probe}{spelling}b")]
        except TokenpactError:
            continue
        if token_id in ids:
            reached.append(f"{spelling!r} (ID {token_id})")
    if reached:
        yield (
            f"{len(reached)} control token(s) are also reachable ordinary pieces of the model: "
            + ", ".join(reached[:5])
            + "; Hugging Face tokenizers (split_special_tokens) and other runtimes encode "
            "that spelling in user text as the control ID; tokenpact never does",
            "remove the control pieces from the model vocabulary (or mark them unreachable) "
            "before serving the file with another runtime",
        )


@detector("pad-equals-eos", failure="PAD ID equals EOS", needs=("tokenizer",), severity="warning")
def pad_equals_eos(subject: Subject) -> Found:
    tok = subject.tokenizer
    if tok is None:
        return
    pad = tok.pad_id
    config = subject.tokenizer_config or {}
    if pad is None and config.get("pad_token") is not None:
        spelled = config["pad_token"]
        spelled = spelled.get("content") if isinstance(spelled, dict) else spelled
        pad = tok.special_tokens.get(spelled) if isinstance(spelled, str) else None
    if pad is not None and pad == tok.eos_id:
        yield (
            f"pad ID {pad} is the EOS ID; a collator that masks labels where input_ids == "
            "pad also hides every real EOS, and one that does not supervises padding as EOS",
            "mask labels from attention_mask (not by ID), or give PAD its own token",
        )


@detector(
    "whitespace-collapse",
    failure="whitespace collapse in decode",
    needs=("tokenizer",),
    severity="warning",
)
def whitespace_collapse(subject: Subject) -> Found:
    tok = subject.tokenizer
    if tok is None:
        return
    for text in WHITESPACE_PROBES:
        normalized, decoded = _decode(tok, text)
        if decoded != normalized and _squash(decoded) == _squash(normalized):
            yield (
                f"decode(encode({text!r})) = {decoded!r}, normalized input is {normalized!r}",
                "newlines and indentation change token IDs; keep the tokenizer's whitespace "
                "(no collapsing normalizer, no decoder cleanup) if layout matters",
            )
            return


@detector(
    "decode-not-normalized",
    failure="a decode that is not N(x)",
    needs=("tokenizer",),
    severity="warning",
)
def decode_not_normalized(subject: Subject) -> Found:
    tok = subject.tokenizer
    if tok is None:
        return
    bad = []
    for text in TEXT_PROBES:
        normalized, decoded = _decode(tok, text)
        if _ink(decoded) != _ink(normalized):
            bad.append(f"{text!r} -> {decoded!r} (N(x) = {normalized!r})")
    if bad:
        yield (
            f"{len(bad)} of {len(TEXT_PROBES)} probes do not round-trip: " + "; ".join(bad[:3]),
            "text outside the vocabulary is lost (unknown tokens) or rewritten; add byte "
            "fallback or the missing characters, or document the lossy decode",
        )


@detector(
    "digit-grouping",
    failure="digit-grouping surprises",
    needs=("tokenizer",),
    severity="warning",
)
def digit_grouping(subject: Subject) -> Found:
    tok = subject.tokenizer
    if tok is None:
        return
    number = "1234567"
    pieces = [tok.token_bytes(i).decode("utf-8", "replace") for i in tok.encode(number)]
    digits = [p.strip() for p in pieces if p.strip()]
    widths = [len(p) for p in digits]
    if "".join(digits) != number or max(widths, default=1) == 1:
        return
    thousands = widths == [1, 3, 3]
    if not thousands:
        a = [tok.token_bytes(i).decode("utf-8", "replace") for i in tok.encode("9.11")]
        b = [tok.token_bytes(i).decode("utf-8", "replace") for i in tok.encode("9.9")]
        yield (
            f"{number!r} splits as {digits}: groups of up to {max(widths)} digits from the "
            f"left, not at thousands separators; 9.11 -> {a}, 9.9 -> {b}",
            "numbers reach the model as digit chunks; do not assume numeric structure, "
            "inspect the pieces (or use a tokenizer that splits single digits)",
        )


@detector(
    "normalization-changes-offsets",
    failure="normalization that changes offsets",
    needs=("tokenizer",),
    severity="warning",
)
def normalization_changes_offsets(subject: Subject) -> Found:
    tok = subject.tokenizer
    if tok is None:
        return
    changed = []
    for text in OFFSET_PROBES:
        normalized = tok.normalize(text)
        if len(normalized) != len(text):
            changed.append(f"{text!r} ({len(text)} chars) -> {normalized!r} ({len(normalized)})")
    if changed:
        yield (
            "the normalizer changes text length, so offsets in normalized text do not index "
            "the input: " + "; ".join(changed[:4]),
            "map offsets back to the original text (encode_structured reports both "
            "coordinates) before slicing user text with them",
        )


@detector(
    "partial-utf8-tokens",
    failure="partial UTF-8 byte token inspected as text",
    needs=("tokenizer",),
    severity="info",
)
def partial_utf8_tokens(subject: Subject) -> Found:
    tok = subject.tokenizer
    if tok is None:
        return
    partial = []
    for token_id in range(tok.vocab_size):
        try:
            # decode_bytes, not token_bytes: a SentencePiece byte-fallback piece is spelled
            # "<0x80>" but decodes to the single byte 0x80.
            piece = tok.decode_bytes([token_id])
        except TokenpactError:
            continue
        try:
            piece.decode("utf-8")
        except UnicodeDecodeError:
            partial.append(token_id)
    if partial:
        yield (
            f"{len(partial)} tokens are not whole UTF-8 (for example ID {partial[0]} = "
            f"{tok.decode_bytes([partial[0]])!r}); decode([id]) shows U+FFFD for them",
            "inspect tokens with token_bytes(id), not decode([id]); decode whole sequences",
        )


def _model(subject: Subject) -> dict[str, Any]:
    doc = subject.hf_json or {}
    return doc.get("model") if isinstance(doc.get("model"), dict) else {}  # type: ignore[return-value]


@detector(
    "wordpiece-continuation-lost",
    failure="WordPiece continuation convention lost",
    needs=("hf_json",),
)
def wordpiece_continuation_lost(subject: Subject) -> Found:
    model = _model(subject)
    if model.get("type") != "WordPiece":
        return
    prefix = model.get("continuing_subword_prefix", "##")
    decoder = (subject.hf_json or {}).get("decoder") or {}
    if decoder.get("type") != "WordPiece" or decoder.get("prefix", "##") != prefix:
        yield (
            f"the model marks continuations with {prefix!r}, but the decoder is "
            f"{decoder.get('type')!r} with prefix {decoder.get('prefix')!r}: decode prints "
            "the marker as text or glues words",
            f"use a WordPiece decoder with prefix {prefix!r}",
        )


@detector(
    "unigram-scores-missing",
    failure="Unigram probabilities missing",
    needs=("hf_json",),
)
def unigram_scores_missing(subject: Subject) -> Found:
    model = _model(subject)
    vocab = model.get("vocab")
    if model.get("type") != "Unigram" or not isinstance(vocab, list) or len(vocab) < 3:
        return
    scores = {e[1] for e in vocab if isinstance(e, list) and len(e) > 1}
    if len(scores) <= 1:
        yield (
            f"all {len(vocab)} Unigram pieces have the same score {scores!r}: Viterbi cannot "
            "prefer one segmentation, so the result is an arbitrary tie-break",
            "ship the trained log-probabilities with the vocabulary",
        )


@detector(
    "long-span-lost",
    failure="very long no-whitespace span ignores chunking limits",
    needs=("tokenizer",),
    severity="warning",
)
def long_span_lost(subject: Subject) -> Found:
    tok = subject.tokenizer
    if tok is None:
        return
    # 300 letters and digits with no whitespace or punctuation (a hash, base64, a long
    # identifier): no pre-tokenizer splits it for BERT, so WordPiece sees one word.
    span = "Zq7" * 100
    short = span[:40]
    normalized, decoded = _decode(tok, span)
    short_normalized, short_decoded = _decode(tok, short)
    # Only a loss that the short prefix does not show is about the span's length.
    if _ink(decoded) != _ink(normalized) and _ink(short_decoded) == _ink(short_normalized):
        yield (
            f"a {len(span)}-character span without whitespace decodes as {decoded[:60]!r} "
            f"while its first {len(short)} characters round-trip: a per-word length limit "
            "(WordPiece max_input_chars_per_word) replaced it",
            "raise the word-length limit or pre-split long spans (URLs, base64, hashes) "
            "before encoding; the model cannot see text that became one unknown token",
        )
