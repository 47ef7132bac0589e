"""The artifact directory: ``tokenpact.json`` (+ contract files once issued).

This module converts between a live :class:`~tokenpact.Tokenizer` and the validated
:class:`~tokenpact.formats.native.NativeArtifact`; ``native.py`` owns the file format.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ArtifactError
from ..special import SpecialToken
from . import native

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer


def to_artifact(tok: Tokenizer) -> native.NativeArtifact:
    """The native artifact describing ``tok`` (behaviour plus training record)."""
    specials = [
        native.NativeSpecialToken(id=i, content=c, role=tok.special_token_roles[c])
        for c, i in tok.special_tokens.items()
    ]
    common: dict[str, Any] = {
        "pattern": tok.pattern,
        "pattern_name": tok.pattern_name,
        "special_tokens": specials,
        "post_processor": tok.post_processor,
        "training": tok.training,
    }
    if tok.semantics == "merge_ranks":
        return native.NativeArtifact(
            semantics=native.MERGE_RANKS, merges=tok.merges, vocab=tok.vocab(), **common
        )
    return native.NativeArtifact(semantics=native.TIKTOKEN_RANKS, ranks=tok.vocab(), **common)


def from_artifact(cls: type[Tokenizer], a: native.NativeArtifact) -> Tokenizer:
    """Rebuild a Tokenizer from a validated artifact."""
    specials_by_id = sorted(a.special_tokens, key=lambda s: s.id)
    if a.semantics == native.MERGE_RANKS:
        base = 256 + len(a.merges)
        expected = list(range(base, base + len(specials_by_id)))
        if [s.id for s in specials_by_id] == expected:
            ordered = [SpecialToken(s.content, s.role) for s in specials_by_id]
            tok = cls.from_merges(
                a.merges, pattern=a.pattern, special_tokens=ordered, training=a.training
            )
        else:
            from .. import _native

            core = _native.BpeCore.from_merges(
                a.merges, a.pattern, a.pattern_name, [(s.content, s.id) for s in specials_by_id]
            )
            tok = cls(
                core,
                pattern=a.pattern,
                semantics="merge_ranks",
                special_tokens=[(SpecialToken(s.content, s.role), s.id) for s in specials_by_id],
                post_processor=a.post_processor,
                training=a.training,
            )
    else:
        tok = cls.from_ranks(
            a.ranks,
            pattern=a.pattern,
            special_tokens={s.content: s.id for s in specials_by_id},
            roles={s.content: s.role for s in specials_by_id},
        )
        tok._training = a.training
    tok._post_processor = a.post_processor
    return tok


def release_files(tok: Tokenizer) -> dict[str, bytes]:
    """The tokenizer file(s) a save writes: ``tokenpact.json``, or for a tokenizer loaded
    from a Hugging Face ``tokenizer.json``, that file's exact bytes (it is the artifact)."""
    hf_semantics = ("merge_records", "hf_pipeline")
    if tok.semantics in hf_semantics and tok.source.get("format") == "hf_tokenizer_json":
        # The tokenizer.json (and tokenizer_config.json: roles, chat template) as loaded.
        return dict(tok._hf_files)
    if tok.semantics == "sentencepiece":
        raise ArtifactError(
            "saving a SentencePiece tokenizer as an artifact directory is not supported yet; "
            "keep the .model file it was loaded from (its bytes are the artifact)"
        )
    if tok.semantics in hf_semantics:
        raise ArtifactError(
            "this tokenizer was built from explicit merge records; saving it natively is not "
            "supported yet: save the records with your own code or load it from a file"
        )
    return {native.FILENAME: native.artifact_to_json(to_artifact(tok)).encode("utf-8")}


def save_tokenizer(tok: Tokenizer, directory: Path) -> Path:
    """Write the tokenizer file, ``manifest.json`` and ``golden.json`` as one commit."""
    from ..contract import write_contract_files

    directory.mkdir(parents=True, exist_ok=True)
    write_contract_files(tok, directory, release_files=release_files(tok))
    return directory


def load_tokenizer(cls: type[Tokenizer], path: Path, *, verify: bool = True) -> Tokenizer:
    """Load from an artifact directory or a ``tokenpact.json`` file; verify its contract."""
    from ..contract import check_contract_files, recover_interrupted_save

    target = native.native_path(path)
    root = target.parent
    if root.is_dir():
        recover_interrupted_save(root)
    tok = from_artifact(cls, native.read_native(target))
    if verify and ((root / "manifest.json").exists() or (root / "golden.json").exists()):
        check_contract_files(tok, root)
    return tok
