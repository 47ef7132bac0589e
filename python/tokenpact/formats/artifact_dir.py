"""The artifact directory: the tokenizer file(s), ``manifest.json`` and ``golden.json``.

Reading one goes through :mod:`.registry` (``Tokenizer.load``); this module converts
specs to and from the native artifact and writes the directory.

The tokenizer file is ``tokenpact.json`` for native tokenizers (converted here to and
from the validated :class:`~tokenpact.formats.native.NativeArtifact`; ``native.py`` owns
that format), the exact ``tokenizer.json`` (+ ``tokenizer_config.json``) of a Hugging
Face tokenizer, or the exact ``tokenizer.model`` of a SentencePiece one. Those two
formats have no place for a training record, so a trained tokenizer also writes
``training.json`` (the full record: config, seed, stop reason, traces); it is a release
file, sealed by the manifest like the others. A tokenizer with a padding or truncation
policy (``with_padding`` / ``with_truncation``), or a literal-text policy other than the
default (``with_literal_text``), writes it as ``policy.json``, whatever its format: the
policy is behaviour (in the semantic hash), and no tokenizer file format has
a place for it that every peer reads the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..components.processors import template_node
from ..contract import write_contract_files
from ..contract.canonical import nesting_depth
from ..core import MergeRecords, Provenance, RankedMerges, TiktokenRanks, TokenizerSpec
from ..core.literal_text import (
    DEFAULT_LITERAL_TEXT,
    literal_text_config,
    literal_text_from_config,
)
from ..errors import ArtifactError, ConfigError
from ..special import SpecialToken
from ..truncation import (
    padding_config,
    padding_from_config,
    truncation_config,
    truncation_from_config,
)
from . import hf_policy, native

if TYPE_CHECKING:
    from ..core import Tokenizer

# The files of a saved artifact besides tokenpact.json (the registry sniffs them too).
HF_FILE = "tokenizer.json"
SP_FILE = "tokenizer.model"
TRAINING_FILE = "training.json"
POLICY_FILE = "policy.json"
POLICY_KIND = "tokenpact.policy"


def to_artifact(tok: Tokenizer) -> native.NativeArtifact:
    """The native artifact describing ``tok`` (behaviour plus training record)."""
    spec = tok.spec
    specials = [
        native.NativeSpecialToken(id=i, content=t.content, role=t.role)
        for t, i in spec.special_tokens
    ]
    common: dict[str, Any] = {
        "pattern": spec.pattern,
        "pattern_name": spec.pattern_name,
        "special_tokens": specials,
        "post_processor": tok.post_processor,
        "training": tok.training,
    }
    model = spec.model
    if isinstance(model, RankedMerges):
        return native.NativeArtifact(
            semantics=native.MERGE_RANKS,
            merges=[(a, b) for a, b in model.merges],
            vocab=model.vocab(spec),
            **common,
        )
    if isinstance(model, TiktokenRanks) and not model.id_offset:
        return native.NativeArtifact(
            semantics=native.TIKTOKEN_RANKS, ranks=list(model.ranks), **common
        )
    if isinstance(model, MergeRecords):
        raise ArtifactError(
            "this tokenizer was built from explicit merge records; saving it natively is not "
            "supported yet: save the records with your own code or load it from a file"
        )
    raise ArtifactError(
        f"this {spec.kind} tokenizer was built in memory without source files, and "
        "tokenpact.json cannot describe it: build it from a file, or save its tables with "
        "your own code"
    )


def from_artifact(a: native.NativeArtifact) -> tuple[TokenizerSpec, Provenance]:
    """The spec and provenance of a validated native artifact."""
    specials = [
        (SpecialToken(s.content, s.role), s.id)
        for s in sorted(a.special_tokens, key=lambda s: s.id)
    ]
    fields: dict[str, Any] = {
        "special_tokens": specials,
        "post_processor": template_node(a.post_processor),
    }
    if a.semantics != native.MERGE_RANKS:
        spec = TokenizerSpec.with_pattern(TiktokenRanks(a.ranks), a.pattern, **fields)
    elif [i for _, i in specials] == list(
        range(256 + len(a.merges), 256 + len(a.merges) + len(specials))
    ):
        spec = TokenizerSpec.with_pattern(RankedMerges(a.merges), a.pattern, **fields)
    else:
        # Special IDs with gaps: the stored pattern name is kept as written.
        spec = TokenizerSpec(
            RankedMerges(a.merges), pattern=a.pattern, pattern_name=a.pattern_name, **fields
        )
    return spec, Provenance(format="tokenpact_json", training=a.training)


def training_bytes(training: dict[str, Any]) -> bytes:
    """``training.json``: the training record as sorted, indented JSON."""
    try:
        text = json.dumps(
            native.json_safe(training),
            sort_keys=True,
            indent=1,
            ensure_ascii=False,
            allow_nan=False,
        )
    except (TypeError, ValueError) as exc:
        raise ArtifactError(
            f"the training record cannot be written as JSON ({exc}); keep its values to "
            "str, int, finite float, bool, None, lists and dicts"
        ) from None
    return text.encode("utf-8") + b"\n"


def _read_sidecar(path: Path, what: str) -> Any:
    """The JSON document in the file ``path`` beside a tokenizer file."""
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ArtifactError(f"{path}: cannot read {what} ({exc!r:.200})") from None


def read_training(root: Path) -> dict[str, Any] | None:
    """The training record saved beside a tokenizer file, or None when there is none."""
    path = root / TRAINING_FILE
    if not path.is_file():
        return None
    record = _read_sidecar(path, "the training record")
    if not isinstance(record, dict):
        raise ArtifactError(f"{path}: the training record must be a JSON object")
    if nesting_depth(record) > native.MAX_RECORD_DEPTH:
        raise ArtifactError(
            f"{path}: the training record nests deeper than {native.MAX_RECORD_DEPTH} levels; "
            "re-save the tokenizer"
        )
    return record


def policy_bytes(tok: Tokenizer) -> bytes | None:
    """``policy.json``: the padding, truncation and literal-text policy, or None when the
    tokenizer has none of them (the default literal-text policy is not written).

    A policy with a literal-text entry is version 2, so a reader that knows only
    version 1 refuses it rather than loading the tokenizer without it."""
    literal = tok.literal_text != DEFAULT_LITERAL_TEXT
    source = tok.provenance.files.get(HF_FILE)
    # A tokenizer.json that sets padding/truncation is read with them: the policy file
    # then records the tokenizer's own (null included), which wins on load.
    declared = source is not None and hf_policy.declares_policy(source)
    if tok.padding is None and tok.truncation is None and not literal and not declared:
        return None
    document: dict[str, Any] = {
        "kind": POLICY_KIND,
        "version": 2 if literal else 1,
        "padding": None if tok.padding is None else padding_config(tok.padding),
        "truncation": None if tok.truncation is None else truncation_config(tok.truncation),
    }
    if literal:
        document["literal_text"] = literal_text_config(tok.literal_text)
    return json.dumps(document, sort_keys=True, indent=1).encode("utf-8") + b"\n"


_POLICY_KEYS = {1: {"kind", "version", "padding", "truncation"}}
_POLICY_KEYS[2] = _POLICY_KEYS[1] | {"literal_text"}


def read_policy(root: Path, spec: TokenizerSpec) -> TokenizerSpec:
    """``spec`` with the policy saved in ``root/policy.json`` (unchanged without one).

    Fails closed: an unknown version or field, or a malformed policy, is an
    :class:`ArtifactError` (loading without it would change what the tokenizer does)."""
    path = root / POLICY_FILE
    if not path.is_file():
        return spec
    document = _read_sidecar(path, "the policy")
    if not isinstance(document, dict) or document.get("kind") != POLICY_KIND:
        raise ArtifactError(
            f'{path}: not a tokenpact policy (expected "kind": "{POLICY_KIND}"); remove or '
            "rename the file"
        )
    version = document.get("version")
    if isinstance(version, bool) or version not in _POLICY_KEYS:
        raise ArtifactError(
            f"{path}: policy version {version!r} is not 1 or 2; upgrade tokenpact to read it"
        )
    unknown = sorted(set(document) - _POLICY_KEYS[version])
    if unknown:
        raise ArtifactError(f"{path}: unknown policy fields {unknown} in version {version}")
    try:
        padding = document.get("padding")
        truncation = document.get("truncation")
        literal = document.get("literal_text")
        if version == 2 and literal is None:
            raise ConfigError("a version 2 policy must give literal_text")
        return spec.replace(
            padding=None if padding is None else padding_from_config(padding),
            truncation=None if truncation is None else truncation_from_config(truncation),
            literal_text=(
                DEFAULT_LITERAL_TEXT if literal is None else literal_text_from_config(literal)
            ),
        )
    except ConfigError as exc:
        raise ArtifactError(f"{path}: {exc}") from None


def _with_policy(tok: Tokenizer, files: dict[str, bytes]) -> dict[str, bytes]:
    policy = policy_bytes(tok)
    if policy is not None:
        files[POLICY_FILE] = policy
    return files


def _with_training(tok: Tokenizer, files: dict[str, bytes]) -> dict[str, bytes]:
    if tok.training is not None:
        files[TRAINING_FILE] = training_bytes(tok.training)
    return _with_policy(tok, files)


def release_files(tok: Tokenizer) -> dict[str, bytes]:
    """The tokenizer file(s) a save writes: the exact bytes of the ``tokenizer.json`` /
    ``tokenizer.model`` the tokenizer was built from (they are the artifact), plus
    ``training.json`` when there is a training record; else ``tokenpact.json``."""
    files = dict(tok.provenance.files)
    if files:
        return _with_training(tok, files)
    return _with_policy(
        tok, {native.FILENAME: native.artifact_to_json(to_artifact(tok)).encode("utf-8")}
    )


# Every tokenizer file a save of any kind writes. Saving one kind over a directory that
# holds another removes the other kind's files in the same commit, so no stale
# tokenpact.json / tokenizer.json is left for a later load (or another tool) to read.
TOKENIZER_FILES = (
    native.FILENAME,
    HF_FILE,
    "tokenizer_config.json",
    SP_FILE,
    TRAINING_FILE,
    POLICY_FILE,
    "tekken.json",
)


def save_tokenizer(tok: Tokenizer, directory: Path) -> Path:
    """Write the tokenizer file, ``manifest.json`` and ``golden.json`` as one commit."""
    files = release_files(tok)  # before touching the disk: a failure leaves nothing behind
    if directory.exists() and not directory.is_dir():
        raise ArtifactError(
            f"{directory} is a file; save into a directory (a new path, or an artifact "
            "directory to replace)"
        )
    created = not directory.exists()
    stale = [name for name in TOKENIZER_FILES if name not in files]
    try:
        directory.mkdir(parents=True, exist_ok=True)
        write_contract_files(tok, directory, release_files=files, remove=stale)
    except OSError as exc:
        _remove_if_empty(directory, created)
        raise ArtifactError(
            f"cannot save into {directory}: {exc.strerror or exc}; check the path and its "
            "permissions"
        ) from None
    except BaseException:
        _remove_if_empty(directory, created)
        raise
    return directory


def _remove_if_empty(directory: Path, created: bool) -> None:
    if created:
        try:
            directory.rmdir()
        except OSError:
            pass
