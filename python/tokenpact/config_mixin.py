"""The Tokenizer's canonical behaviour description (what the semantic hash covers).

A mixin of :class:`~tokenpact.Tokenizer`, kept apart so each file stays one concept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any


class ConfigMixin:
    """``to_config()`` for :class:`Tokenizer`."""

    _core: Any
    _source: dict[str, Any]
    _semantics: str
    _pattern: str
    _pattern_name: str | None
    _specials: Any
    _post_processor: dict[str, Any] | None
    _pre_tokenizer: dict[str, Any] | None
    _added_flags: dict[str, Any]
    _special_ids: dict[str, int]
    _added: dict[str, int]

    if TYPE_CHECKING:  # provided by Tokenizer

        def vocab(self) -> list[bytes]: ...

    def to_config(self) -> dict[str, Any]:
        """Canonical description of this tokenizer's behaviour (what the semantic hash covers)."""
        from .formats.hf_pipeline import rewrites_text

        model: dict[str, Any]
        if self._semantics == "merge_ranks":
            model = {
                "type": "byte_bpe",
                "semantics": "merge_ranks",
                "merges": [list(m) for m in self._core.merges()],
                "vocab": [bytes(p).hex() for p in self._core.vocab()],
            }
        elif self._semantics == "merge_records":
            vocab = self.vocab()
            records = self._core.merges()
            model = {
                "type": "byte_bpe",
                "semantics": "merge_records",
                "records": [[a, b, self._core.merge_result(a, b)] for a, b in records],
                "vocab": [p.hex() for p in vocab],
            }
        elif self._semantics == "sentencepiece":
            return self._sentencepiece_config()
        elif self._semantics == "hf_pipeline":
            pipeline = self._source["pipeline"]
            model = {
                **pipeline["model"],
                "vocab": [bytes(p).decode("utf-8", "replace") for p in self._core.vocab()],
            }
        else:
            import base64

            model = {
                "type": "byte_bpe",
                "semantics": "tiktoken_ranks",
                "ranks": [base64.b64encode(bytes(p)).decode("ascii") for p in self._core.vocab()],
            }
        pipeline = self._source.get("pipeline") or {}
        extra: dict[str, Any] = {}
        if pipeline.get("normalizer") is not None:
            extra["normalizer"] = pipeline["normalizer"]
        if self._added:
            # Non-special added tokens are behaviour too (recognized with permission);
            # listed only when present, so tokenizers without them keep their hash.
            extra["added_tokens"] = [
                {"id": i, "content": c} for c, i in sorted(self._added.items(), key=lambda x: x[1])
            ]
        if self._added_flags:
            # Only flagged tokens are listed, so tokenizers without flags keep their hash.
            ids = {**self._added, **self._special_ids}
            extra["added_token_flags"] = [
                {"id": ids[content], "content": content, **flags._asdict()}
                for content, flags in self._added_flags.items()
            ]
        return {
            "format": "tokenpact.tokenizer",
            "format_version": 1,
            **extra,
            "pre_tokenizer": {
                "type": "regex_split",
                "name": self._pattern_name,
                "pattern": self._pattern,
            }
            if self._pre_tokenizer is None or not (pipeline or rewrites_text(self._pre_tokenizer))
            else self._pre_tokenizer,
            "model": model,
            "special_tokens": [
                {"id": i, "content": t.content, "role": t.role} for t, i in self._specials
            ],
            "post_processor": dict(self._post_processor) if self._post_processor else None,
            "decoder": pipeline.get("decoder") or {"type": "byte_level"},
        }

    def _sentencepiece_config(self) -> dict[str, Any]:
        from .formats.sentencepiece_model import sentencepiece_config

        return sentencepiece_config(self)  # type: ignore[arg-type]
