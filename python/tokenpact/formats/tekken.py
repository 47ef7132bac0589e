"""Mistral's Tekken tokenizer files (``tekken_*.json``, shipped by ``mistral-common``).

A Tekken file is tiktoken in JSON: ``vocab`` lists byte pieces (base64) by rank,
``config.pattern`` is the pre-tokenization regex, and the special tokens live in their own
ID range below the ranks: ID ``i < n_special`` is special token ``i`` and rank ``r`` is ID
``n_special + r`` (``n_special = config.default_num_special_tokens``). Only the first
``default_vocab_size - n_special`` ranks are used. Files up to version v7 carry no
``special_tokens`` list and get mistral-common's fixed list (``<unk>``, ``<s>``, ``</s>``,
``[INST]`` ...); every missing slot is filled with ``<SPECIAL_i>``, as mistral-common does.

Semantics (equal to ``mistral_common``'s ``Tekkenizer``):

* ``encode(text)``: tiktoken's merge rule on the ranks, shifted by ``n_special``; a
  special token's spelling in the text is ordinary text (Tekkenizer never matches them);
  ``add_special_tokens=True`` prepends ``<s>`` (Tekkenizer's ``bos=True``);
* ``decode(ids)``: the spec's ``special_decode`` is ``"ignore"`` (Tekkenizer's default),
  so special IDs are dropped; ``skip_special_tokens=False`` writes their spellings, as
  the deprecated ``special_token_policy="keep"`` does (``"raise"`` raises
  ``DecodeError``). ``errors="replace"`` matches Tekkenizer's lossy decode of split
  characters.
* ``tp.save(tok, dir)`` writes the exact ``tekken.json`` with the manifest and golden
  vectors; ``tp.load(dir)`` reads it back.

``export_tekken_hf(tok, path)`` writes a ``tokenizer.json`` (byte-level ``BPE`` whose
merges are derived from the ranks, ``ignore_merges`` as tiktoken's whole-piece rule,
the special tokens as added tokens).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from ..core import Provenance, TiktokenRanks, Tokenizer, TokenizerSpec
from ..core.byte_bpe import prepend_bos
from ..errors import ArtifactError, ConfigError
from ..special import SpecialToken
from .hf_export import byte_level_document, write_tokenizer_json

# mistral-common's SpecialTokens for files without a "special_tokens" list (<= v7).
LEGACY_SPECIALS = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
    "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
)  # fmt: skip
LEGACY_VERSIONS = ("v1", "v2", "v3", "v4", "v5", "v6", "v7")
ROLES = {"<unk>": "unk", "<s>": "bos", "</s>": "eos", "<pad>": "pad"}
FILLER = "<SPECIAL_{}>"
Policy = Literal["ignore", "keep", "raise"]
POLICIES = ("ignore", "keep", "raise")
# The file name of a saved Tekken artifact directory.
TEKKEN_FILE = "tekken.json"


def looks_like_tekken(head: bytes) -> bool:
    """Whether the start of a JSON file (its first 4 KB) is a Tekken file: the config,
    which comes first, names the special-token offset, a key no other format uses."""
    return b'"default_num_special_tokens"' in head


def _fail(path: Path, field: str, problem: str) -> ArtifactError:
    return ArtifactError(
        f"{path}: {field}: {problem}; a Tekken file comes from mistral-common "
        "(tekken_*.json) and is loaded as it is"
    )


def _int(path: Path, config: dict[str, Any], key: str, low: int) -> int:
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise _fail(path, f"config.{key}", f"expected an integer >= {low}, got {value!r}")
    return value


def read_tekken(path: str | os.PathLike[str]) -> tuple[list[bytes], list[str], str, str]:
    """(ranks, special spellings by ID, pattern, version) of a Tekken file, validated."""
    p = Path(path)
    try:
        doc = json.loads(p.read_bytes())
    except (OSError, ValueError) as exc:
        raise ArtifactError(f"cannot read Tekken file {p}: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("config"), dict):
        raise _fail(p, "config", "missing")
    config = doc["config"]
    pattern = config.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise _fail(p, "config.pattern", "expected the pre-tokenization regex")
    n_special = _int(p, config, "default_num_special_tokens", 0)
    vocab_size = _int(p, config, "default_vocab_size", n_special + 256)
    version = str(config.get("version", ""))
    entries = doc.get("vocab")
    if not isinstance(entries, list) or len(entries) < vocab_size - n_special:
        got = len(entries) if isinstance(entries, list) else type(entries).__name__
        raise _fail(p, "vocab", f"needs {vocab_size - n_special} ranks, got {got}")
    ranks: list[bytes] = []
    for rank, entry in enumerate(entries[: vocab_size - n_special]):
        if not isinstance(entry, dict) or entry.get("rank") != rank:
            raise _fail(p, f"vocab[{rank}].rank", f"expected {rank}")
        try:
            piece = base64.b64decode(entry.get("token_bytes", ""), validate=True)
        except (binascii.Error, ValueError, TypeError):
            raise _fail(p, f"vocab[{rank}].token_bytes", "not base64") from None
        if rank < 256 and piece != bytes([rank]):
            raise _fail(p, f"vocab[{rank}].token_bytes", f"rank {rank} must be byte {rank}")
        ranks.append(piece)
    specials = _special_spellings(p, doc.get("special_tokens"), version, n_special)
    return ranks, specials, pattern, version


def _special_spellings(path: Path, listed: Any, version: str, count: int) -> list[str]:
    if listed is None:
        if version not in LEGACY_VERSIONS:
            raise _fail(path, "special_tokens", f"a {version} file must list its special tokens")
        names = list(LEGACY_SPECIALS)
    else:
        if not isinstance(listed, list):
            raise _fail(path, "special_tokens", "expected a list")
        names = []
        for i, item in enumerate(listed):
            if not isinstance(item, dict) or item.get("rank") != i:
                raise _fail(path, f"special_tokens[{i}].rank", f"expected {i}")
            if not isinstance(item.get("token_str"), str) or not item["token_str"]:
                raise _fail(path, f"special_tokens[{i}].token_str", "expected a spelling")
            names.append(item["token_str"])
    if len(names) > count or len(set(names)) != len(names):
        raise _fail(path, "special_tokens", f"needs at most {count} distinct spellings")
    names += [FILLER.format(i) for i in range(len(names), count)]
    if len(set(names)) != count:
        raise _fail(path, "special_tokens", "a listed spelling collides with a filler name")
    return names


def special_count(spec: TokenizerSpec) -> int:
    """How many special IDs come before the ranks (0 for any other spec)."""
    model = spec.model
    return model.id_offset if isinstance(model, TiktokenRanks) else 0


def check_saveable(tok: Tokenizer) -> None:
    """Raise ConfigError for a Tekken spec without its source file: ``tokenpact.json``
    cannot express ranks that start after the special IDs, so a Tekken tokenizer saves
    as the exact ``tekken.json`` it was read from (``tp.load`` of a file keeps it)."""
    if special_count(tok.spec) and TEKKEN_FILE not in tok.provenance.files:
        raise ConfigError(
            "this Tekken tokenizer was not read from a tekken_*.json file, and tokenpact.json "
            "cannot express its ranks; load it from the file (tp.load) to save it, or write "
            'a tokenizer.json with tp.export(tok, "hf", path)'
        )


class TekkenTokenizer(Tokenizer):
    """A Tekken tokenizer: tiktoken ranks after ``n_special`` special IDs (module doc).

    Deprecated as a class (kept for one release): decoding follows the spec's
    ``special_decode`` in :meth:`Tokenizer.decode`, so a plain Tokenizer behaves the same.
    """

    @property
    def n_special(self) -> int:
        """How many special IDs come before the ranks."""
        return special_count(self.spec)


def read_tekken_spec(path: str | os.PathLike[str]) -> tuple[TokenizerSpec, Provenance]:
    """The spec and provenance of a ``tekken_*.json`` file: tiktoken ranks after the
    special IDs; ``add_special_tokens`` prepends the bos token."""
    ranks, specials, pattern, version = read_tekken(path)
    pairs = [(SpecialToken(s, ROLES.get(s, "reserved")), i) for i, s in enumerate(specials)]
    spec = TokenizerSpec.with_pattern(
        TiktokenRanks(ranks, id_offset=len(specials)),
        pattern,
        special_tokens=pairs,
        post_processor=prepend_bos(pairs),
        special_decode="ignore",
    )
    source = {"format": "tekken", "path": str(path), "version": version}
    data = Path(path).read_bytes()
    return spec, Provenance(
        format="tekken", source=source, files={TEKKEN_FILE: data}, label=str(path)
    )


def load_tekken(path: str | os.PathLike[str]) -> TekkenTokenizer:
    """Load a ``tekken_*.json`` file; IDs equal mistral-common's ``Tekkenizer``."""
    spec, provenance = read_tekken_spec(path)
    return TekkenTokenizer(spec, provenance=provenance)


