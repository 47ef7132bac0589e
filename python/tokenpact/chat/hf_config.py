"""Reading a Hugging Face model's chat template and named special tokens from its files.

transformers' rules: in a model directory ``chat_template.jinja`` wins over
``chat_template.json``, which wins over the ``chat_template`` of
``tokenizer_config.json``; the config also names the special tokens every template
receives (``bos_token``, ``eos_token``, ...), as strings or ``AddedToken`` dicts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .errors import ChatTemplateError

# transformers' SPECIAL_TOKENS_ATTRIBUTES: the named tokens passed to every template.
SPECIAL_TOKEN_NAMES = (
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
)

TemplateSource = str | Mapping[str, str] | Sequence[Mapping[str, str]]


def token_string(value: Any) -> str | None:
    """A named special token's spelling (a string or an ``AddedToken`` dict), or None."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("content"), str):
        return str(value["content"])  # an AddedToken dict
    return None


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ChatTemplateError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ChatTemplateError(f"{path} must hold a JSON object")
    return data


def read_template(
    config_or_dir: str | os.PathLike[str] | Mapping[str, Any],
) -> tuple[TemplateSource, dict[str, Any]]:
    """The template source(s) and the named special tokens of a model directory, a
    ``tokenizer_config.json`` or ``*.jinja`` path, or the config as a dict."""
    if isinstance(config_or_dir, Mapping):
        return _from_config(dict(config_or_dir), None, "tokenizer_config")
    path = Path(config_or_dir)
    config: dict[str, Any] = {}
    jinja_source = None
    if path.is_dir():
        if (path / "tokenizer_config.json").is_file():
            config = read_json(path / "tokenizer_config.json")
        if (path / "chat_template.jinja").is_file():
            jinja_source = (path / "chat_template.jinja").read_text(encoding="utf-8")
        elif (path / "chat_template.json").is_file():
            jinja_source = read_json(path / "chat_template.json").get("chat_template")
    elif path.suffix == ".jinja" and path.is_file():
        jinja_source = path.read_text(encoding="utf-8")
        if (path.parent / "tokenizer_config.json").is_file():
            config = read_json(path.parent / "tokenizer_config.json")
    elif path.is_file():
        config = read_json(path)
    else:
        raise ChatTemplateError(f"{path} does not exist; pass a model directory or config")
    return _from_config(config, jinja_source, path.name or "chat_template")


def _from_config(
    config: dict[str, Any], source: str | None, where: str
) -> tuple[TemplateSource, dict[str, Any]]:
    template = source if source is not None else config.get("chat_template")
    if not template:
        raise ChatTemplateError(
            f"{where} has no chat_template (nor a chat_template.jinja beside it); "
            "pass the template source to ChatTemplate(...)"
        )
    return template, {k: config.get(k) for k in SPECIAL_TOKEN_NAMES}
