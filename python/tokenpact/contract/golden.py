"""Golden vectors: stored encode/decode results that prove a loaded tokenizer still behaves.

A digest proves identity; golden cases prove behaviour. ``generate(tok)``
encodes one case per input class and stores raw text, normalized text, pieces (hex bytes),
IDs, offsets with their coordinate system, the special-token mask and the decoded text;
``verify(tok, golden)`` replays every case and reports each difference.

>>> golden = generate(tok)            # doctest: +SKIP
>>> verify(tok, golden).ok            # doctest: +SKIP
True
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ContractError, TokenpactError
from .hashing import framed_hash, semantic_hash
from .report import Report
from .schema import declaration_errors
from .semantics import HasConfig, config_of

if TYPE_CHECKING:
    from ..core import Tokenizer

COORDINATE = "raw_utf8_bytes"
# Far longer than the engine's short-piece threshold and cache limit (64 and 48 bytes) and
# than common 4-8 KiB buffers, so replay crosses internal boundaries. Engines with larger
# chunks (Llama splits 25,000-character runs) can pass bigger sizes to generate().
LONG_SPAN_CHARS = 3_000
LONG_INPUT_CHARS = 12_000
# Cases with more tokens than this store pieces, offsets and mask as digests (the IDs are
# always stored in full: they are the compatibility evidence), keeping golden.json small.
INLINE_TOKENS = 512
_DIFF_LIMIT = 5
_COMPARED = ("error", "normalized", "ids", "pieces", "offsets", "special_mask", "decoded")
_DIGESTED = ("pieces", "offsets", "special_mask")
FIELD_DOMAIN = "golden-field-v1"

_PARAGRAPH = (
    "The cat sleeps. A train arrives at 10:45, carrying 1,234 passengers.\n"
    "    def encode(self, text):  # indentation and code\n"
    "Ελληνικά, русский, 中文, العربية, हिन्दी, emoji 👩‍💻 and café.\n\n"
)

# (name, class, text), one class per kind of input a tokenizer must get right.
_TEXT_CASES: tuple[tuple[str, str, str], ...] = (
    ("empty", "empty", ""),
    ("pure_whitespace", "whitespace", " \t  \u00a0 "),
    ("leading_trailing_whitespace", "leading_trailing_whitespace", "   The cat sleeps.  \t"),
    ("repeated_newlines", "repeated_newlines", "first line\n\n\n\nsecond\r\n\r\nthird\n"),
    ("ascii_sentence", "ascii", "The cat sleeps. A train arrives!"),
    ("composed", "composed_unicode", unicodedata.normalize("NFC", "café naïve Ångström")),
    ("decomposed", "decomposed_unicode", unicodedata.normalize("NFD", "café naïve Ångström")),
    ("compatibility_chars", "compatibility_characters", "ﬁne ＡＢＣ ① ㎞ x²"),
    ("emoji_zwj", "emoji", "family 👨\u200d👩\u200d👧\u200d👦, flag 🏳️\u200d🌈, skin 👍🏽"),
    ("combining_marks", "combining_marks", "e\u0301\u0302 a\u0323\u0300\u0301 Z\u0335\u0336"),
    ("mixed_scripts", "mixed_scripts", "English, Ελληνικά, Русский, 中文, 日本語, 한국어, हिन्दी"),
    ("no_space_script", "no_space_script", "これは空白のない日本語の文です。ภาษาไทยไม่เว้นวรรค"),
    ("right_to_left", "right_to_left", "עברית and العربية mixed with English 123"),
    ("numbers_decimals", "numbers", "Pi is 3.14159; price $1,234.50; -0.5e-10; 1/3"),
    ("long_digit_run", "long_digit_run", "id " + "1234567890" * 8),
    ("url", "url", "See https://example.com/a/b?q=tok%20en&x=1#frag for details"),
    (
        "code_indentation",
        "code_indentation",
        "def f(x):\n    if x:\n        return x + 1\n\treturn None\n",
    ),
    ("identifiers", "identifiers", "parseHTTPResponse snake_case_name __init__ kebab-case x1y2"),
)


def _policy(allowed: Any = (), add: bool = False) -> dict[str, Any]:
    return {
        "allowed_special": allowed if allowed == "all" else sorted(allowed),
        "add_special_tokens": add,
    }


def golden_inputs(
    tok_or_config: HasConfig | Mapping[str, Any],
    *,
    long_span_chars: int = LONG_SPAN_CHARS,
    long_input_chars: int = LONG_INPUT_CHARS,
) -> list[dict[str, Any]]:
    """Return the golden inputs (name, class, text or code points, policy) for a tokenizer.

    Special-token cases depend on the tokenizer's spellings; the rest are fixed.
    """
    config = config_of(tok_or_config)
    cases: list[dict[str, Any]] = [_text_case(n, c, t) for n, c, t in _TEXT_CASES]
    unit = "the_cat.sleeps/A-train:arrives?q=0123456789&"
    span = (unit * (long_span_chars // len(unit) + 1))[:long_span_chars]
    cases.append(_text_case("long_no_whitespace", "long_no_whitespace", span))
    long_text = (_PARAGRAPH * (long_input_chars // len(_PARAGRAPH) + 1))[:long_input_chars]
    cases.append(_text_case("long_input", "long_input", long_text))
    specials = sorted(config["special_tokens"], key=lambda t: t["id"])
    for token in specials:
        # The spelling must stay ordinary text under the default (untrusted) policy.
        text = f"literal {token['content']} from a user"
        cases.append(_text_case(f"literal_special_{token['id']}", "special_literal", text))
    if specials:
        joined = "start " + " ".join(t["content"] for t in specials) + " end"
        cases.append(_text_case("allowed_special_all", "special_allowed", joined, "all"))
    cases.append(_text_case("add_special_tokens", "post_processor", "The cat sleeps.", (), True))
    cases.append(
        {
            "name": "lone_surrogate",
            "class": "malformed_input",
            "text": None,
            "codepoints": [0x61, 0xD800, 0x62],
            "policy": _policy(),
        }
    )
    return cases


def _text_case(name: str, cls: str, text: str, allowed: Any = (), add: bool = False) -> Any:
    return {
        "name": name,
        "class": cls,
        "text": text,
        "codepoints": None,
        "policy": _policy(allowed, add),
    }


def _case_text(case: Mapping[str, Any]) -> str:
    if case.get("text") is not None:
        return str(case["text"])
    return "".join(chr(c) for c in case["codepoints"])


def _offsets(
    raw: bytes, pieces: list[bytes], ids: list[int], special_ids: set[int]
) -> list[list[int]]:
    """Offsets into the raw UTF-8: each piece must cover the next bytes of the text, except
    inserted special tokens, which get a zero-width span where they were inserted."""
    cursor = 0
    result: list[list[int]] = []
    for tid, piece in zip(ids, pieces, strict=True):
        if piece and raw.startswith(piece, cursor):
            result.append([cursor, cursor + len(piece)])
            cursor += len(piece)
        elif tid in special_ids:
            result.append([cursor, cursor])
        else:
            raise ContractError(
                f"token {tid} does not cover the text at byte {cursor}; raw-byte offsets need "
                "pieces that spell the input (a normalizer changes the coordinate system)"
            )
    if cursor != len(raw):
        raise ContractError(f"tokens cover {cursor} of {len(raw)} input bytes")
    return result


def _pieces_spell_input(tok: Tokenizer) -> bool:
    """Whether concatenated pieces are the raw text (see TokenizerSpec.pieces_spell_input);
    normalizers, WordPiece pieces, text-rewriting pre-tokenizers (a prefix space) and
    SentencePiece's escaped spaces and dummy prefix do not spell the raw text."""
    spec = getattr(tok, "spec", None)
    # Objects without a spec (plain baselines) spell their input by construction.
    return True if spec is None else bool(spec.pieces_spell_input)


