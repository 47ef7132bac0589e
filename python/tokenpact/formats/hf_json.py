"""Hugging Face ``tokenizer.json``: load byte-level BPE tokenizers with identical IDs.

Supported today (every unsupported component raises ArtifactError naming its type):
normalizer ``null`` or an empty ``Sequence``; pre-tokenizers ``Split`` (regex or string,
every behaviour, ``invert``), ``ByteLevel`` (with or without its GPT-2 regex) and
``Sequence`` of those; model ``BPE`` over the GPT-2 byte-to-unicode alphabet, with
``ignore_merges``; post-processors ``TemplateProcessing``, ``ByteLevel`` and ``Sequence``;
decoder ``ByteLevel``; added tokens (special ones need ``allowed_special``, as everywhere
in tokenpact; non-special ones are always recognized, as in Hugging Face).
"""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ArtifactError
from ..patterns import GPT2, resolve_pattern
from ..special import SpecialToken

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer

ROLE_KEYS = {"bos_token": "bos", "eos_token": "eos", "pad_token": "pad", "unk_token": "unk"}


@lru_cache(maxsize=1)
def byte_decoder() -> dict[str, int]:
    """GPT-2's reversible map from printable unicode characters back to bytes."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("\u00a1"), ord("\u00ac") + 1))
        + list(range(ord("\u00ae"), ord("\u00ff") + 1))
    )
    chars = printable[:]
    n = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(printable, chars, strict=True)}


@lru_cache(maxsize=1)
def byte_encoder() -> dict[int, str]:
    return {b: c for c, b in byte_decoder().items()}


def _fail(path: Path, where: str, problem: str, fix: str) -> ArtifactError:
    return ArtifactError(f"{path}: {where}: {problem}; {fix}")


def _unsupported(path: Path, where: str, kind: object) -> ArtifactError:
    return _fail(
        path,
        where,
        f"component type {kind!r} is not supported by tokenpact yet",
        "convert the tokenizer to a supported form or file an issue naming this type",
    )


def _split_step(path: Path, where: str, node: dict[str, Any]) -> list[Any]:
    pattern = node.get("pattern") or {}
    if "Regex" in pattern:
        source = pattern["Regex"]
    elif "String" in pattern:
        source = re.escape(pattern["String"])
    else:
        raise _fail(path, where, "Split has no pattern", "give it {'Regex': ...}")
    name, source = resolve_pattern(source)
    behavior = str(node.get("behavior", "Isolated"))
    return [source, name, behavior, bool(node.get("invert", False))]


def parse_pre_tokenizer(path: Path, node: dict[str, Any] | None) -> tuple[list[list[Any]], bool]:
    """Split steps for the engine, and whether the chain ends in ByteLevel."""
    if node is None:
        raise _unsupported(path, "pre_tokenizer", None)
    nodes = node["pretokenizers"] if node.get("type") == "Sequence" else [node]
    steps: list[list[Any]] = []
    byte_level = False
    for i, item in enumerate(nodes):
        kind = item.get("type")
        where = f"pre_tokenizer[{i}]"
        if byte_level:
            raise _fail(path, where, f"{kind} after ByteLevel", "put ByteLevel last")
        if kind == "Split":
            steps.append(_split_step(path, where, item))
        elif kind == "ByteLevel":
            if item.get("add_prefix_space"):
                raise _unsupported(path, where, "ByteLevel(add_prefix_space=true)")
            if item.get("use_regex", True):
                steps.append([GPT2, "gpt2", "Isolated", False])
            byte_level = True
        else:
            raise _unsupported(path, where, kind)
    if not byte_level:
        raise _unsupported(path, "pre_tokenizer", "a chain without ByteLevel")
    return steps, byte_level


def parse_post_processor(path: Path, node: dict[str, Any] | None) -> tuple[dict | None, bool]:
    """Our template form of the post-processor, and ByteLevel's trim_offsets flag."""
    if node is None:
        return None, False
    nodes = node["processors"] if node.get("type") == "Sequence" else [node]
    template = None
    trim = False
    for i, item in enumerate(nodes):
        kind = item.get("type")
        if kind == "ByteLevel":
            trim = bool(item.get("trim_offsets", False))
        elif kind == "TemplateProcessing":

            def items(seq: list[dict[str, Any]]) -> list[list[Any]]:
                out = []
                for entry in seq:
                    if "SpecialToken" in entry:
                        e = entry["SpecialToken"]
                        out.append(["special", e["id"], e.get("type_id", 0)])
                    else:
                        e = entry["Sequence"]
                        out.append(["sequence", e["id"], e.get("type_id", 0)])
                return out

            for name, spec in (item.get("special_tokens") or {}).items():
                if len(spec.get("ids", [])) != 1:
                    raise _unsupported(path, f"post_processor[{i}] {name}", "multi-ID special")
            template = {
                "type": "template",
                "single": items(item.get("single", [])),
                "pair": items(item.get("pair", [])),
            }
        else:
            raise _unsupported(path, f"post_processor[{i}]", kind)
    return template, trim


