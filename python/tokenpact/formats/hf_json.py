"""Hugging Face ``tokenizer.json``: load tokenizers with identical IDs and offsets.

Supported today (every unsupported component raises ArtifactError naming its type):
the normalizers of :mod:`.hf_pipeline` (NFC ... BertNormalizer, Nmt, Precompiled,
Sequence); pre-tokenizers ``Split`` (regex or string, every behaviour, ``invert``),
``ByteLevel`` (with or without its GPT-2 regex; ``add_prefix_space`` first in the
chain), ``Metaspace`` (every ``prepend_scheme``, ``split``, legacy
``add_prefix_space``; first in the chain), Whitespace, WhitespaceSplit,
BertPreTokenizer, Punctuation, Digits, CharDelimiterSplit and ``Sequence`` of those (or
none); models ``BPE`` over the GPT-2 byte-to-unicode alphabet (with ByteLevel;
``ignore_merges``), ``BPE`` over characters (without ByteLevel:
``continuing_subword_prefix``, ``end_of_word_suffix``, ``unk_token``, ``fuse_unk``,
``byte_fallback``, ``ignore_merges``), ``WordPiece``, ``WordLevel`` and ``Unigram``
(``unk_id``, ``byte_fallback``); a BPE ``dropout`` is recorded in ``Tokenizer.source``
and not applied (``encode`` is deterministic, docs/PIPELINE.md); post-processors
``TemplateProcessing``, ``BertProcessing``, ``RobertaProcessing``, ``ByteLevel`` and
``Sequence``; decoders ``ByteLevel`` (byte-level BPE only), ``WordPiece``,
``ByteFallback``, ``Fuse``, ``Strip``, ``Replace``, ``Metaspace``, ``BPEDecoder``,
``CTC`` and ``Sequence``; added tokens with every flag (``lstrip``, ``rstrip``,
``single_word``, ``normalized``: matched as HF does, see docs/PIPELINE.md), each
needing ``allowed_special`` as everywhere in tokenpact (``allowed_special="all"``
reproduces Hugging Face's default).
The file's ``truncation`` and ``padding`` become the tokenizer's own policy
(:mod:`.hf_policy`): ``encode_structured`` / ``encode_structured_batch`` apply them as
``tokenizers`` does; plain ``encode`` returns the content IDs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TypeVar

from .. import _native
from ..components import Component, component_class, from_config
from ..components import pre_tokenizers as cp
from ..components.decoders import Decoder
from ..components.models import TABLES
from ..components.models import Model as ModelNode
from ..components.normalizers import Normalizer
from ..components.processors import Template, TemplateItem
from ..core import (
    HfModel,
    HfStages,
    MergeRecords,
    Model,
    Provenance,
    Tokenizer,
    TokenizerSpec,
)

# Re-exported: the byte map moved to the core (peer names spell tokens with it).
from ..core.byte_map import byte_decoder as byte_decoder
from ..core.byte_map import byte_encoder as byte_encoder
from ..core.split_steps import StepError, chain_steps
from ..errors import ArtifactError, ConfigError
from ..special import KNOWN_ROLES, AddedTokenFlags, SpecialToken
from . import hf_pipeline, hf_policy
from .hf_added import check_template_tokens, resolve_added_ids
from .hf_schema import validate
from .json_text import dumps_indented

C = TypeVar("C", bound=Component)

ROLE_KEYS = {"bos_token": "bos", "eos_token": "eos", "pad_token": "pad", "unk_token": "unk"}


_fail = hf_pipeline.fail
_unsupported = hf_pipeline.unsupported


def _step_failure(path: Path, exc: StepError) -> ArtifactError:
    return _fail(path, exc.where, exc.problem, exc.fix)


def _typed(path: Path, cls: type[C], node: dict[str, Any], where: str) -> C:
    """The typed component (of ``cls``'s kind) of a validated node, its shape and unknown
    keys kept, so ``to_config()`` gives the file's node back."""
    try:
        component = from_config(cls.KIND, node, where, keep_unknown=True)
    except ConfigError as exc:
        raise ArtifactError(f"{path}: {exc}") from None
    assert isinstance(component, cls)
    return component


def read_pre_tokenizer(path: Path, node: dict[str, Any] | None) -> cp.PreTokenizer:
    """The typed pre-tokenizer chain of a file (an empty ``Sequence`` for none); an
    unsupported member raises ArtifactError naming it."""
    if node is None:
        return cp.Sequence([])
    items = node.get("pretokenizers") or [] if node.get("type") == "Sequence" else [node]
    for i, item in enumerate(items):
        kind = item.get("type")
        if not isinstance(kind, str) or component_class("pre_tokenizer", kind) is None:
            raise _unsupported(path, f"pre_tokenizer[{i}]", kind)
        _typed(path, cp.PreTokenizer, item, f"pre_tokenizer[{i}]")
    return _typed(path, cp.PreTokenizer, node, "pre_tokenizer")


def parse_pre_tokenizer(
    path: Path, node: dict[str, Any] | None, *, byte_level_ok: bool = True
) -> tuple[list[list[Any]], bool]:
    """Engine steps of any model's pre-tokenizer node, and whether the chain ends in
    ByteLevel (:func:`tokenpact.core.split_steps.chain_steps` of its typed chain; a
    problem raises ArtifactError naming the file)."""
    chain = read_pre_tokenizer(path, node)
    try:
        return chain_steps(chain, byte_level_ok=byte_level_ok)
    except StepError as exc:
        raise _step_failure(path, exc) from None


def unigram_vocab(path: Path, model: dict[str, Any]) -> tuple[list[bytes], list[float]]:
    """Pieces (UTF-8) and scores by ID of a Unigram model, validated."""
    vocab = model.get("vocab")
    if not isinstance(vocab, list) or not vocab:
        raise _fail(path, "model.vocab", "missing or empty", "give [[piece, score], ...]")
    pieces: list[bytes] = []
    scores: list[float] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(vocab):
        ok = isinstance(entry, list | tuple) and len(entry) == 2
        if not ok or not isinstance(entry[0], str) or isinstance(entry[1], bool):
            raise _fail(path, f"model.vocab[{i}]", repr(entry)[:80], "give [piece, score]")
        if not isinstance(entry[1], int | float):
            raise _fail(path, f"model.vocab[{i}]", f"score {entry[1]!r}", "give a number")
        if entry[0] in seen:
            raise _fail(
                path,
                "model.vocab",
                f"piece {entry[0]!r} appears twice (IDs {seen[entry[0]]} and {i})",
                "give each piece one entry",
            )
        seen[entry[0]] = i
        pieces.append(entry[0].encode("utf-8"))
        scores.append(float(entry[1]))
    unk = model.get("unk_id")
    if unk is not None and (
        isinstance(unk, bool) or not isinstance(unk, int) or not 0 <= unk < len(pieces)
    ):
        raise _fail(
            path, "model.unk_id", f"{unk!r} is not an ID (0..{len(pieces) - 1})", "fix unk_id"
        )
    return pieces, scores


def parse_post_processor(path: Path, node: dict[str, Any] | None) -> tuple[Template | None, bool]:
    """The post-processor as the typed template a spec holds, and ByteLevel's
    trim_offsets flag."""
    if node is None:
        return None, False
    nodes = node["processors"] if node.get("type") == "Sequence" else [node]
    template = None
    trim = False
    for i, item in enumerate(nodes):
        kind = item.get("type")
        if kind == "ByteLevel":
            trim = bool(item.get("trim_offsets", False))
        elif kind in ("BertProcessing", "RobertaProcessing"):
            template = hf_pipeline.post_processor(path, item)
            # RoBERTa trims spaces out of offsets like ByteLevel(trim_offsets=True).
            trim = trim or (kind == "RobertaProcessing" and bool(item.get("trim_offsets", True)))
        elif kind == "TemplateProcessing":

            def items(seq: list[dict[str, Any]]) -> tuple[TemplateItem, ...]:
                out: list[TemplateItem] = []
                for entry in seq:
                    if "SpecialToken" in entry:
                        e = entry["SpecialToken"]
                        out.append(("special", e["id"], e.get("type_id", 0)))
                    else:
                        e = entry["Sequence"]
                        out.append(("sequence", e["id"], e.get("type_id", 0)))
                return tuple(out)

            for name, spec in (item.get("special_tokens") or {}).items():
                if len(spec.get("ids", [])) != 1:
                    raise _unsupported(path, f"post_processor[{i}] {name}", "multi-ID special")
            template = Template(items(item.get("single", [])), items(item.get("pair", [])))
        else:
            raise _unsupported(path, f"post_processor[{i}]", kind)
    return template, trim


def trim_keeps_prefix_space(node: dict[str, Any] | None) -> bool:
    """The ``add_prefix_space`` flag HF's offset trimming reads: that of the trimming
    post-processor (ByteLevel or RobertaProcessing; true when absent)."""
    if node is None:
        return False
    nodes = node["processors"] if node.get("type") == "Sequence" else [node]
    return any(
        item.get("type") in ("ByteLevel", "RobertaProcessing")
        and bool(item.get("trim_offsets", item.get("type") == "RobertaProcessing"))
        and bool(item.get("add_prefix_space", True))
        for item in nodes
    )


def _roles_from_config(config: dict[str, Any] | None) -> dict[str, str]:
    roles: dict[str, str] = {}
    for key, role in ROLE_KEYS.items():
        value = (config or {}).get(key)
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str) and value not in roles:
            roles[value] = role
    return roles


