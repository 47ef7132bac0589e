"""Streaming encode, so that only stable input IDs reach the model: text or raw bytes
arrive in transport chunks; IDs are committed only when no continuation can change them.

Invariant, for every chunking: ``concat(push results) + finish() == tok.encode(text)``.

Commit rules (exactness first: where a rule cannot be proven, nothing is committed
until :meth:`StreamingEncoder.finish`):

- ``pretokens`` (byte-level BPE with a built-in pattern: gpt2, gpt4/cl100k, o200k,
  llama3; no normalizer): byte-level BPE encodes each pre-token alone, so IDs are final
  once their pre-token is. The Rust scanner reports which leading pre-tokens it found
  without ever asking whether the text ends there (``Builtin::final_prefix``); those are
  final for every continuation. Special/added spellings that may be recognized hold the
  text back from their first possible start; a complete spelling is committed with its
  ID once no other spelling can match there.
- ``normalized`` (byte-level BPE behind a Unicode normalizer, NFC/NFKC/NFD/NFKD, and one
  split step a built-in scanner proves: Qwen, MiniMax): as ``pretokens``
  over the normalized text up to the last Unicode-stable character, committed where a
  stable character starts and the raw prefix normalizes to the final pre-tokens
  (:mod:`.stream_normalize`).
- ``whitespace`` (Hugging Face WordPiece behind BertPreTokenizer/Whitespace/
  WhitespaceSplit): the pre-tokenizer splits at every ASCII whitespace character and
  drops it, WordPiece encodes words alone, so a cut right before such a character is
  final.
- ``metaspace`` (Hugging Face Unigram or BPE behind ``Metaspace(split=True)``): an
  ASCII space becomes the ``▁`` that starts the next pre-token, so a cut right before
  a space is final (the tail then starts with ``▁``: no prepend scheme changes it).
  Both rules need a normalizer whose context never crosses an ASCII space or newline
  (none, BertNormalizer, Lowercase, NFC/NFD/NFKC/NFKD, StripAccents).
- ``specials`` (SentencePiece models, regex ``Split`` pipelines, other normalizers,
  when special or added spellings are recognized): no cut inside ordinary text is
  proven, but the engine encodes the text between recognized spellings as separate
  inputs (each SentencePiece sentence gets its own dummy prefix, each Hugging Face
  segment is normalized alone), so a decided spelling is a hard boundary: the text
  before it and its ID are final. Not for Metaspace's ``first`` prepend scheme, which
  treats the first segment differently.
- ``sentencepiece`` (SentencePiece ``.model`` files, BPE or Unigram, native only):
  a sentence is cut right before an ASCII space that follows another character once
  every normalizer step before it is final (no later byte can change it; the native
  normalizer resumes after those steps at the next scan); no piece spans the
  ``▁`` there, BPE merges each side alone the same, and Unigram's Viterbi continues
  from the best path's f32 score carried across the cut
  (``src/runtime/stream_sentencepiece.rs``). Recognized spellings are hard boundaries
  as under ``specials``. A vocabulary with ``▁`` inside pieces keeps
  ``specials``/``hold``.
- ``hold`` (the same families with nothing recognized, or a recognized added token
  with lstrip/rstrip/single_word flags): the whole tail stays provisional until
  ``finish``.

Work per push is bounded: the buffer is rescanned once ``scan_step`` new bytes (256 by
default; 0: on every push) arrived while it is short (4096 bytes of UTF-8) and
afterwards only each time it has doubled, so a 10 MB run with no boundary costs linear
time (commits then come later, never wrong). Each scan has a fixed cost on top of the
bytes it reads, so the default scans short transport chunks (64 bytes) every fourth
push; IDs then commit at most 255 bytes after they became final.

This module is the reference. Every rule but ``hold`` runs in Rust for the pipeline
engines of ``tokenpact._native.Engine`` (``_native.StreamingCore``,
``src/runtime/stream_encode.rs``): the same steps with identical commits, except that
under ``pretokens`` Rust encodes each final pre-token as scanned (so it needs no check
that the prefix splits the same alone, and commits at least as much); the
``sentencepiece`` rule is Rust only. ``native=False`` keeps this path.
"""

from __future__ import annotations

import codecs
import re
import weakref
from typing import TYPE_CHECKING, Any, Literal

from .. import _native
from ..core import Capability, ModelKind
from ..errors import ConfigError, InvalidInputError, TokenpactError
from . import stream_normalize

