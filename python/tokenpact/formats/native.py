"""The native artifact: ``tokenpact.json``, a versioned JSON description of a tokenizer.

The file is the spec's canonical config (``TokenizerSpec.to_config()``: pre-tokenizer
pattern, merges or ranks, vocabulary, special and added tokens, post-processor, decoder)
plus the training record; the padding, truncation and literal-text policy is
``policy.json`` for every format. Reading is ``TokenizerSpec.from_config`` of the
document, after a check that trusts nothing: every invariant the encoder relies on is
checked here, so a damaged or hand-edited file fails with an
:class:`~tokenpact.errors.ArtifactError` that names the file, the field and the fix
instead of producing wrong IDs later.

Example::

    spec = tp.Tokenizer.from_merges([(97, 98)], pattern="gpt4").spec
    write_native("out/my-tok", spec)          # -> out/my-tok/tokenpact.json
    spec, provenance = read_native("out/my-tok")
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

import regex

from .._io import atomic_write_text
from ..contract.canonical import nesting_depth
from ..core import MergeRecords, Provenance, TiktokenRanks, TokenizerSpec, vocab_from_merges
from ..core.models import describes_completely
from ..core.spec import SPECIAL_DECODE
from ..errors import ArtifactError, ConfigError
from ..patterns import PATTERNS
from ..special import ROLES, SHARED_ROLES, AddedTokenFlags
from .hf_pipeline import check_id_space

FILENAME = "tokenpact.json"
FORMAT = "tokenpact.tokenizer"
FORMAT_VERSION = 1
MERGE_RANKS = "merge_ranks"
TIKTOKEN_RANKS = "tiktoken_ranks"
# IDs cross the Rust boundary as uint32.
MAX_ID = 2**32 - 1
# Deepest nesting of a training record (real ones nest a few levels); deeper ones would
# make the code that reads them recurse out of stack.
MAX_RECORD_DEPTH = 64

_REMAKE = "re-create the artifact with tok.save() instead of editing it by hand"
_SAVE_BUG = "the code that built this artifact is inconsistent; please report it as a bug"
_HEX = re.compile(r"(?:[0-9a-f]{2})+")
_TOP_KEYS = {
    "format",
    "format_version",
    "pre_tokenizer",
    "model",
    "special_tokens",
    "post_processor",
    "decoder",
    "training",
}
# Written only when the spec has them (TokenizerSpec.to_config).
_OPTIONAL_KEYS = {"added_tokens", "added_token_flags", "special_decode"}


def native_path(path: str | os.PathLike[str]) -> Path:
    """Resolve a directory (existing, or a new path without ``.json``) to ``dir/tokenpact.json``."""
    target = Path(path)
    if target.is_dir():
        return target / FILENAME
    if target.exists() or target.suffix.lower() == ".json":
        return target
    return target / FILENAME


# ----------------------------------------------------------------------------- writing


# The policy entries of the canonical config: every format saves them in policy.json
# (artifact_dir), so tokenpact.json leaves them out.
POLICY_KEYS = ("padding", "truncation", "literal_text")


def check_describable(spec: TokenizerSpec) -> None:
    """Raise ArtifactError unless ``tokenpact.json`` can describe ``spec`` (a ranked-merge
    or tiktoken-rank model with one regex split)."""
    if isinstance(spec.model, MergeRecords):
        raise ArtifactError(
            "this tokenizer was built from explicit merge records; saving it natively is not "
            "supported yet: save the records with your own code or load it from a file"
        )
    if not describes_completely(spec.model) or spec.stages is not None:
        raise ArtifactError(
            f"this {spec.kind} tokenizer was built in memory without source files, and "
            "tokenpact.json cannot describe it: build it from a file, or save its tables with "
            "your own code"
        )
    if spec.pre_tokenizer is not None:
        raise ArtifactError(
            "this tokenizer's pre-tokenizer is a chain of steps, and tokenpact.json holds one "
            'regex split: export it with tp.export(tok, "hf") instead'
        )


def document(spec: TokenizerSpec, training: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``tokenpact.json`` document of ``spec``: its canonical config (less the policy,
    which is ``policy.json``) plus the training record."""
    config = spec.to_config()
    for key in POLICY_KEYS:
        config.pop(key, None)
    return {**config, "training": json_safe(None if training is None else dict(training))}


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite float written as the string ``"inf"``, ``"-inf"``
    or ``"nan"``: JSON has no such numbers, and a training trace may hold them (a
    log-likelihood of ``-inf`` before the first EM step). Other values are unchanged."""
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def _dump(value: Any, indent: str) -> str:
    """Sorted-key JSON where lists of scalars (or of short scalar lists) get one item a line.

    ``json.dumps(indent=2)`` would spend four lines on every merge pair; one entry per
    line keeps large artifacts compact and diffs readable.
    """
    inner = indent + "  "
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [
            f"{inner}{json.dumps(str(k), ensure_ascii=False)}: {_dump(value[k], inner)}"
            for k in sorted(value)
        ]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        flat = all(_is_flat(v) for v in value)
        items = [f"{inner}{_scalar(v) if flat else _dump(v, inner)}" for v in value]
        return "[\n" + ",\n".join(items) + "\n" + indent + "]"
    return _scalar(value)


def _is_flat(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(not isinstance(v, (list, tuple, dict)) for v in value)
    return not isinstance(value, dict)


def _scalar(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_scalar(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def to_json(spec: TokenizerSpec, training: Mapping[str, Any] | None = None) -> str:
    """``tokenpact.json`` text after validation: sorted keys, 2-space indent, UTF-8 text,
    trailing newline."""
    check_describable(spec)
    obj = document(spec, training)
    try:
        text = _dump(obj, "") + "\n"
    except (TypeError, ValueError) as exc:
        raise ArtifactError(
            f"cannot serialize the artifact: {exc}; the training record and post-processor "
            "must hold only JSON values (str, int, finite float, bool, None, lists, dicts)"
        ) from exc
    # Refuse to write a file that read_native would reject.
    check = _Validator("artifact being saved", _SAVE_BUG)
    check.document(json.loads(text))
    check.rank_pieces(spec)
    return text


def write_native(
    path: str | os.PathLike[str],
    spec: TokenizerSpec,
    training: Mapping[str, Any] | None = None,
) -> Path:
    """Validate and atomically write ``tokenpact.json``; ``path`` may be a directory.
    Returns the file path."""
    target = native_path(path)
    atomic_write_text(target, to_json(spec, training))
    return target


# ----------------------------------------------------------------------------- reading


def read_native(path: str | os.PathLike[str]) -> tuple[TokenizerSpec, Provenance]:
    """Read and fully validate ``tokenpact.json`` (or a directory holding it): the spec
    (``TokenizerSpec.from_config`` of the document) and the training record."""
    target = native_path(path)
    if not target.exists():
        where = f"{path} has no {FILENAME}" if Path(path).is_dir() else f"{target} does not exist"
        raise ArtifactError(
            f"{where}; pass a directory written by tok.save() / `tokenpact train` "
            f"or the path of its {FILENAME}"
        )
    try:
        raw = target.read_bytes()
    except OSError as exc:
        raise ArtifactError(
            f"{target}: cannot read the file ({exc.strerror or exc}); check the path and "
            "its permissions"
        ) from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ArtifactError(
            f"{target}: not UTF-8 text (byte {exc.start}); the file is damaged, {_REMAKE}"
        ) from exc
    try:
        obj = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise ArtifactError(
            f"{target}: invalid JSON at line {exc.lineno} column {exc.colno} ({exc.msg}); "
            f"the file is damaged or truncated, {_REMAKE}"
        ) from exc
    except _DuplicateKey as exc:
        raise ArtifactError(
            f"{target}: key {exc.args[0]!r} appears twice in one object; keep one, or {_REMAKE}"
        ) from exc
    except RecursionError:
        raise ArtifactError(f"{target}: nested too deeply to be an artifact; {_REMAKE}") from None
    check = _Validator(str(target))
    check.document(obj)
    try:
        spec = TokenizerSpec.from_config(obj)
    except ConfigError as exc:
        raise ArtifactError(f"{target}: {exc}; {_REMAKE}") from None
    check.rank_pieces(spec)
    return spec, Provenance(format="tokenpact_json", training=obj["training"])


class _DuplicateKey(Exception):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Validator:
    """Checks a parsed JSON object and builds the artifact; every failure names the field."""

    def __init__(self, source: str, default_fix: str = _REMAKE) -> None:
        self.source = source
        self.default_fix = default_fix

    def fail(self, where: str, problem: str, fix: str | None = None) -> NoReturn:
        raise ArtifactError(f"{self.source}: {where}: {problem}; {fix or self.default_fix}")

    def obj(
        self,
        value: Any,
        where: str,
        required: set[str],
        optional: frozenset[str] | set[str] = frozenset(),
    ) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(where, f"expected a JSON object, found {type(value).__name__}")
        missing = sorted(required - value.keys())
        if missing:
            self.fail(where, f"missing field {missing[0]!r}")
        unknown = sorted(value.keys() - required - optional)
        if unknown:
            self.fail(
                where,
                f"unknown field {unknown[0]!r}",
                "remove it, or upgrade tokenpact if a newer version wrote this file",
            )
        return value

    def string(self, value: Any, where: str, *, nonempty: bool = True) -> str:
        if not isinstance(value, str):
            self.fail(where, f"expected a string, found {type(value).__name__}")
        if nonempty and not value:
            self.fail(where, "must not be empty")
        return value

    def list_(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            self.fail(where, f"expected a JSON array, found {type(value).__name__}")
        return value

    def document(self, top: Any) -> None:
        """Check every field of a parsed ``tokenpact.json`` (ArtifactError naming the
        first bad one); a document that passes is a valid ``TokenizerSpec`` config."""
        if not isinstance(top, dict):
            self.fail("top level", f"expected a JSON object, found {type(top).__name__}")
        if top.get("format") != FORMAT:
            self.fail(
                "format",
                f"is {top.get('format')!r}, expected {FORMAT!r}: this is not a tokenpact artifact",
                "load Hugging Face tokenizer.json or *.tiktoken files with tp.Tokenizer.load "
                "on that file instead",
            )
        version = top.get("format_version")
        if not isinstance(version, int) or isinstance(version, bool):
            self.fail("format_version", f"expected an integer, found {version!r}")
        if version != FORMAT_VERSION:
            fix = (
                "upgrade tokenpact to read it"
                if version > FORMAT_VERSION
                else "re-save it with a tokenpact that writes version 1"
            )
            self.fail("format_version", f"version {version} is not supported (this reads 1)", fix)
        self.obj(top, "top level", _TOP_KEYS, _OPTIONAL_KEYS)

        self.pre_tokenizer(top["pre_tokenizer"])
        model = self.obj(top["model"], "model", {"type", "semantics"}, {"merges", "vocab", "ranks"})
        if model["type"] != "byte_bpe":
            self.fail("model.type", f"is {model['type']!r}; only 'byte_bpe' is supported")
        semantics = model["semantics"]
        if semantics == MERGE_RANKS:
            self.obj(model, "model", {"type", "semantics", "merges", "vocab"})
            merges = self.merges(model["merges"])
            self.vocab(model["vocab"], merges)
            model_size = 256 + len(merges)
        elif semantics == TIKTOKEN_RANKS:
            self.obj(model, "model", {"type", "semantics", "ranks"})
            model_size = self.ranks(model["ranks"])
        else:
            self.fail(
                "model.semantics",
                f"is {semantics!r}; expected {MERGE_RANKS!r} or {TIKTOKEN_RANKS!r}",
            )
        specials = self.special_tokens(top["special_tokens"], model_size)
        added = self.added_tokens(top.get("added_tokens", []), model_size, specials)
        self.added_token_flags(top.get("added_token_flags", []), {**specials, **added})
        self.post_processor(top["post_processor"], set(specials.values()))
        decoder = self.obj(top["decoder"], "decoder", {"type"})
        if decoder["type"] != "byte_level":
            self.fail("decoder.type", f"is {decoder['type']!r}; only 'byte_level' is supported")
        special_decode = top.get("special_decode", "keep")
        if special_decode not in SPECIAL_DECODE:
            self.fail("special_decode", f"is {special_decode!r}; expected one of {SPECIAL_DECODE}")
        training = top["training"]
        if training is not None and not isinstance(training, dict):
            self.fail("training", f"expected an object or null, found {type(training).__name__}")
        if nesting_depth(training) > MAX_RECORD_DEPTH:
            self.fail("training", f"nested deeper than {MAX_RECORD_DEPTH} levels")

    def pre_tokenizer(self, value: Any) -> tuple[str | None, str]:
        pre = self.obj(value, "pre_tokenizer", {"type", "name", "pattern"})
        if pre["type"] != "regex_split":
            self.fail("pre_tokenizer.type", f"is {pre['type']!r}; only 'regex_split' is supported")
        pattern = self.string(pre["pattern"], "pre_tokenizer.pattern")
        name = pre["name"]
        if name is not None:
            self.string(name, "pre_tokenizer.name")
            if name not in PATTERNS:
                self.fail(
                    "pre_tokenizer.name",
                    f"unknown built-in pattern {name!r} (known: {', '.join(sorted(PATTERNS))})",
                    "set it to null to use the stored regex as a custom pattern",
                )
            if PATTERNS[name] != pattern:
                self.fail(
                    "pre_tokenizer.pattern",
                    f"differs from the built-in {name!r} pattern",
                    "restore the built-in pattern, or set name to null if the regex is custom",
                )
        try:
            regex.compile(pattern)
        except regex.error as exc:
            self.fail("pre_tokenizer.pattern", f"is not a valid regex ({exc})")
        return name, pattern

    def merges(self, value: Any) -> list[tuple[int, int]]:
        items = self.list_(value, "model.merges")
        merges: list[tuple[int, int]] = []
        for rank, item in enumerate(items):
            where = f"model.merges[{rank}]"
            if not (isinstance(item, list) and len(item) == 2 and all(map(_is_int, item))):
                self.fail(where, f"expected a pair of integer ids [left, right], found {item!r}")
            left, right = item
            limit = 256 + rank
            # Ranks are the list order, so a parent must be a byte or an earlier merge.
            for side, part in (("left", left), ("right", right)):
                if part < 0 or part >= limit:
                    self.fail(
                        where,
                        f"{side} id {part} is not a base byte or an earlier merge "
                        f"(must be in 0..{limit - 1}); merges must be in rank order",
                    )
            merges.append((left, right))
        return merges

    def vocab(self, value: Any, merges: list[tuple[int, int]]) -> list[bytes]:
        items = self.list_(value, "model.vocab")
        expected = 256 + len(merges)
        if len(items) != expected:
            self.fail(
                "model.vocab",
                f"has {len(items)} entries but 256 bytes + {len(merges)} merges need {expected}",
            )
        vocab: list[bytes] = []
        for i, item in enumerate(items):
            if not (isinstance(item, str) and _HEX.fullmatch(item)):
                self.fail(
                    f"model.vocab[{i}]",
                    f"expected non-empty lowercase hex of the piece bytes, found {item!r}",
                )
            vocab.append(bytes.fromhex(item))
        for b in range(256):
            if vocab[b] != bytes([b]):
                self.fail(
                    f"model.vocab[{b}]",
                    f"base id {b} must be the single byte {b:02x}, found {vocab[b].hex()}",
                )
        # The stored pieces must be the ones the merges make (the model's own rule).
        made = vocab_from_merges(merges)
        seen: dict[bytes, int] = {}
        for rank, (left, right) in enumerate(merges):
            new_id = 256 + rank
            piece = vocab[new_id]
            if piece != made[new_id]:
                self.fail(
                    f"model.vocab[{new_id}]",
                    f"is {piece.hex()} but merge {rank} ({left}, {right}) makes "
                    f"{made[new_id].hex()}",
                )
            if piece in seen:
                self.fail(
                    f"model.vocab[{new_id}]",
                    f"piece {piece.hex()} duplicates id {seen[piece]}: two merges make the "
                    "same bytes",
                )
            seen[piece] = new_id
        return vocab

    def ranks(self, value: Any) -> int:
        """The shape of ``model.ranks`` (their bytes are checked on the built model, by
        :meth:`rank_pieces`, so a large file is decoded once); returns their count."""
        items = self.list_(value, "model.ranks")
        for i, item in enumerate(items):
            if not isinstance(item, str) or not item:
                self.fail(
                    f"model.ranks[{i}]",
                    f"expected non-empty base64 of the piece bytes, found {item!r}",
                )
        return len(items)

    def rank_pieces(self, spec: TokenizerSpec) -> None:
        """The decoded ranks of a tiktoken-rank spec: non-empty, distinct, all 256 bytes."""
        if not isinstance(spec.model, TiktokenRanks):
            return
        seen: dict[bytes, int] = {}
        for i, piece in enumerate(spec.model.ranks):
            where = f"model.ranks[{i}]"
            if not piece:
                self.fail(where, "decodes to an empty piece")
            if piece in seen:
                self.fail(where, f"piece {piece.hex()} duplicates rank {seen[piece]}")
            seen[piece] = i
        missing = [b for b in range(256) if bytes([b]) not in seen]
        if missing:
            self.fail(
                "model.ranks",
                f"{len(missing)} single bytes have no rank (first: {missing[0]:02x}); byte-level "
                "BPE needs all 256 so that any text can be encoded",
            )

    def special_tokens(self, value: Any, model_size: int) -> dict[int, str]:
        """The declared special tokens, content by ID."""
        items = self.list_(value, "special_tokens")
        by_id: dict[int, str] = {}
        by_content: set[str] = set()
        roles: dict[str, str] = {}
        for i, item in enumerate(items):
            where = f"special_tokens[{i}]"
            tok = self.obj(item, where, {"id", "content", "role"})
            token_id, role = tok["id"], tok["role"]
            content = self.string(tok["content"], f"{where}.content")
            self.token_id(token_id, f"{where}.id", content, model_size, by_id)
            if content in by_content:
                self.fail(f"{where}.content", f"{content!r} is declared twice")
            if role not in ROLES:
                self.fail(
                    f"{where}.role",
                    f"unknown role {role!r}",
                    f"use one of {', '.join(ROLES)}",
                )
            if role not in SHARED_ROLES and role in roles:
                self.fail(
                    f"{where}.role",
                    f"role {role!r} is already held by {roles[role]!r}",
                    "give each role to one token (extra ones can be 'reserved')",
                )
            by_id[token_id] = content
            by_content.add(content)
            roles[role] = content
        self.id_space("special_tokens", model_size, by_id)
        return by_id

    def token_id(
        self, token_id: Any, where: str, content: str, model_size: int, taken: dict[int, str]
    ) -> None:
        """An added or special token's ID: an integer after the model's IDs, unused."""
        if not _is_int(token_id):
            self.fail(where, f"expected an integer, found {token_id!r}")
        if token_id < model_size:
            self.fail(
                where,
                f"{content!r} has id {token_id}, inside the model's ids 0..{model_size - 1}",
                f"special ids must come after the vocabulary; {self.default_fix}",
            )
        if token_id > MAX_ID:
            self.fail(where, f"{content!r} has id {token_id}, above {MAX_ID}")
        if token_id in taken:
            self.fail(where, f"{content!r} reuses id {token_id} of {taken[token_id]!r}")

    def id_space(self, where: str, model_size: int, tokens: dict[int, str]) -> None:
        if tokens:
            # Tables are sized by the largest ID: bound it before anything is built.
            check_id_space(self.source, where, model_size + len(tokens), max(tokens))

    def added_tokens(self, value: Any, model_size: int, specials: dict[int, str]) -> dict[int, str]:
        """The non-special added tokens, content by ID."""
        items = self.list_(value, "added_tokens")
        by_id: dict[int, str] = {}
        contents = set(specials.values())
        for i, item in enumerate(items):
            where = f"added_tokens[{i}]"
            tok = self.obj(item, where, {"id", "content"})
            content = self.string(tok["content"], f"{where}.content")
            self.token_id(tok["id"], f"{where}.id", content, model_size, {**specials, **by_id})
            if content in contents:
                self.fail(f"{where}.content", f"{content!r} is declared twice")
            by_id[tok["id"]] = content
            contents.add(content)
        self.id_space("added_tokens", model_size, {**specials, **by_id})
        return by_id

    def added_token_flags(self, value: Any, tokens: dict[int, str]) -> None:
        items = self.list_(value, "added_token_flags")
        seen: set[str] = set()
        for i, item in enumerate(items):
            where = f"added_token_flags[{i}]"
            flags = self.obj(item, where, {"id", "content", *AddedTokenFlags._fields})
            content = self.string(flags["content"], f"{where}.content")
            if tokens.get(flags["id"]) != content or not _is_int(flags["id"]):
                self.fail(where, f"{content!r} with id {flags['id']!r} is not a declared token")
            if content in seen:
                self.fail(f"{where}.content", f"{content!r} has flags twice")
            seen.add(content)
            for name in AddedTokenFlags._fields:
                if not isinstance(flags[name], bool):
                    self.fail(f"{where}.{name}", f"expected true or false, found {flags[name]!r}")

    def post_processor(self, value: Any, specials: set[str]) -> None:
        if value is None:
            return
        post = self.obj(value, "post_processor", {"type", "token"})
        if post["type"] != "prepend_bos":
            self.fail(
                "post_processor.type", f"is {post['type']!r}; only 'prepend_bos' is supported"
            )
        token = self.string(post["token"], "post_processor.token")
        if token not in specials:
            self.fail(
                "post_processor.token",
                f"{token!r} is not a declared special token",
                "declare it in special_tokens or set post_processor to null",
            )
