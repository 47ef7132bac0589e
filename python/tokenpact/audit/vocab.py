"""Static vocabulary audit: which IDs can plain text ever produce? (no model weights)

Every ID gets exactly one class, decided in this order:

``special``        a control token: only trusted insertion emits it, never plain text.
``added``          a non-special added token: matched in the text before the model runs.
``byte_fallback``  a ``<0xHH>`` piece: emitted only for characters no piece covers.
``duplicate``      decodes to the same bytes as a lower ID (that ID wins the lookup).
``alone``          ``encode(piece text) == [id]``: a *witness*, reachable for certain.
``context``        not alone, but a probe text or the exposure corpus emits it: a witness.
``unreachable``    *proved* that no input text encodes to it (see below).
                   Also any piece that is no substring of valid UTF-8 (bytes C0, C1,
                   F5-FF, a lead byte followed by ASCII, ...): text is UTF-8.
``undetermined``   none of the above: no witness was found and no proof applies.

``partial_utf8`` is reported as a flag (not a class): the piece alone is not valid UTF-8,
so it can only be emitted inside a longer character sequence.

What ``unreachable`` proves. For BPE that merges the minimum ``(rank, position)`` pair
(tiktoken ranks, Hugging Face merges, tokenpact's trainers) tokens only ever grow and a
merge never crosses a final token's edges, so the merges *inside* a final token's span
happen exactly as they would on that span alone: an ID is emitted somewhere only if BPE
of its own bytes, with no context, yields that ID. When it does not (the merge that
creates the ID is shadowed by a competing merge inside its own bytes) the ID is
unreachable from any text, whatever the normalizer and the pre-tokenizer do. Semantics
that first look a whole pre-token up in the vocabulary (tiktoken; Hugging Face
``ignore_merges``) can still emit such an ID if some pre-token equals its bytes, so there
the proof is only used for pieces that cannot be a pre-token (partial UTF-8).

What it does not prove. ``alone``/``context`` say an ID *can* occur, not that it occurs
in your data (that is ``exposure``); ``undetermined`` is not "unreachable": the
pre-tokenizer regex or the normalizer may or may not ever produce those bytes, and no
regex-automaton analysis is attempted. Unigram, WordPiece and SentencePiece models get
witnesses only. BPE dropout is ignored (the audit is of deterministic encoding).
Zero exposure is not undertraining either ("th" can be consumed by "the").
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import MergeRecords, ModelKind
from .token_table import TokenTable, token_table

if TYPE_CHECKING:
    from ..core import Tokenizer

CLASSES = (
    "special",
    "added",
    "byte_fallback",
    "duplicate",
    "alone",
    "context",
    "unreachable",
    "undetermined",
)
_CODE = {name: i for i, name in enumerate(CLASSES)}
UNASSIGNED = 255

# Context probes put a piece next to the characters that most often change how
# pre-tokenizer regexes split (letters, digits, spaces, newlines, punctuation).
_LEFT = ("", " ", "a", "A", "0", ".", "\n", "'", "(", "\u4e00")
_RIGHT = ("", " ", "a", "0", ".", "\n", "!", ")")
_MAX_COMPLETIONS = 6
_SP_SPACE = "\u2581"
_FILLS = (0x80, 0x90, 0xA0)
_PAD_LEFT = [b""] + [
    bytes([lead]) + bytes([fill]) * k
    for lead in range(0xC2, 0xF5)
    for k in range(3)
    for fill in _FILLS
]
_PAD_RIGHT = [b""] + [bytes([fill]) * k for k in range(1, 4) for fill in _FILLS]


@dataclass
class VocabAudit:
    """Per-ID classes, their counts, proofs and (optionally) corpus exposure."""

    classes: np.ndarray  # uint8 index into CLASSES, one per ID
    partial_utf8: np.ndarray  # bool per ID
    exposure: np.ndarray | None  # int64 corpus count per ID (final emitted tokens)
    witnesses: dict[int, str] = field(default_factory=dict)  # ID -> a text emitting it
    proofs: dict[int, list[int]] = field(default_factory=dict)  # ID -> BPE of its own bytes
    seconds: float = 0.0
    proof_applies: str = ""

    def class_of(self, token_id: int) -> str:
        return CLASSES[int(self.classes[token_id])]

    def ids(self, name: str) -> np.ndarray:
        return np.flatnonzero(self.classes == _CODE[name])

    def counts(self) -> dict[str, int]:
        found = np.bincount(self.classes, minlength=len(CLASSES))
        return {name: int(found[i]) for i, name in enumerate(CLASSES)}

    def summary(self, table: TokenTable, *, examples: int = 5) -> dict[str, Any]:
        """JSON-able summary: counts, a few examples per class, exposure histogram."""
        out: dict[str, Any] = {
            "vocab_size": int(self.classes.size),
            "classes": self.counts(),
            "partial_utf8": int(self.partial_utf8.sum()),
            "proof": self.proof_applies,
            "seconds": self.seconds,
            "examples": {
                name: [
                    {"id": int(i), "piece": table.pieces[int(i)].decode("utf-8", "replace")}
                    for i in self.ids(name)[:examples]
                ]
                for name in CLASSES
            },
        }
        if self.exposure is not None:
            out["exposure"] = exposure_summary(self.exposure, self.classes)
        return out


def exposure_counts(ids: np.ndarray, vocab_size: int) -> np.ndarray:
    """How often each ID is a final emitted token in an encoded corpus (flat IDs)."""
    return np.bincount(np.asarray(ids, dtype=np.int64), minlength=vocab_size)[:vocab_size]


def exposure_summary(exposure: np.ndarray, classes: np.ndarray) -> dict[str, Any]:
    """Histogram of log10(count) (bin 0 = never seen) and never-seen IDs per class."""
    edges = [0, 1, 10, 100, 1_000, 10_000, 100_000, 1_000_000]
    labels = ["0", "1-9", "10-99", "100-999", "1k-9.9k", "10k-99k", "100k-999k", ">=1M"]
    bins = np.searchsorted(np.asarray(edges[1:]), exposure, side="right")
    hist = np.bincount(bins, minlength=len(labels))
    never = exposure == 0
    by_class = np.bincount(classes[never], minlength=len(CLASSES))
    return {
        "total": int(exposure.sum()),
        "histogram": {"labels": labels, "counts": [int(c) for c in hist]},
        "never_seen": int(never.sum()),
        "never_seen_by_class": {name: int(by_class[i]) for i, name in enumerate(CLASSES)},
    }


class _LazyMergeTable(Mapping[tuple[int, int], tuple[int, int]]):
    """``(left, right) -> (priority, new_id)`` looked up on demand.

    Only the pairs that occur inside the few audited pieces are ever asked for, so a
    256k vocabulary needs no full pair table.
    """

    def __init__(
        self, pieces: list[bytes], index: dict[bytes, int], ranks: dict[tuple[int, int], int] | None
    ) -> None:
        self._pieces = pieces
        self._index = index
        self._ranks = ranks  # None: tiktoken rule, the rank is the concatenation's ID

    def get(self, key: tuple[int, int], default: Any = None) -> Any:  # type: ignore[override]
        left, right = key
        if self._ranks is None:
            new = self._index.get(self._pieces[left] + self._pieces[right])
            return default if new is None else (new, new)
        rank = self._ranks.get(key)
        if rank is None:
            return default
        new = self._index.get(self._pieces[left] + self._pieces[right])
        return default if new is None else (rank, new)

    def __getitem__(self, key: tuple[int, int]) -> tuple[int, int]:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found  # type: ignore[no-any-return]

    def __iter__(self) -> Any:  # pragma: no cover - never iterated
        raise TypeError("a lazy merge table cannot be iterated")

    def __len__(self) -> int:  # pragma: no cover
        return len(self._index)


def bpe_own_bytes(
    piece: bytes, merge_table: Mapping[tuple[int, int], tuple[int, int]], byte_ids: list[int]
) -> list[int]:
    """BPE of ``piece`` alone: repeatedly merge the minimum ``(rank, position)`` pair.

    ``merge_table[(left, right)] = (rank, new_id)``. Only short pieces are ever passed
    (the few IDs that do not encode alone), so the quadratic scan is irrelevant.
    """
    ids = [byte_ids[b] for b in piece]
    while len(ids) > 1:
        best: tuple[int, int, int] | None = None
        for pos in range(len(ids) - 1):
            found = merge_table.get((ids[pos], ids[pos + 1]))
            if found is not None and (best is None or (found[0], pos) < best[:2]):
                best = (found[0], pos, found[1])
        if best is None:
            break
        ids[best[1] : best[1] + 2] = [best[2]]
    return ids


def _bpe_model(tok: Tokenizer, table: TokenTable) -> tuple[_LazyMergeTable | None, bool, str]:
    """The rank-BPE model of ``tok`` if it has one: (merge table, whole-piece-first, note)."""
    kind = tok.spec.kind
    if not kind.byte_level:
        return None, False, f"no proof for {kind} models: witnesses only"
    index: dict[bytes, int] = {}
    for i, piece in enumerate(table.model_pieces):
        if piece and not table.special[i]:
            index.setdefault(piece, i)
    if any(bytes([b]) not in index for b in range(256)):
        # A BPE over characters (pieces like "\u2581the", byte fallback as "<0xHH>"):
        # its symbols are not bytes, so the byte-level argument does not apply.
        return None, False, "no proof: the BPE is not byte-level (witnesses only)"
    if kind is ModelKind.TIKTOKEN_RANKS:
        return (
            _LazyMergeTable(table.model_pieces, index, None),
            True,
            ("tiktoken ranks: proof for partial-UTF-8 pieces (whole pre-tokens are looked up)"),
        )
    ranks: dict[tuple[int, int], int] = {}
    for rank, (left, right) in enumerate(tok.merges):
        ranks.setdefault((int(left), int(right)), rank)
    # Hugging Face's ignore_merges looks a whole pre-token up before merging.
    model = tok.spec.model
    whole_first = isinstance(model, MergeRecords) and model.ignore_merges
    note = "ordered BPE merges: proof for every piece"
    if whole_first:
        note = "BPE merges with ignore_merges: proof for partial-UTF-8 pieces only"
    return _LazyMergeTable(table.model_pieces, index, ranks), whole_first, note


def _utf8_contexts(piece: bytes, *, limit: int = _MAX_COMPLETIONS) -> list[str]:
    """Valid texts containing ``piece``: a partial character padded on both sides.

    Only the lead byte and the second byte of a character constrain its continuation
    bytes (E0/ED/F0/F4 narrow the second byte), so a left pad of a lead byte plus up to
    two continuation bytes from {80, 90, A0} and a right pad of up to three continuation
    bytes from the same set reach every completion class: an empty result proves that
    no valid UTF-8 text contains ``piece``.
    """
    out: list[str] = []
    seen: set[str] = set()
    # Only a piece that starts inside a character can take a left pad.
    lefts = _PAD_LEFT if piece and 0x80 <= piece[0] < 0xC0 else _PAD_LEFT[:1]
    for left in lefts:
        for right in _PAD_RIGHT:
            try:
                text = (left + piece + right).decode("utf-8")
            except UnicodeDecodeError:
                continue
            if text not in seen:
                seen.add(text)
                out.append(text)
                if len(out) >= limit:
                    return out
    return out


def _mark_alone(
    tok: Tokenizer, table: TokenTable, classes: np.ndarray, todo: np.ndarray, *, strip_space: bool
) -> None:
    texts = [table.pieces[i].decode("utf-8") for i in todo.tolist()]
    if strip_space:
        texts = [t.replace(_SP_SPACE, " ") for t in texts]
        texts = [t[1:] if t.startswith(" ") else t for t in texts]
    if not texts:
        return
    ids, offsets = tok.encode_batch_flat(texts)
    single = np.diff(offsets) == 1
    alone = np.zeros(todo.size, dtype=bool)
    alone[single] = ids[offsets[:-1][single]] == todo[single]
    classes[todo[alone]] = _CODE["alone"]


def _probe_core(piece: bytes, continuing_prefix: str | None) -> str:
    """The text a probe embeds: WordPiece's ``##ing`` is spelled ``ing`` after a letter,
    SentencePiece's U+2581 is a space."""
    text = piece.decode("utf-8").replace(_SP_SPACE, " ")
    if (
        continuing_prefix
        and text.startswith(continuing_prefix)
        and len(text) > len(continuing_prefix)
    ):
        return text[len(continuing_prefix) :]
    return text