if TYPE_CHECKING:
    from ..core import SpecialSpec, Tokenizer

__all__ = ["StreamingEncoder"]

BUILTIN_PATTERNS = frozenset({"gpt2", "gpt4", "cl100k", "o200k", "llama3"})
SCAN_ALWAYS_BELOW = 4096
# New bytes between two scans by default: the native core's constant.
DEFAULT_SCAN_STEP: int = _native.DEFAULT_SCAN_STEP

Rule = Literal[
    "pretokens", "normalized", "whitespace", "metaspace", "specials", "sentencepiece", "hold"
]

# Normalizers that act on each character alone, or whose context (NFC/NFKC composition,
# canonical reordering, final-sigma lowercasing) never reaches across an ASCII space or
# newline: none of those characters composes, reorders or is case-ignorable.
LOCAL_NORMALIZERS = frozenset(
    {"BertNormalizer", "Lowercase", "NFC", "NFD", "NFKC", "NFKD", "StripAccents"}
)
WORDPIECE_SPLITS = frozenset({"BertPreTokenizer", "Whitespace", "WhitespaceSplit"})


# The spellings each stream guards and their native matcher, per tokenizer and set of
# allowed spellings (a tokenizer's spellings never change). Building the matcher (an
# Aho-Corasick automaton) and sorting the spellings cost a stream of Llama 3.2 with all
# 256 specials recognized about 2.6M instructions, more than encoding 10 kB; a server
# opens a stream per request. Both are immutable and shared (as the tokenizer's own
# per-set matchers are); the entry goes with the tokenizer.
# Sets kept per tokenizer (oldest dropped first): a server's requests pick the allowed
# spellings, so the distinct sets are the client's to choose.
_SETS_PER_TOKENIZER = 32
_SPELLINGS: weakref.WeakKeyDictionary[Any, dict[frozenset[str], tuple[tuple[str, ...], Any]]] = (
    weakref.WeakKeyDictionary()
)


def _spellings(tok: Tokenizer, allowed: frozenset[str]) -> tuple[tuple[str, ...], Any]:
    """The spellings a stream allowing the controls ``allowed`` turns into IDs (ordinary
    added tokens and those controls), longest first, and their plain native matcher (None
    when there are none), built once per tokenizer and set.

    A control the call does not allow is not guarded: the stream cuts text around it like
    any text. ``encode`` keeps it in its automaton when the tokenizer has ordinary added
    tokens, where it can hide a spelling that overlaps it; no shipped file has such an
    overlap, and the streaming tests compare every chunking with ``encode``."""
    try:
        by_set = _SPELLINGS.setdefault(tok, {})
    except TypeError:  # a tokenizer type without weak references: no cache
        by_set = {}
    found = by_set.get(allowed)
    if found is None:
        if len(by_set) >= _SETS_PER_TOKENIZER:  # requests choose the sets: keep it bounded
            del by_set[next(iter(by_set))]
        ids = {**tok.added_tokens, **tok.special_tokens}
        ordinary = set(tok.added_tokens) - set(tok.special_tokens)
        guards = tuple(sorted(ordinary | allowed, key=len, reverse=True))
        matcher = None
        if guards:
            order = sorted(guards)
            gates = ["ordinary" if g in ordinary else "control" for g in order]
            matcher = _native.SpecialMatcher([(g, ids[g]) for g in order], None, None, gates)
        found = by_set[allowed] = (guards, matcher)
    return found


_MID_CHARACTER = (
    "push() after push_bytes() left an incomplete UTF-8 character; finish the character "
    "with push_bytes()"
)
# A str given where raw UTF-8 is expected: a typed error naming the str method, not the
# binding's bare TypeError.
_NOT_BYTES = "{}() takes bytes (raw UTF-8), not str; use {}() for text"


def _surrogate_message(exc: UnicodeEncodeError) -> str:
    return f"the text contains a lone surrogate at {exc.start}; pass valid Unicode text"


def _check_sink(out: object) -> None:
    # The native sink's check and message (src/py/runtime.rs), before the stream moves.
    if not isinstance(out, list):
        raise InvalidInputError(
            f"out must be a list that receives the committed IDs, not {type(out).__name__}; "
            "pass a list (e.g. out = [])"
        )


def _append(out: list[int], ids: list[int]) -> int:
    # list.extend, not out.extend: a list subclass's override is bypassed, as natively.
    list.extend(out, ids)
    return len(ids)