def read_hf_json(
    path: str | os.PathLike[str], *, config: dict[str, Any] | None = None
) -> tuple[TokenizerSpec, Provenance]:
    """Read a Hugging Face ``tokenizer.json`` (and roles from ``tokenizer_config.json``
    beside it) into its spec and provenance."""
    p = Path(path)
    raw = _read(p, "tokenizer.json", "check the path and the file")
    data = _parse(p, raw, "tokenizer.json", "check the file")
    config_path = None
    config_raw = None
    if config is None:
        side = p.with_name("tokenizer_config.json")
        if side.is_file():
            config_path = str(side)
            config_raw = _read(side, "tokenizer_config.json", "fix or remove it")
            config = _parse(side, config_raw, "tokenizer_config.json", "fix or remove it")
    spec, provenance = hf_document_spec(
        data, label=p, config=config, raw=raw, config_raw=config_raw
    )
    return spec, provenance.with_source(path=str(p), config_path=config_path)


def load_hf_json(
    path: str | os.PathLike[str], *, config: dict[str, Any] | None = None
) -> Tokenizer:
    """Load a Hugging Face ``tokenizer.json`` (and roles from ``tokenizer_config.json``)."""
    spec, provenance = read_hf_json(path, config=config)
    return Tokenizer(spec, provenance=provenance)