def _encode_kwargs(policy: Mapping[str, Any]) -> dict[str, Any]:
    allowed = policy["allowed_special"]
    return {
        "allowed_special": "all" if allowed == "all" else set(allowed),
        "add_special_tokens": bool(policy["add_special_tokens"]),
    }


def run_case(tok: Tokenizer, case: Mapping[str, Any], special_ids: set[int]) -> dict[str, Any]:
    """Encode one golden input with ``tok`` and return the full case record."""
    text = _case_text(case)
    record = {
        "name": case["name"],
        "class": case["class"],
        "text": case.get("text"),
        "codepoints": case.get("codepoints"),
        "policy": dict(case["policy"]),
    }
    outputs = dict.fromkeys(("normalized", "pieces", "ids", "offsets", "special_mask", "decoded"))
    try:
        ids = [int(i) for i in tok.encode(text, **_encode_kwargs(case["policy"]))]
    except TokenpactError as exc:
        # The error class is the stored behaviour for malformed input (policy "reject").
        return {**record, "error": type(exc).__name__, **outputs}
    pieces = [bytes(tok.token_bytes(i)) for i in ids]
    if not _pieces_spell_input(tok):
        # Use the engine's offsets, mapped back through normalization.
        enc = tok.encode_structured(
            text,
            coordinate="raw_utf8_bytes",
            truncation=False,  # the content's offsets, as `ids` above
            padding=False,
            **_encode_kwargs(case["policy"]),
        )
        offsets = [list(o) for o in enc.offsets]
    else:
        offsets = _offsets(text.encode("utf-8"), pieces, ids, special_ids)
    normalize = getattr(tok, "normalize", None)
    return {
        **record,
        "error": None,
        "normalized": normalize(text) if callable(normalize) else text,
        "pieces": [p.hex() for p in pieces],
        "ids": ids,
        "offsets": offsets,
        "special_mask": [1 if i in special_ids else 0 for i in ids],
        "decoded": tok.decode(ids),
    }