def _local_normalizer(node: dict[str, Any] | None) -> bool:
    if not node:
        return True
    if node.get("type") == "Sequence":
        return all(_local_normalizer(n) for n in node.get("normalizers", []))
    return node.get("type") in LOCAL_NORMALIZERS


def commit_rule(tok: Tokenizer) -> Rule:
    """The strongest commit rule this module can prove for ``tok``."""
    return _rule_and_proof(tok)[0]


def _rule_and_proof(tok: Tokenizer) -> tuple[Rule, tuple[stream_normalize.Form, str] | None]:
    """:func:`commit_rule` and, for ``normalized``, the (form, proof pattern) that proved
    it (derived once: the encoder's constructor needs both)."""
    if (
        tok.spec.kind.byte_level
        and tok.pattern_name in BUILTIN_PATTERNS
        and not tok.spec.normalizer
    ):
        return "pretokens", None
    if tok.spec.kind.byte_level:
        proof = _normalized_proof(tok)
        if proof is not None:
            return "normalized", proof
    return _unnormalized_rule(tok), None


def _unnormalized_rule(tok: Tokenizer) -> Rule:
    if tok.spec.kind is not ModelKind.HF_PIPELINE:
        return "hold"
    try:
        config = tok.components().to_config()
    except TokenpactError:
        return "hold"
    pre = config.get("pre_tokenizer") or {}
    model = (config.get("model") or {}).get("type")
    if not _local_normalizer(config.get("normalizer")):
        return "hold"
    if model == "WordPiece" and pre.get("type") in WORDPIECE_SPLITS:
        return "whitespace"
    if model in ("Unigram", "BPE") and pre.get("type") == "Metaspace" and pre.get("split", True):
        return "metaspace"
    return "hold"


def _normalized_proof(tok: Tokenizer) -> tuple[stream_normalize.Form, str] | None:
    """(form, proof pattern) of a byte-level pipeline behind one Unicode normalizer and
    one split step a built-in scanner proves (Qwen, MiniMax: NFC); else None."""
    spec = tok.spec
    node = spec.normalizer
    if not spec.kind.pipeline_engine or node is None or node.TYPE not in stream_normalize.FORMS:
        return None
    steps = spec.engine_steps()
    proof = stream_normalize.proof_pattern(None if steps is None else [list(s) for s in steps])
    if proof is None:
        return None
    form: stream_normalize.Form = node.TYPE  # type: ignore[assignment]
    return form, proof