def _read(path: Path, what: str, fix: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ArtifactError(f"{path}: cannot read {what} ({exc.strerror or exc}); {fix}") from None


def _parse(path: Path, raw: bytes, what: str, fix: str) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtifactError(f"{path}: cannot read {what} ({exc}); {fix}") from None
    except RecursionError:
        # json's C parser recurses once per nesting level.
        raise ArtifactError(
            f"{path}: {what} is nested too deeply to be a tokenizer file; {fix}"
        ) from None


def load_hf_data(
    data: dict[str, Any],
    *,
    label: str | os.PathLike[str] = "<tokenizer.json>",
    config: dict[str, Any] | None = None,
    raw: bytes | None = None,
    config_raw: bytes | None = None,
    cls: type[Tokenizer] | None = None,
) -> Tokenizer:
    """Build a Tokenizer (or ``cls``, a subclass) from a parsed ``tokenizer.json`` document
    (see :func:`hf_document_spec`)."""
    spec, provenance = hf_document_spec(
        data, label=label, config=config, raw=raw, config_raw=config_raw
    )
    return (cls or Tokenizer)(spec, provenance=provenance)


def hf_document_spec(
    data: dict[str, Any],
    *,
    label: str | os.PathLike[str] = "<tokenizer.json>",
    config: dict[str, Any] | None = None,
    raw: bytes | None = None,
    config_raw: bytes | None = None,
) -> tuple[TokenizerSpec, Provenance]:
    """The spec and provenance of a parsed ``tokenizer.json`` document.

    ``label`` names the document in error messages. ``raw`` is the exact file text (the
    release artifact a save writes back); without it the document is serialized.
    ``config`` is the parsed ``tokenizer_config.json`` (roles, chat template).
    """
    p = Path(label)
    validate(p, data)
    if config is not None and not isinstance(config, dict):
        raise ArtifactError(
            f"{p}: tokenizer_config.json must be a JSON object, found "
            f"{type(config).__name__}; fix or remove it"
        )
    if raw is None:
        raw = document_bytes(data)
    if config is not None and config_raw is None:
        config_raw = document_bytes(config)
    normalizer = data.get("normalizer")
    if normalizer is not None and normalizer.get("type") == "Sequence":
        if not normalizer.get("normalizers"):
            normalizer = None
    hf_pipeline.check_normalizer(p, normalizer)
    model = data.get("model") or {}
    kind = model.get("type")
    added_list = data.get("added_tokens") or []
    resolved = resolve_added_ids(added_list, model, p)
    added_ids = {t["content"]: i for t, i in zip(added_list, resolved, strict=True)}
    chain = read_pre_tokenizer(p, data.get("pre_tokenizer"))
    byte_level = False
    scores: list[float] = []
    if kind == "BPE":
        pieces, records, byte_level = _bpe_parts(p, chain, model, added_ids)
    elif kind in hf_pipeline.WORD_MODELS:
        pieces = hf_pipeline.word_vocab(p, model, added_ids)
        records = []
        _chain_steps(p, chain, byte_level_ok=False)
    elif kind == "Unigram":
        pieces, scores = unigram_vocab(p, model)
        records = []
        _chain_steps(p, chain, byte_level_ok=False)
    else:
        raise _unsupported(p, "model", kind)
    decoder = data.get("decoder")
    hf_pipeline.check_decoder(p, decoder, kind, byte_level=byte_level)
    template, trim = parse_post_processor(p, data.get("post_processor"))
    check_template_tokens(p, template, {t["content"] for t in added_list if t.get("special")})
    roles = file_roles(config, model, data.get("padding"))
    specials: list[tuple[SpecialToken, int]] = []
    added: dict[str, int] = {}
    seen_roles: set[str] = set()
    flags = _added_flags(p, added_list, normalizer is not None)
    seen_specials: set[str] = set()
    for t in added_list:
        token_id = added_ids[t["content"]]
        if t["content"] in seen_specials or t["content"] in added:
            continue  # tokenizers keeps the first entry of a repeated token
        if t.get("special"):
            role = roles.get(t["content"], "reserved")
            if role in seen_roles:
                role = "reserved"
            seen_roles.add(role)
            specials.append((SpecialToken(t["content"], role), token_id))
            seen_specials.add(t["content"])
        else:
            added[t["content"]] = token_id
    spec_model: Model
    if byte_level:
        ignore = bool(model.get("ignore_merges", False))
        spec_model = MergeRecords(pieces, records, ignore)
    else:
        spec_model = HfModel(pieces, records, scores)
    stages = None
    if not (byte_level and normalizer is None):
        # The pipeline engine runs normalizer + pre-tokenizer chain + model + decoder,
        # each the file's node read into its typed component (the model's options only:
        # its tables are the spec's model).
        options = {k: v for k, v in model.items() if k not in TABLES}
        stages = HfStages(
            None if normalizer is None else _typed(p, Normalizer, normalizer, "normalizer"),
            _typed(p, ModelNode, options, "model"),
            None if decoder is None else _typed(p, Decoder, decoder, "decoder"),
            byte_level,
        )
    steps = _chain_steps(p, chain, byte_level_ok=True)
    spec = TokenizerSpec.with_pattern(
        spec_model,
        steps[0][0] if steps and not str(steps[0][1]).startswith("hf:") else "",
        pre_tokenizer=chain,
        special_tokens=specials,
        added_tokens=added,
        added_token_flags=flags,
        post_processor=template,
        stages=stages,
        trim_offsets=trim,
        trim_prefix_space=trim and trim_keeps_prefix_space(data.get("post_processor")),
        padding=hf_policy.padding_from_hf(data.get("padding"), str(p)),
        truncation=hf_policy.truncation_from_hf(data.get("truncation"), str(p)),
    )
    files = {"tokenizer.json": raw}
    if config_raw is not None:
        files["tokenizer_config.json"] = config_raw
    return spec, hf_provenance(spec, model, files=files, config=config, label=str(p))


def document_bytes(data: dict[str, Any]) -> bytes:
    """The file text of a ``tokenizer.json`` (or ``tokenizer_config.json``) document
    that has no source file (built in memory or trained): what a save writes."""
    return dumps_indented(data).encode("utf-8")  # = json.dumps(..., indent=2), faster


def file_roles(
    config: dict[str, Any] | None, model: dict[str, Any], padding: dict[str, Any] | None = None
) -> dict[str, str]:
    """Roles of special tokens by spelling, as a ``tokenizer.json`` declares them: the
    well-known spellings, the model's unknown token and the padding token, then the keys
    of ``tokenizer_config.json`` (which win)."""
    implied = {"unk_token": model.get("unk_token"), "pad_token": (padding or {}).get("pad_token")}
    config = {**{k: v for k, v in implied.items() if v}, **(config or {})}
    return {**KNOWN_ROLES, **_roles_from_config(config)}


def hf_provenance(
    spec: TokenizerSpec,
    model: dict[str, Any],
    *,
    files: dict[str, bytes],
    config: dict[str, Any] | None,
    label: str,
) -> Provenance:
    """The provenance of a ``tokenizer.json`` tokenizer: ``files`` are the exact bytes
    of the release artifact (a later save or export writes these back even if the file
    on disk has changed since); ``model`` is the file's model node."""
    pipeline = spec.engine_document()
    if pipeline is not None:
        pipeline["model"] = spec.hf_model
    return Provenance(
        format="hf_tokenizer_json",
        source={
            "format": "hf_tokenizer_json",
            "path": None,
            "config_path": None,
            "ignore_merges": bool(model.get("ignore_merges", False)),
            # Recorded, never applied: encode is deterministic (docs/PIPELINE.md).
            "dropout": model.get("dropout") if model.get("type") == "BPE" else None,
            "trim_offsets": spec.trim_offsets,
            "trim_prefix_space": spec.trim_prefix_space,
            "chat_template": (config or {}).get("chat_template"),
            "pipeline": pipeline,
        },
        files=files,
        label=label,
    )


FLAG_KEYS = ("single_word", "lstrip", "rstrip", "normalized")


def _added_flags(
    p: Path, added_list: list[dict[str, Any]], has_normalizer: bool
) -> dict[str, AddedTokenFlags]:
    """Matching flags of the added tokens that have any, in Hugging Face's match order.

    HF matches special tokens before the others when two spellings are equal, and a
    missing ``normalized`` means ``not special``. Without a normalizer, ``normalized``
    only matters when some other token is not normalized (HF's two passes then differ
    from one), so an all-normalized file keeps the plain one-pass matcher.
    """
    every: list[tuple[str, AddedTokenFlags]] = []
    for i, t in enumerate(added_list):
        if not isinstance(t, dict) or not isinstance(t.get("content"), str):
            raise _fail(p, f"added_tokens[{i}]", "needs a string 'content'", "fix the entry")
        for key in ("special", *FLAG_KEYS):
            if key in t and not isinstance(t[key], bool):
                raise _fail(
                    p,
                    f"added_tokens[{i}].{key}",
                    f"{key} is {t[key]!r}, not true or false",
                    f"write {key}: true or false",
                )
        special = bool(t.get("special", False))
        values = {key: bool(t.get(key, False)) for key in FLAG_KEYS}
        values["normalized"] = bool(t.get("normalized", not special))
        every.append((t["content"], AddedTokenFlags(**values)))
    mixed = any(not f.normalized for _, f in every)
    if not has_normalizer and not mixed:
        every = [(c, f._replace(normalized=False)) for c, f in every]
    order = sorted(range(len(every)), key=lambda i: not added_list[i].get("special", False))
    return {every[i][0]: every[i][1] for i in order if any(every[i][1])}


def _chain_steps(p: Path, chain: cp.PreTokenizer, *, byte_level_ok: bool) -> list[list[Any]]:
    try:
        return chain_steps(chain, byte_level_ok=byte_level_ok)[0]
    except StepError as exc:
        raise _step_failure(p, exc) from None


def _bpe_parts(
    p: Path, chain: cp.PreTokenizer, model: dict[str, Any], added_ids: dict[str, int]
) -> tuple[list[bytes], list[tuple[int, int, int]], bool]:
    """Pieces by ID, merge records and byte-levelness of a BPE file.

    With ByteLevel in the pre-tokenizer the pieces are bytes over GPT-2's alphabet;
    without it the model is BPE over characters and the pieces are the UTF-8 strings.
    """
    dropout = model.get("dropout")
    if dropout is not None and not (
        isinstance(dropout, int | float) and not isinstance(dropout, bool) and 0 <= dropout <= 1
    ):
        raise _fail(p, "model.dropout", f"{dropout!r}", "give a probability in [0, 1] or null")
    try:
        _, byte_level = chain_steps(chain)
    except StepError as exc:
        raise _step_failure(p, exc) from None
    if not byte_level:
        pieces, records = _char_bpe_tables(p, model, added_ids)
        return pieces, records, False
    for flag in ("continuing_subword_prefix", "end_of_word_suffix", "unk_token"):
        if model.get(flag):
            raise _unsupported(p, f"model.{flag} with ByteLevel", model[flag])
    if model.get("byte_fallback"):
        raise _unsupported(p, "model.byte_fallback with ByteLevel", True)
    vocab_map: dict[str, int] = model.get("vocab") or {}
    try:
        # Rust decodes the byte-level vocabulary and resolves the merges: a Python loop
        # over ~10^5 entries dominated load time.
        pieces, records = _native.hf_byte_level_tables(
            vocab_map, list(model.get("merges") or []), sorted(added_ids.items())
        )
    except ArtifactError as exc:
        raise ArtifactError(f"{p}: {exc}") from None
    return pieces, records, True


def _char_bpe_tables(
    p: Path, model: dict[str, Any], added_ids: dict[str, int]
) -> tuple[list[bytes], list[tuple[int, int, int]]]:
    """UTF-8 pieces by ID and merge records of a BPE over characters.

    A merge ``(a, b)`` makes ``a + b[len(prefix):]`` (HF strips the byte length of
    ``continuing_subword_prefix`` from the right piece, whatever it starts with).
    """
    vocab: dict[str, int] = model.get("vocab") or {}
    if model.get("byte_fallback"):
        missing = [f"<0x{b:02X}>" for b in range(256) if f"<0x{b:02X}>" not in vocab]
        if missing:
            raise _fail(
                p,
                "model.byte_fallback",
                f"true, but {len(missing)} byte pieces are not in the vocabulary "
                f"({', '.join(missing[:3])} ...)",
                "add the 256 pieces <0x00> ... <0xFF> or set byte_fallback to false",
            )
    unk = model.get("unk_token")
    if unk is not None and unk not in vocab:
        raise _fail(p, "model.unk_token", f"{unk!r} is not in the vocabulary", "add it")
    try:
        # Rust resolves the vocabulary and merges (a Python loop dominated load time).
        pieces, records = _native.hf_byte_level_tables(
            vocab,
            list(model.get("merges") or []),
            sorted(added_ids.items()),
            model.get("continuing_subword_prefix") or "",
        )
    except ArtifactError as exc:
        raise ArtifactError(f"{p}: {exc}") from None
    return pieces, records