def field_digest(name: str, value: Any) -> str:
    """Return the digest stored in place of a long case's pieces, offsets or mask."""
    return framed_hash(FIELD_DOMAIN, {"field": name, "value": value})


def _compact(record: dict[str, Any], inline_tokens: int) -> dict[str, Any]:
    if record["ids"] is None or len(record["ids"]) <= inline_tokens:
        return record
    return {**record, **{k: field_digest(k, record[k]) for k in _DIGESTED}}


def _special_ids(config: Mapping[str, Any]) -> set[int]:
    return {int(t["id"]) for t in config["special_tokens"]}


def generate(
    tok: Tokenizer,
    *,
    long_span_chars: int = LONG_SPAN_CHARS,
    long_input_chars: int = LONG_INPUT_CHARS,
    inline_tokens: int = INLINE_TOKENS,
) -> dict[str, Any]:
    """Return a golden-vector document for ``tok`` covering every input class."""
    config = config_of(tok)
    specials = _special_ids(config)
    inputs = golden_inputs(
        config, long_span_chars=long_span_chars, long_input_chars=long_input_chars
    )
    return {
        "kind": "tokenpact.golden",
        "version": 1,
        "semantic_hash": semantic_hash(config),
        "coordinate": COORDINATE,
        "cases": [_compact(run_case(tok, case, specials), inline_tokens) for case in inputs],
    }


def _describe(field: str, expected: Any, actual: Any) -> str:
    if isinstance(expected, list) and isinstance(actual, list):
        index = next(
            (i for i, (a, b) in enumerate(zip(expected, actual, strict=False)) if a != b),
            min(len(expected), len(actual)),
        )
        return (
            f"{field} differ at index {index} (expected {expected[index : index + 3]!r}, "
            f"got {actual[index : index + 3]!r}; lengths {len(expected)} vs {len(actual)})"
        )
    return f"{field}: expected {expected!r:.80}, got {actual!r:.80}"


def verify(tok: Tokenizer, golden: Any, *, check_hash: bool = True) -> Report:
    """Replay every golden case with ``tok`` and report each difference.

    With ``check_hash`` the golden set must also name ``tok``'s semantic hash.
    """
    report = Report("golden")
    errors = declaration_errors(golden, "golden")
    for error in errors:
        report.failed("golden.schema", error)
    if errors:
        return report
    config = config_of(tok)
    if check_hash:
        actual = semantic_hash(config)
        report.expect(
            "golden.semantic_hash",
            golden["semantic_hash"] == actual,
            f"golden set was made for {golden['semantic_hash']}, tokenizer is {actual}",
        )
    specials = _special_ids(config)
    for case in golden["cases"]:
        try:
            got = run_case(tok, case, specials)
        except (ContractError, TokenpactError) as exc:
            report.failed(f"golden.{case['name']}", f"replay failed: {exc}")
            continue
        for key in _DIGESTED:
            if isinstance(case[key], str) and got[key] is not None:
                got[key] = field_digest(key, got[key])
        diffs = [_describe(key, case[key], got[key]) for key in _COMPARED if case[key] != got[key]]
        report.expect(f"golden.{case['name']}", not diffs, "; ".join(diffs[:_DIFF_LIMIT]))
    return report