def _has_first_scheme(node: Any) -> bool:
    if isinstance(node, dict):
        if node.get("type") == "Metaspace" and node.get("prepend_scheme") == "first":
            return True
        return any(_has_first_scheme(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_first_scheme(v) for v in node)
    return False


def segments_independent(tok: Tokenizer) -> bool:
    """Whether ``tok.encode`` encodes the text after a recognized spelling exactly as it
    encodes that text alone, so ``encode(a + s + b) == encode(a + s) + encode(b)``.

    Both engines encode the text between spellings as separate inputs: a SentencePiece
    sentence gets its own dummy prefix, a pipeline segment its own normalization. The one
    position-dependent step is Metaspace's ``prepend_scheme="first"`` (only the first
    segment gets the prefix).
    """
    kind = tok.spec.kind
    if not kind.pipeline_engine:
        return True  # SentencePiece's engine
    if kind is not ModelKind.HF_PIPELINE:
        return True
    try:
        config = tok.components().to_config()
    except TokenpactError:
        return False
    return not _has_first_scheme(config.get("pre_tokenizer"))


def _check_bytes(data: object, method: str, text_method: str) -> None:
    """Refuse what is not bytes-like before it reaches ``bytes()``, which would turn an
    int into that many NUL bytes (``push_bytes(10**10)`` allocating 10 GB) and ``None``
    into a bare ``TypeError``."""
    if isinstance(data, str):
        raise InvalidInputError(_NOT_BYTES.format(method, text_method))
    if isinstance(data, (bytes, bytearray)):
        return
    try:
        memoryview(data)  # type: ignore[arg-type]
    except TypeError:
        raise InvalidInputError(
            f"{method}() takes a bytes-like object (raw UTF-8), not {type(data).__name__}"
        ) from None


class StreamingEncoder:
    """Encode a stream of text chunks; return IDs as soon as they are final.

    ``native=False`` keeps the Python reference path even where the Rust one applies
    (both are exact after every push; the native ``pretokens`` and ``sentencepiece``
    rules may commit more than the reference, see docs/RUNTIME.md; the tests compare
    them).

    ``scan_step``: the new bytes a push must bring since the last scan before the tail
    is scanned again (256 by default: IDs commit at most 255 bytes after they became
    final, and short transport chunks share the fixed cost of a scan; 0: every push
    scans, IDs are committed as soon as they are final, for interactive demos and
    tests of the commit rule). The IDs never depend on it.

    >>> enc = StreamingEncoder(tok, scan_step=0)       # doctest: +SKIP
    >>> enc.push_bytes(b"\\xe2"), enc.push_bytes(b"\\x82"), enc.push_bytes(b"\\xac")
    ([], [], [])
    >>> enc.provisional(), enc.finish()                # doctest: +SKIP
    ([260, 172], [260, 172])
    """

    def __init__(
        self,
        tok: Tokenizer,
        *,
        allowed_special: SpecialSpec = (),
        native: bool = True,
        scan_step: int = DEFAULT_SCAN_STEP,
    ) -> None:
        if not isinstance(scan_step, int) or isinstance(scan_step, bool) or scan_step < 0:
            raise ConfigError(
                f"scan_step must be a byte count >= 0 (0: scan on every push), not {scan_step!r}"
            )
        self.scan_step = scan_step
        self.tokenizer = tok
        self.allowed_special = allowed_special
        self.rule: Rule
        self.rule, normalized = _rule_and_proof(tok)
        # Metaspace's "first" scheme prepends only at the start of the input: a tail
        # encoded alone after a committed spelling would gain a prefix it lacks in place.
        self._through_spellings = segments_independent(tok)
        # Exactly the spellings encode(allowed_special=...) recognizes: ordinary added
        # tokens always, and the allowed special tokens.
        ids = {**tok.added_tokens, **tok.special_tokens}
        if allowed_special == "all":
            allowed = set(tok.special_tokens)
        else:
            allowed = set(allowed_special)
            unknown = allowed - set(ids)
            if unknown:
                raise InvalidInputError(
                    f"allowed_special names {sorted(unknown)!r}, which are not special or "
                    "added tokens of this tokenizer"
                )
            allowed &= set(tok.special_tokens)  # an ordinary token matches anyway
        # Spellings encode() turns into control/added IDs: they must not be split.
        self._guards, matcher = _spellings(tok, frozenset(allowed))
        flags = tok.added_token_flags
        flagged = bool(flags) and any(g in flags for g in self._guards)
        if flagged:
            self.rule = "hold"  # lstrip/rstrip/single_word reach across the spelling
        elif self.rule == "hold" and self._guards and self._through_spellings:
            self.rule = "specials"
        self._engine_encode = tok.engine.encode
        self._pattern = tok.pattern_name or ""
        self._normalized = normalized if self.rule == "normalized" else None
        # Every rule but hold runs the same steps in Rust: one native call per push
        # instead of a UTF-8 decode, a scan call, an encode call and list bookkeeping in
        # Python. The matcher is encode()'s for these spellings (none carries a flag).
        self._core: _native.StreamingCore | None = None
        sentence_cuts = Capability.STREAMING_ENCODE_SENTENCEPIECE in tok.capabilities
        if native and not flagged and sentence_cuts:
            # Cuts inside a sentence are proven per model (no inner U+2581 in any piece,
            # plain spaces; Unigram: a well-formed charsmap): the engine declares it.
            self._core = _native.StreamingCore(
                tok.engine, "sentencepiece", None, matcher, True, scan_step
            )
            self.rule = "sentencepiece"
        elif native and self.rule != "hold" and tok.spec.kind.pipeline_engine:
            pattern = None
            if self.rule == "pretokens":
                pattern = self._pattern
            elif self._normalized is not None:
                pattern = self._normalized[1]  # the scanner that proves the split
            self._core = _native.StreamingCore(
                tok.engine,
                self.rule,
                pattern,
                matcher,
                self._through_spellings,
                scan_step,
            )
        # The reference path's own guard tables (the native core has its own). Built only
        # when that path runs: with every special of a large vocabulary recognized they
        # cost more than the rest of the constructor (Llama 3.2: about 2 ms).
        self._guard_re: re.Pattern[str] | None = None
        self._guard_prefixes: set[str] = set()
        self._guard_len = 0
        if self._core is None and self._guards:
            self._guard_re = re.compile("|".join(re.escape(g) for g in self._guards))
            self._guard_prefixes = {g[:k] for g in self._guards for k in range(1, len(g))}
            self._guard_len = max(len(g) for g in self._guards)
        if self._core is not None:
            # Hot: one push per transport chunk. The native method has the same contract
            # (typed errors, anything bytes() accepts); binding it skips a Python frame.
            self.push_bytes = self._core.push_bytes  # type: ignore[method-assign]
            self.push_bytes_into = self._core.push_bytes_into  # type: ignore[method-assign]
        self.reset()

    # ------------------------------------------------------------------ public
    def reset(self) -> None:
        """Cancel: drop undecided text, incomplete UTF-8 bytes and provisional IDs."""
        # Undecided text as parts: appending to one growing str per push would copy the
        # whole tail each time (quadratic on a long run without a boundary).
        self._parts: list[str] = []
        self._size = 0
        self._utf8 = codecs.getincrementaldecoder("utf-8")("strict")
        self._scanned = 0
        self._committed: list[int] = []
        if self._core is not None:
            self._core.reset()

    @property
    def committed(self) -> list[int]:
        """Every ID committed since the start or the last :meth:`reset`."""
        return self._core.committed if self._core is not None else self._committed

    def push(self, text: str) -> list[int]:
        """Add text; returns the newly committed IDs."""
        if not isinstance(text, str):
            raise InvalidInputError("push() takes str; use push_bytes() for raw UTF-8")
        if self._core is not None:
            if self._core.mid_character:
                raise InvalidInputError(_MID_CHARACTER)
            try:
                return self._core.push(text)
            except UnicodeEncodeError as exc:
                raise InvalidInputError(_surrogate_message(exc)) from None
        if self._utf8.getstate()[0]:
            raise InvalidInputError(_MID_CHARACTER)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidInputError(_surrogate_message(exc)) from None
        return self._add(text)

    def push_bytes(self, data: bytes) -> list[int]:
        """Add raw UTF-8 split anywhere (a code point may arrive in pieces). ``data`` is a
        bytes-like object (``bytes``, ``bytearray``, ``memoryview``, any buffer)."""
        if type(data) is not bytes:
            _check_bytes(data, "push_bytes", "push")
        if self._core is not None:
            return self._core.push_bytes(data)
        try:
            text = self._utf8.decode(bytes(data), final=False)
        except UnicodeDecodeError as exc:
            raise InvalidInputError(
                f"the stream is not valid UTF-8 ({exc.reason} at byte {exc.start} of this "
                "chunk); decode the transport with the right charset before encoding"
            ) from None
        return self._add(text) if text else []

    # The sinks: the same pushes, appending the committed IDs to the caller's list. A
    # server's loop ``out += enc.push_bytes(c)`` builds, copies and frees one list per
    # push (on Llama 3.2 about a tenth of one-shot encode's instructions); these don't.
    def push_into(self, text: str, out: list[int]) -> int:
        """:meth:`push`, appending the newly committed IDs to ``out`` (a ``list``);
        returns how many. On error nothing is appended."""
        if not isinstance(text, str):
            raise InvalidInputError("push_into() takes str; use push_bytes_into() for raw UTF-8")
        _check_sink(out)
        if self._core is not None:
            if self._core.mid_character:
                raise InvalidInputError(_MID_CHARACTER)
            try:
                return self._core.push_into(text, out)
            except UnicodeEncodeError as exc:
                raise InvalidInputError(_surrogate_message(exc)) from None
        return _append(out, self.push(text))

    def push_bytes_into(self, data: bytes, out: list[int]) -> int:
        """:meth:`push_bytes`, appending the newly committed IDs to ``out`` (a
        ``list``); returns how many. On error nothing is appended."""
        _check_sink(out)
        if type(data) is not bytes:
            _check_bytes(data, "push_bytes_into", "push_into")
        if self._core is not None:
            return self._core.push_bytes_into(data, out)
        return _append(out, self.push_bytes(data))

    def finish_into(self, out: list[int]) -> int:
        """:meth:`finish`, appending the rest of the IDs to ``out`` (a ``list``);
        returns how many. On error nothing is appended."""
        _check_sink(out)
        if self._core is not None:
            return self._core.finish_into(out)
        return _append(out, self.finish())

    def provisional(self) -> list[int]:
        """IDs of the uncommitted tail as they would be if the stream ended now (an
        incomplete trailing UTF-8 character is not text yet and is left out)."""
        if self._core is not None:
            return self._core.provisional()
        return self._encode(self._buffer())

    @property
    def pending_text(self) -> str:
        """Decoded text that is not committed yet."""
        if self._core is not None:
            return self._core.pending_text
        return self._buffer()

    def finish(self) -> list[int]:
        """End of stream: commit the rest and start over."""
        if self._core is not None:
            return self._core.finish()
        if self._utf8.getstate()[0]:
            raise InvalidInputError(
                "the stream ends inside a UTF-8 character; send its remaining bytes, or "
                "reset() to cancel"
            )
        ids = self._encode(self._buffer())
        self._committed.extend(ids)
        self._set_buffer("")
        self._scanned = 0
        return ids

    # ------------------------------------------------------------------ internals
    def _buffer(self) -> str:
        if len(self._parts) > 1:
            self._parts[:] = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    def _set_buffer(self, text: str) -> None:
        self._parts[:] = [text] if text else []
        self._size = len(text.encode("utf-8"))

    def _encode(self, text: str) -> list[int]:
        if not text:
            return []
        if not self._guards:
            # Nothing to recognize: the engine's ordinary encode is tok.encode(text)
            # without the per-call policy checks (hot: called once per commit).
            return list(self._engine_encode(text, None))
        return self.tokenizer.encode(text, allowed_special=self.allowed_special)

    def _add(self, text: str) -> list[int]:
        self._parts.append(text)
        self._size += len(text.encode("utf-8"))  # bytes, as the Rust path counts
        if self.rule == "hold":
            return []
        size = self._size
        if size < self._scanned + self.scan_step:
            return []  # amortized: wait for scan_step new bytes
        if size > SCAN_ALWAYS_BELOW and size < 2 * self._scanned:
            return []  # rescan only after doubling: linear total work on hostile input
        out: list[int] = []
        while True:
            cut, through_spelling = self._final_cut()
            if cut:
                buf = self._buffer()
                out.extend(self._encode(buf[:cut]))
                self._set_buffer(buf[cut:])
            if not through_spelling:
                break  # the tail's first pre-token is undecided: rescanning finds nothing
        self._scanned = self._size
        self._committed.extend(out)
        return out

    def _final_cut(self) -> tuple[int, bool]:
        """Length of the longest buffer prefix whose IDs no continuation can change, and
        whether it ends with a special/added spelling (then more may be final after it)."""
        buf = self._buffer()
        limit = len(buf)
        guard_at = None
        if self._guard_re is not None:
            # A spelling may start in the last (longest - 1) chars and complete later.
            for k in range(min(self._guard_len - 1, len(buf)), 0, -1):
                if buf[-k:] in self._guard_prefixes:
                    limit = len(buf) - k
                    break
            found = self._guard_re.search(buf, 0, len(buf))
            if found is not None and found.start() < limit:
                limit = found.start()
                guard_at = found
        if guard_at is not None:
            # The earliest possible spelling starts here. When exactly one spelling can
            # match at this start and all of it has arrived, encode() must split the text
            # there: the segment before it and the spelling's ID are final.
            start = guard_at.start()
            rest = len(buf) - start
            starting = [g for g in self._guards if buf.startswith(g[:rest], start)]
            if len(starting) == 1 and len(starting[0]) <= rest and self._through_spellings:
                return start + len(starting[0]), True
        if self.rule == "pretokens":
            cut = _native.final_pretoken_prefix(buf[:limit], self._pattern)
            return (0 if cut is None else int(cut)), False
        if self._normalized is not None:
            form, proof = self._normalized
            return stream_normalize.normalized_cut(
                buf, limit, form, self.tokenizer.normalize, proof
            ), False
        if self.rule == "specials":
            return 0, False  # only a decided spelling cuts
        # A cut right before an ASCII space (Metaspace: it becomes the ▁ that starts the
        # next pre-token) or any ASCII whitespace (WordPiece: split there and dropped)
        # splits the text for every continuation; the normalizer is local (see above).
        spaces = " " if self.rule == "metaspace" else " \t\n\r"
        cut = max(buf.rfind(c, 0, limit) for c in spaces)
        return max(cut, 0), False
