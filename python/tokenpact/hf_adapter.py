"""A drop-in for transformers' ``PreTrainedTokenizerFast`` on tokenpact's engine.

Trainer, TRL's ``SFTTrainer``, data collators and ``datasets.map`` call a small part of
a transformers tokenizer: ``__call__`` (padding, truncation, ``max_length``,
``return_tensors``, ``return_offsets_mapping``), ``apply_chat_template`` (``tokenize``,
``return_dict``, ``return_assistant_tokens_mask``), ``pad``, ``decode``,
``batch_decode`` and the special-token attributes. :class:`TransformersTokenizer` has
that surface and runs it on a :class:`~tokenpact.core.Tokenizer` (batches on the native
engine's threads) and a :class:`~tokenpact.chat.ChatTemplate`; every output carries
``tokenizer_hash`` and ``template_hash``.

One difference is deliberate (the trust rule): a control spelling inside text, such as
``"<|im_end|>"`` typed by a user, is encoded as ordinary text; transformers matches it
as the control token. Chat templates still write their own markers as controls.

>>> hf = TransformersTokenizer.from_pretrained("Qwen2.5-0.5B/")          # doctest: +SKIP
>>> batch = hf(["a", "b c"], padding=True, return_tensors="np")         # doctest: +SKIP
>>> hf.apply_chat_template(messages, return_assistant_tokens_mask=True)  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .chat import ChatTemplateError
from .core import Tokenizer
from .errors import ConfigError, InvalidInputError
from .postprocess import apply_single

__all__ = ["BatchEncoding", "TransformersTokenizer"]

# transformers' VERY_LARGE_INTEGER: the model_max_length of a tokenizer without one.
NO_MAX_LENGTH = int(1e30)
_PADDED_WITH: dict[str, Any] = {"input_ids": None, "attention_mask": 0, "token_type_ids": 0}
_PADDED_WITH.update({"special_tokens_mask": 1, "assistant_masks": 0, "offset_mapping": (0, 0)})


class BatchEncoding(dict):  # type: ignore[type-arg]
    """transformers' ``BatchEncoding``: a dict of columns whose keys are also attributes,
    carrying the tokenizer and template hashes of the call."""

    tokenizer_hash: str | None = None
    template_hash: str | None = None

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def to(self, device: Any) -> BatchEncoding:
        """Move torch tensors to ``device`` (as transformers' ``BatchEncoding.to``)."""
        moved = BatchEncoding({k: v.to(device) if hasattr(v, "to") else v for k, v in self.items()})
        moved.tokenizer_hash, moved.template_hash = self.tokenizer_hash, self.template_hash
        return moved


def _clean_up(text: str) -> str:
    """transformers' ``clean_up_tokenization`` (spaces before punctuation, contractions)."""
    for old, new in (
        (" .", "."),
        (" ?", "?"),
        (" !", "!"),
        (" ,", ","),
        (" ' ", "'"),
        (" n't", "n't"),
        (" 'm", "'m"),
        (" 's", "'s"),
        (" 've", "'ve"),
        (" 're", "'re"),
    ):
        text = text.replace(old, new)
    return text


def _tensors(columns: dict[str, Any], kind: str | None) -> dict[str, Any]:
    if kind is None:
        return columns
    out: dict[str, Any] = {}
    for key, value in columns.items():
        try:
            array = np.asarray(value, dtype=np.int64)
        except ValueError:
            raise InvalidInputError(
                f"cannot make a tensor of {key!r}: its sequences have different lengths; "
                "pass padding=True (or padding='max_length' with max_length=...)"
            ) from None
        if kind == "np":
            out[key] = array
        elif kind == "pt":
            try:
                import torch
            except ImportError:
                raise ConfigError(
                    "return_tensors='pt' needs torch (pip install torch); "
                    "return_tensors='np' gives numpy arrays"
                ) from None
            out[key] = torch.from_numpy(array)
        else:
            raise ConfigError(f"return_tensors must be None, 'np' or 'pt', not {kind!r}")
    return out


class TransformersTokenizer:
    """``PreTrainedTokenizerFast``'s call surface over a tokenpact Tokenizer and
    ChatTemplate (see the module docstring)."""

    model_input_names = ["input_ids", "attention_mask"]
    is_fast = True

    def __init__(
        self,
        tokenizer: Tokenizer,
        chat_template: Any = "auto",
        *,
        model_max_length: int | None = None,
        padding_side: str = "right",
        truncation_side: str = "right",
        clean_up_tokenization_spaces: bool = False,
        name_or_path: str = "",
        special_tokens: Mapping[str, str | None] | None = None,
    ) -> None:
        """``chat_template``: a :class:`~tokenpact.chat.ChatTemplate`, a Jinja source,
        None, or ``"auto"`` (the template stored beside the tokenizer, if any).
        ``special_tokens`` maps ``"bos_token"``, ``"eos_token"``, ``"pad_token"``,
        ``"unk_token"`` to a token (one token may hold several, as EOS often pads);
        the tokenizer's roles fill the rest."""
        if not isinstance(tokenizer, Tokenizer):
            raise ConfigError(
                "TransformersTokenizer wraps a tokenpact Tokenizer; load one with "
                "tp.Tokenizer.from_pretrained(dir) or use TransformersTokenizer.from_pretrained"
            )
        self.tokenizer = tokenizer
        self._template = self._make_template(chat_template)
        self.model_max_length = NO_MAX_LENGTH if model_max_length is None else model_max_length
        self.padding_side = self._side(padding_side, "padding_side")
        self.truncation_side = self._side(truncation_side, "truncation_side")
        self.clean_up_tokenization_spaces = clean_up_tokenization_spaces
        self.name_or_path = name_or_path
        self._named: dict[str, int | None] = {}
        for key, token in (special_tokens or {}).items():
            if key not in ("bos_token", "eos_token", "pad_token", "unk_token"):
                raise ConfigError(f"special_tokens: unknown key {key!r} (bos/eos/pad/unk_token)")
            self._named[key] = None if token is None else self._token_id_of(token)
        post = tokenizer.spec.post_processor
        specials = tokenizer.special_tokens
        marked = apply_single(post, specials, [-1])
        self._prefix = marked.index(-1)
        self._n_added = len(marked) - 1
        self._post_applies = post is not None
        # transformers skips the clean-up for BPE models (it would strip real spaces).
        stages = tokenizer.spec.stages
        model_type = stages.model.TYPE if stages is not None else None
        self._bpe = tokenizer.spec.kind.byte_level or model_type == "BPE"

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_pretrained(
        cls, name_or_path: str | os.PathLike[str], **kwargs: Any
    ) -> TransformersTokenizer:
        """Load a model directory (or a cached Hub ID) as ``AutoTokenizer`` would:
        ``tokenizer.json``, and from ``tokenizer_config.json`` the special tokens, chat
        template, ``model_max_length``, ``padding_side`` and
        ``clean_up_tokenization_spaces``; keyword arguments override the config."""
        tok = Tokenizer.from_pretrained(name_or_path)
        config_path = tok.source.get("config_path")
        config: dict[str, Any] = {}
        if isinstance(config_path, str) and Path(config_path).is_file():
            config = json.loads(Path(config_path).read_text(encoding="utf-8"))
        options: dict[str, Any] = {
            "model_max_length": config.get("model_max_length"),
            "padding_side": config.get("padding_side", "right"),
            "truncation_side": config.get("truncation_side", "right"),
            "clean_up_tokenization_spaces": bool(config.get("clean_up_tokenization_spaces")),
            "name_or_path": os.fspath(name_or_path),
        }
        named = {}
        for key in ("bos_token", "eos_token", "pad_token", "unk_token"):
            if key in config:
                value = config[key]
                named[key] = value.get("content") if isinstance(value, dict) else value
        options["special_tokens"] = named
        if isinstance(options["model_max_length"], float):
            options["model_max_length"] = int(options["model_max_length"])
        options.update(kwargs)
        return cls(tok, **options)

    def _make_template(self, chat_template: Any) -> Any:
        from .chat import ChatTemplate

        if chat_template is None:
            return None
        if isinstance(chat_template, ChatTemplate):
            return chat_template
        if isinstance(chat_template, str) and chat_template != "auto":
            return ChatTemplate(chat_template, self.tokenizer)
        if chat_template != "auto":
            raise ConfigError(
                "chat_template must be a ChatTemplate, a Jinja source, None or 'auto'"
            )
        try:
            return ChatTemplate.from_tokenizer(self.tokenizer)
        except ChatTemplateError:
            return None  # no template stored beside the tokenizer

    @staticmethod
    def _side(value: str, name: str) -> str:
        if value not in ("left", "right"):
            raise ConfigError(f"{name} must be 'left' or 'right', not {value!r}")
        return value

    # ------------------------------------------------------------------ identity
    @property
    def tokenizer_hash(self) -> str:
        """The semantic hash of the tokenizer every output comes from."""
        return self.tokenizer.semantic_hash

    @property
    def template_hash(self) -> str | None:
        """The chat template's hash (None without a template)."""
        return None if self._template is None else str(self._template.template_hash)

    @property
    def chat_template(self) -> str | None:
        """The chat template's Jinja source (None without one)."""
        return None if self._template is None else str(self._template.source)

    def _batch(self, columns: dict[str, Any], tensors: str | None, template: bool) -> BatchEncoding:
        out = BatchEncoding(_tensors(columns, tensors))
        out.tokenizer_hash = self.tokenizer_hash
        out.template_hash = self.template_hash if template else None
        return out

    # ------------------------------------------------------------------ vocabulary
    def __len__(self) -> int:
        return len(self.tokenizer)

    @property
    def vocab_size(self) -> int:
        """transformers' ``vocab_size``: the model's vocabulary, added tokens excluded."""
        return self.tokenizer.get_vocab_size(with_added_tokens=False)

    def get_vocab(self) -> dict[str, int]:
        return self.tokenizer.get_vocab()

    def convert_ids_to_tokens(self, ids: Any, skip_special_tokens: bool = False) -> Any:
        return self.tokenizer.convert_ids_to_tokens(_id_list(ids), skip_special_tokens)

    def convert_tokens_to_ids(self, tokens: Any) -> Any:
        return self.tokenizer.convert_tokens_to_ids(tokens)

    def tokenize(self, text: str, add_special_tokens: bool = False) -> list[str]:
        ids = self.tokenizer.encode(text, add_special_tokens=add_special_tokens)
        return list(self.tokenizer.convert_ids_to_tokens(ids))

    # ------------------------------------------------------------------ special tokens
    def _role_token(self, token_id: int | None) -> str | None:
        return None if token_id is None else self.tokenizer.id_to_token(token_id)

    def _token_id_of(self, token: str) -> int:
        found = self.tokenizer.token_to_id(token)
        if found is None:
            raise ConfigError(f"{token!r} is not a token of this tokenizer; pick an existing one")
        return found

    def _named_id(self, key: str, by_role: int | None) -> int | None:
        return self._named[key] if key in self._named else by_role

    @property
    def bos_token_id(self) -> int | None:
        return self._named_id("bos_token", self.tokenizer.bos_token_id)

    @property
    def eos_token_id(self) -> int | None:
        return self._named_id("eos_token", self.tokenizer.eos_token_id)

    @property
    def unk_token_id(self) -> int | None:
        return self._named_id("unk_token", self.tokenizer.unk_token_id)

    @property
    def pad_token_id(self) -> int | None:
        return self._named_id("pad_token", self.tokenizer.pad_token_id)

    @property
    def bos_token(self) -> str | None:
        return self._role_token(self.bos_token_id)

    @property
    def eos_token(self) -> str | None:
        return self._role_token(self.eos_token_id)

    @property
    def unk_token(self) -> str | None:
        return self._role_token(self.unk_token_id)

    @property
    def pad_token(self) -> str | None:
        return self._role_token(self.pad_token_id)

    @pad_token.setter
    def pad_token(self, token: str | None) -> None:
        """``tok.pad_token = tok.eos_token``, as trainers do for models without PAD."""
        self._named["pad_token"] = None if token is None else self._token_id_of(token)

    @property
    def all_special_tokens(self) -> list[str]:
        return list(self.tokenizer.special_tokens)

    @property
    def all_special_ids(self) -> list[int]:
        return list(self.tokenizer.special_tokens.values())

    # ------------------------------------------------------------------ encoding
    def __call__(
        self,
        text: str | Sequence[str],
        text_pair: Any = None,
        *,
        add_special_tokens: bool = True,
        padding: bool | str = False,
        truncation: bool | str | None = None,
        max_length: int | None = None,
        pad_to_multiple_of: int | None = None,
        padding_side: str | None = None,
        return_tensors: str | None = None,
        return_token_type_ids: bool | None = None,
        return_attention_mask: bool | None = None,
        return_special_tokens_mask: bool = False,
        return_offsets_mapping: bool = False,
        return_length: bool = False,
        **kwargs: Any,
    ) -> BatchEncoding:
        """Encode one text or a batch, as ``PreTrainedTokenizerFast.__call__``."""
        if text_pair is not None or kwargs.get("text_target") is not None:
            raise ConfigError(
                "text pairs and targets are not supported by this adapter; encode each "
                "side separately, or use Tokenizer.encode_structured(text, pair)"
            )
        single = isinstance(text, str)
        if not single and not (
            isinstance(text, Sequence) and all(isinstance(t, str) for t in text)
        ):
            raise InvalidInputError("text must be a str or a list of str")
        texts: list[str] = [text] if isinstance(text, str) else [str(t) for t in text]
        limit = self._truncation_limit(truncation, max_length)
        added = self._n_added if add_special_tokens else 0
        offsets: list[list[tuple[int, int]]] | None = None
        if return_offsets_mapping:
            contents, offsets = self._with_offsets(texts)
        else:
            contents = self.tokenizer.encode_batch(texts)
        ids_out: list[list[int]] = []
        special_masks: list[list[int]] = []
        offsets_out: list[list[tuple[int, int]]] = []
        for i, content in enumerate(contents):
            spans = offsets[i] if offsets is not None else None
            if limit is not None and len(content) + added > limit:
                keep = max(limit - added, 0)
                if self.truncation_side == "right":
                    content = content[:keep]
                    spans = spans[:keep] if spans is not None else None
                else:
                    content = content[len(content) - keep :]
                    spans = spans[len(spans) - keep :] if spans is not None else None
            if add_special_tokens and self._post_applies:
                ids = apply_single(
                    self.tokenizer.spec.post_processor, self.tokenizer.special_tokens, content
                )
                extra_after = len(ids) - len(content) - self._prefix
                mask = [1] * self._prefix + [0] * len(content) + [1] * extra_after
                if spans is not None:
                    spans = [(0, 0)] * self._prefix + spans + [(0, 0)] * extra_after
            else:
                ids, mask = content, [0] * len(content)
            ids_out.append(ids)
            special_masks.append(mask)
            if spans is not None:
                offsets_out.append(spans)
        columns: dict[str, Any] = {"input_ids": ids_out}
        if return_token_type_ids:
            columns["token_type_ids"] = [[0] * len(ids) for ids in ids_out]
        if return_attention_mask is not False:
            columns["attention_mask"] = [[1] * len(ids) for ids in ids_out]
        if return_special_tokens_mask:
            columns["special_tokens_mask"] = special_masks
        if return_offsets_mapping:
            columns["offset_mapping"] = offsets_out
        columns = self._pad_columns(columns, padding, max_length, pad_to_multiple_of, padding_side)
        if return_length:
            columns["length"] = [len(ids) for ids in columns["input_ids"]]
        if single and return_tensors is None:
            columns = {k: v[0] for k, v in columns.items()}
        return self._batch(columns, return_tensors, template=False)

    def _with_offsets(
        self, texts: list[str]
    ) -> tuple[list[list[int]], list[list[tuple[int, int]]]]:
        ids: list[list[int]] = []
        spans: list[list[tuple[int, int]]] = []
        for text in texts:
            # transformers' calls apply only their own padding/truncation arguments.
            enc = self.tokenizer.encode_structured(text, truncation=False, padding=False)
            ids.append(list(enc.ids))
            spans.append([tuple(s) for s in enc.offsets])  # type: ignore[misc]
        return ids, spans

    def _truncation_limit(
        self, truncation: bool | str | None, max_length: int | None
    ) -> int | None:
        if truncation in (None, False, "do_not_truncate"):
            return None
        if truncation not in (True, "longest_first", "only_first"):
            raise ConfigError(
                f"truncation={truncation!r} is not supported; pass True, 'longest_first' "
                "or 'only_first' (single sequences), or False"
            )
        return self.model_max_length if max_length is None else max_length

    def encode(self, text: str, add_special_tokens: bool = True, **kwargs: Any) -> list[int]:
        """transformers' ``encode``: the ``input_ids`` of one text."""
        result = self(text, add_special_tokens=add_special_tokens, **kwargs)
        ids: list[int] = result["input_ids"]
        return ids

    # ------------------------------------------------------------------ padding
    def _pad_columns(
        self,
        columns: dict[str, Any],
        padding: bool | str,
        max_length: int | None,
        pad_to_multiple_of: int | None,
        padding_side: str | None,
    ) -> dict[str, Any]:
        if padding in (False, "do_not_pad", None):
            return columns
        if padding in (True, "longest"):
            target = max((len(ids) for ids in columns["input_ids"]), default=0)
        elif padding == "max_length":
            target = self.model_max_length if max_length is None else max_length
            if target >= NO_MAX_LENGTH:
                raise ConfigError(
                    "padding='max_length' needs max_length=... (this tokenizer has no "
                    "model_max_length); or pass padding=True to pad to the longest"
                )
        else:
            raise ConfigError(
                f"padding must be True, False, 'longest' or 'max_length', not {padding!r}"
            )
        if pad_to_multiple_of:
            target = -(-target // pad_to_multiple_of) * pad_to_multiple_of
        side = self._side(padding_side or self.padding_side, "padding_side")
        pad_id = self.pad_token_id
        if pad_id is None and any(len(ids) < target for ids in columns["input_ids"]):
            raise ConfigError(
                "this tokenizer has no pad token; set one first (tok.pad_token = tok.eos_token, "
                "as transformers asks) or load a tokenizer whose config names a pad_token"
            )
        out: dict[str, Any] = {}
        for key, rows in columns.items():
            if key not in _PADDED_WITH:
                out[key] = rows
                continue
            fill = pad_id if key == "input_ids" else _PADDED_WITH[key]
            padded = []
            for row in rows:
                row = list(row)
                gap = [fill] * (target - len(row))
                padded.append(row + gap if side == "right" else gap + row)
            out[key] = padded
        return out

    def pad(
        self,
        encoded_inputs: Any,
        padding: bool | str = True,
        max_length: int | None = None,
        pad_to_multiple_of: int | None = None,
        padding_side: str | None = None,
        return_attention_mask: bool | None = None,
        return_tensors: str | None = None,
        verbose: bool = True,
    ) -> BatchEncoding:
        """transformers' ``pad``: a batch (dict of lists) or a list of features (dicts),
        as data collators pass it."""
        if (
            isinstance(encoded_inputs, Sequence)
            and encoded_inputs
            and isinstance(encoded_inputs[0], Mapping)
        ):
            keys = list(encoded_inputs[0])
            columns = {k: [_id_list(f[k]) for f in encoded_inputs] for k in keys}
        elif isinstance(encoded_inputs, Mapping):
            columns = {k: v for k, v in encoded_inputs.items()}
            if columns and not isinstance(_first(columns["input_ids"]), (list, tuple, np.ndarray)):
                columns = {k: [_id_list(v)] for k, v in columns.items()}
                single = True
            else:
                columns = {k: [_id_list(r) for r in v] for k, v in columns.items()}
                single = False
            if single:
                padded = self._pad_columns(
                    columns, padding, max_length, pad_to_multiple_of, padding_side
                )
                padded = {k: v[0] for k, v in padded.items()}
                return self._batch(padded, return_tensors, template=False)
        else:
            raise InvalidInputError(
                "pad() takes a dict of columns or a list of dicts with 'input_ids'"
            )
        if "input_ids" not in columns:
            raise InvalidInputError("pad() needs an 'input_ids' column")
        if return_attention_mask is not False and "attention_mask" not in columns:
            columns["attention_mask"] = [[1] * len(ids) for ids in columns["input_ids"]]
        padded = self._pad_columns(columns, padding, max_length, pad_to_multiple_of, padding_side)
        return self._batch(padded, return_tensors, template=False)

    # ------------------------------------------------------------------ decoding
    def decode(
        self,
        token_ids: Any,
        skip_special_tokens: bool = False,
        clean_up_tokenization_spaces: bool | None = None,
        **kwargs: Any,
    ) -> str:
        """transformers' ``decode`` (invalid UTF-8 becomes U+FFFD, as there)."""
        ids = _id_list(token_ids)
        if ids and isinstance(ids[0], list):
            raise InvalidInputError("decode() takes one sequence of IDs; use batch_decode()")
        text = self.tokenizer.decode(ids, errors="replace", skip_special_tokens=skip_special_tokens)
        clean = (
            self.clean_up_tokenization_spaces
            if clean_up_tokenization_spaces is None
            else clean_up_tokenization_spaces
        )
        return _clean_up(text) if clean and not self._bpe else text

    def batch_decode(
        self,
        sequences: Any,
        skip_special_tokens: bool = False,
        clean_up_tokenization_spaces: bool | None = None,
        **kwargs: Any,
    ) -> list[str]:
        return [
            self.decode(ids, skip_special_tokens, clean_up_tokenization_spaces)
            for ids in _id_list(sequences)
        ]

    # ------------------------------------------------------------------ chat
    def apply_chat_template(
        self,
        conversation: Any,
        tools: Sequence[Any] | None = None,
        documents: Sequence[Any] | None = None,
        chat_template: str | None = None,
        add_generation_prompt: bool = False,
        continue_final_message: bool | str = False,
        tokenize: bool = True,
        padding: bool | str = False,
        truncation: bool = False,
        max_length: int | None = None,
        return_tensors: str | None = None,
        return_dict: bool = True,
        return_assistant_tokens_mask: bool = False,
        tokenizer_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        """transformers' ``apply_chat_template`` on tokenpact's renderer: control IDs
        come only from the template; ``assistant_masks`` from ``{% generation %}``
        blocks, or else from the assistant messages' spans."""
        template = self._template if chat_template is None else self._make_template(chat_template)
        if template is None:
            raise ChatTemplateError(
                "this tokenizer has no chat template: add chat_template to its "
                "tokenizer_config.json (or a chat_template.jinja beside it), or pass "
                "chat_template=... to apply_chat_template or TransformersTokenizer"
            )
        batched = bool(conversation) and isinstance(conversation[0], (list, tuple))
        convs = list(conversation) if batched else [conversation]
        options = dict(
            add_generation_prompt=add_generation_prompt,
            continue_final_message=continue_final_message,
            tools=tools,
            documents=documents,
            **kwargs,
        )
        if not tokenize:
            texts = [template.render_text(c, **options).text for c in convs]
            return texts if batched else texts[0]
        rendered = (
            template.render_batch(convs, **options)
            if batched
            else [template.render(convs[0], **options)]
        )
        columns: dict[str, Any] = {"input_ids": [list(c.input_ids) for c in rendered]}
        columns["attention_mask"] = [[1] * len(ids) for ids in columns["input_ids"]]
        if return_assistant_tokens_mask:
            columns["assistant_masks"] = [list(c.assistant_mask) for c in rendered]
        limit = self._truncation_limit(truncation, max_length)
        if limit is not None:
            cut = (
                (lambda r: r[:limit])
                if self.truncation_side == "right"
                else (lambda r: r[-limit:] if limit else [])
            )
            columns = {k: [cut(r) for r in v] for k, v in columns.items()}
        columns = self._pad_columns(columns, padding, max_length, None, None)
        if not batched and return_tensors is None:
            columns = {k: v[0] for k, v in columns.items()}
        if not return_dict:
            out = _tensors({"input_ids": columns["input_ids"]}, return_tensors)
            return out["input_ids"]
        return self._batch(columns, return_tensors, template=True)

    # ------------------------------------------------------------------ files
    def save_pretrained(self, directory: str | os.PathLike[str], **kwargs: Any) -> tuple[str, ...]:
        """Write ``tokenizer.json`` and ``tokenizer_config.json`` (``AutoTokenizer``
        loads them with identical IDs); returns the files written, as transformers."""
        folder = self.tokenizer.save_pretrained(directory)
        return tuple(str(p) for p in sorted(folder.iterdir()))

    def __repr__(self) -> str:
        return (
            f"TransformersTokenizer(vocab={len(self)}, model_max_length={self.model_max_length}, "
            f"chat_template={'yes' if self._template is not None else 'no'}, "
            f"tokenizer_hash={self.tokenizer_hash[:12]})"
        )


def _first(value: Any) -> Any:
    return value[0] if len(value) else None


def _id_list(value: Any) -> Any:
    """Plain ints (or lists of lists) from lists, numpy arrays or torch tensors."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [
            _id_list(v) if isinstance(v, (list, tuple)) or hasattr(v, "tolist") else v
            for v in value
        ]
    return value