def _roles_from_config(config: dict[str, Any] | None) -> dict[str, str]:
    roles: dict[str, str] = {}
    for key, role in ROLE_KEYS.items():
        value = (config or {}).get(key)
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str) and value not in roles:
            roles[value] = role
    return roles


def load_hf_json(
    path: str | os.PathLike[str], *, config: dict[str, Any] | None = None
) -> Tokenizer:
    """Load a Hugging Face ``tokenizer.json`` (and roles from ``tokenizer_config.json``)."""
    from .. import _native
    from ..tokenizer import KNOWN_ROLES, Tokenizer

    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtifactError(f"{p}: cannot read tokenizer.json ({exc}); check the file") from None
    config_path = None
    if config is None:
        side = p.with_name("tokenizer_config.json")
        if side.is_file():
            config_path = str(side)
            try:
                config = json.loads(side.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise ArtifactError(
                    f"{side}: cannot read tokenizer_config.json ({exc}); fix or remove it"
                ) from None
    normalizer = data.get("normalizer")
    if normalizer is not None and not (
        normalizer.get("type") == "Sequence" and not normalizer.get("normalizers")
    ):
        raise _unsupported(p, "normalizer", normalizer.get("type"))
    model = data.get("model") or {}
    if model.get("type") != "BPE":
        raise _unsupported(p, "model", model.get("type"))
    for flag in ("continuing_subword_prefix", "end_of_word_suffix", "unk_token", "dropout"):
        if model.get(flag):
            raise _unsupported(p, f"model.{flag}", model[flag])
    if model.get("byte_fallback"):
        raise _unsupported(p, "model.byte_fallback", True)
    decoder = data.get("decoder")
    if decoder is not None and decoder.get("type") != "ByteLevel":
        raise _unsupported(p, "decoder", decoder.get("type"))
    steps, _ = parse_pre_tokenizer(p, data.get("pre_tokenizer"))
    template, trim = parse_post_processor(p, data.get("post_processor"))

    added_list = data.get("added_tokens") or []
    added_ids = {t["content"]: int(t["id"]) for t in added_list}
    vocab_map: dict[str, int] = model.get("vocab") or {}
    try:
        # Rust decodes the byte-level vocabulary and resolves the merges: a Python loop
        # over ~10^5 entries dominated load time.
        pieces, records = _native.hf_byte_level_tables(
            vocab_map, list(model.get("merges") or []), sorted(added_ids.items())
        )
    except ArtifactError as exc:
        raise ArtifactError(f"{p}: {exc}") from None

    roles = {**KNOWN_ROLES, **_roles_from_config(config)}
    specials: list[tuple[SpecialToken, int]] = []
    added: dict[str, int] = {}
    seen_roles: set[str] = set()
    for t in added_list:
        if t.get("special"):
            role = roles.get(t["content"], "reserved")
            if role in seen_roles:
                role = "reserved"
            seen_roles.add(role)
            specials.append((SpecialToken(t["content"], role), int(t["id"])))
        else:
            added[t["content"]] = int(t["id"])
        if t.get("lstrip") or t.get("rstrip") or t.get("single_word"):
            raise _unsupported(p, f"added_tokens[{t['content']!r}]", "lstrip/rstrip/single_word")
    core = _native.BpeCore.from_records(
        pieces,
        records,
        steps[0][0] if steps else "",
        steps[0][1] if steps else None,
        [(t.content, i) for t, i in specials] + sorted(added.items()),
        [tuple(s) for s in steps],
        bool(model.get("ignore_merges", False)),
    )
    tok = Tokenizer(
        core,
        pattern=steps[0][0] if steps else "",
        semantics="merge_records",
        special_tokens=specials,
        post_processor=template,
        added_tokens=added,
        pre_tokenizer={"type": "sequence", "steps": steps},
        source={
            "format": "hf_tokenizer_json",
            "path": str(p),
            "config_path": config_path,
            "ignore_merges": bool(model.get("ignore_merges", False)),
            "trim_offsets": trim,
            "chat_template": (config or {}).get("chat_template"),
        },
    )
    return tok