def audit_vocabulary(
    tok: Tokenizer,
    *,
    exposure: np.ndarray | None = None,
    table: TokenTable | None = None,
    probe: bool = True,
) -> VocabAudit:
    """Classify every ID of ``tok`` (see the module docstring for what each class proves).

    ``exposure``: per-ID counts from :func:`exposure_counts` over a corpus; an ID seen
    there is a ``context`` witness at least, and the summary gets the histogram.
    """
    start = time.perf_counter()
    table = table if table is not None else token_table(tok)
    n = table.vocab_size
    classes = np.full(n, UNASSIGNED, dtype=np.uint8)
    classes[table.special] = _CODE["special"]
    classes[table.added & ~table.special] = _CODE["added"]
    classes[table.byte_fallback & (classes == UNASSIGNED)] = _CODE["byte_fallback"]
    first: dict[bytes, int] = {}
    for i, piece in enumerate(table.pieces):
        if classes[i] != UNASSIGNED or not piece:
            continue
        if first.setdefault(piece, i) != i:
            classes[i] = _CODE["duplicate"]
    witnesses: dict[int, str] = {}
    proofs: dict[int, list[int]] = {}

    # 1. Alone: one parallel batch over every remaining valid-UTF-8 piece. A
    # SentencePiece-style piece "\u2581the" stands for " the" but the model adds that
    # space itself (dummy prefix), so such pieces are also tried without it.
    todo = np.flatnonzero((classes == UNASSIGNED) & ~table.partial_utf8)
    _mark_alone(tok, table, classes, todo, strip_space=False)
    marker = _SP_SPACE.encode("utf-8")
    retry = [
        i
        for i in np.flatnonzero((classes == UNASSIGNED) & ~table.partial_utf8).tolist()
        if marker in table.pieces[i]
        or (tok.spec.kind is ModelKind.SENTENCEPIECE and table.pieces[i][:1] == b" ")
    ]
    _mark_alone(tok, table, classes, np.asarray(retry, dtype=np.int64), strip_space=True)
    # 2. Exposure: anything the corpus emitted is reachable.
    if exposure is not None:
        seen = (exposure[:n] > 0) & (classes == UNASSIGNED)
        classes[seen] = _CODE["context"]
    # 3. Proofs: bytes that no UTF-8 text contains; merges shadowed inside the piece.
    contexts: dict[int, list[str]] = {}
    for i in np.flatnonzero((classes == UNASSIGNED) & table.partial_utf8).tolist():
        contexts[i] = _utf8_contexts(table.pieces[i])
        if not contexts[i] and tok.spec.kind.byte_level:
            classes[i] = _CODE["unreachable"]
            proofs[i] = []
    merge_table, whole_first, note = _bpe_model(tok, table)
    if merge_table is not None:
        byte_ids = [first.get(bytes([b]), b) for b in range(256)]
        for i in np.flatnonzero(classes == UNASSIGNED).tolist():
            if whole_first and not table.partial_utf8[i]:
                continue
            own = bpe_own_bytes(table.model_pieces[i], merge_table, byte_ids)
            if own != [i]:
                classes[i] = _CODE["unreachable"]
                proofs[i] = own
    # 4. Context probes for what is left (partial pieces: a few completions, few contexts).
    if probe:
        model = tok.spec.hf_model or {}
        prefix = model.get("continuing_subword_prefix")
        probes: list[str] = []
        owner: list[int] = []
        lefts: tuple[str, ...]
        rights: tuple[str, ...]
        for i in np.flatnonzero(classes == UNASSIGNED).tolist():
            if table.partial_utf8[i]:
                cores, lefts, rights = contexts.get(i, []), _LEFT[:3], _RIGHT[:2]
            else:
                cores, lefts, rights = [_probe_core(table.pieces[i], prefix)], _LEFT, _RIGHT
            for core in cores:
                for lft in lefts:
                    for rgt in rights:
                        probes.append(lft + core + rgt)
                        owner.append(i)
        if probes:
            ids, offsets = tok.encode_batch_flat(probes)
            owners = np.repeat(np.asarray(owner, dtype=np.int64), np.diff(offsets))
            probe_of = np.repeat(np.arange(len(probes)), np.diff(offsets))
            for position in np.flatnonzero(ids.astype(np.int64) == owners).tolist():
                token_id = int(owners[position])
                if token_id not in witnesses:
                    witnesses[token_id] = probes[int(probe_of[position])]
                    classes[token_id] = _CODE["context"]
    classes[classes == UNASSIGNED] = _CODE["undetermined"]
    return VocabAudit(
        classes=classes,
        partial_utf8=table.partial_utf8.copy(),
        exposure=None if exposure is None else np.asarray(exposure[:n], dtype=np.int64),
        witnesses=witnesses,
        proofs=proofs,
        seconds=time.perf_counter() - start,
        proof_applies=note,
    )