def _merges(ranks: Sequence[bytes]) -> list[tuple[bytes, bytes]]:
    """Merges that make Hugging Face's ordered BPE follow tiktoken's rank rule: every
    split of every piece into two pieces of lower rank, ordered by the piece's rank (then
    by the ranks of the two halves), as Hugging Face's own tiktoken converter does."""
    rank_of = {piece: r for r, piece in enumerate(ranks)}
    merges: list[tuple[int, int, int, bytes, bytes]] = []
    for r, piece in enumerate(ranks):
        for k in range(1, len(piece)):
            left, right = rank_of.get(piece[:k]), rank_of.get(piece[k:])
            if left is not None and right is not None and left < r and right < r:
                merges.append((r, left, right, piece[:k], piece[k:]))
    merges.sort()
    return [(a, b) for _, _, _, a, b in merges]


def tekken_tokenizer_json(tok: Tokenizer) -> dict[str, Any]:
    """The ``tokenizer.json`` document of a Tekken tokenizer.

    The special tokens sit in the model vocabulary too (IDs below ``n_special``): Hugging
    Face gives an added token the ID of its vocabulary entry, else a new ID after the
    vocabulary. ``ignore_merges``: tiktoken emits a pre-token that is itself a piece.
    """
    pieces = tok.vocab()
    merges = _merges(pieces[special_count(tok.spec) :])
    return byte_level_document(tok, pieces, merges, post_processor=None, ignore_merges=True)


def export_tekken_hf(tok: Tokenizer, path: str | os.PathLike[str]) -> Path:
    """Write :func:`tekken_tokenizer_json` atomically; a directory gets ``tokenizer.json``."""
    return write_tokenizer_json(tekken_tokenizer_json(tok), path)
