"""Replay: retrain from the recorded corpus and flags, and confirm the same tokenizer.

Validate before model training: training twice from the pinned sample
must give identical vocabulary, ranks, IDs and digests. The recorded corpus digest proves
the replay saw the same text stream before anything else is compared.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..special import SpecialToken
from .golden import golden_inputs
from .hashing import ranks_hash, semantic_hash, vocabulary_hash
from .report import Report
from .semantics import config_of

if TYPE_CHECKING:
    from ..core import Tokenizer

# Flags that never change the result: speed and console output, and values recorded for
# readers that the trainer derives itself (the pattern's name follows from the pattern).
NON_RESULT_FLAGS = frozenset({"threads", "progress", "pattern_name"})
_SAMPLE_CASES = 12


def _default_train() -> Callable[..., Any]:
    # The public train_bpe, looked up at call time: the trainers sit above the contract
    # (they build segmentation manifests with it), so this layer cannot import them.
    import tokenpact

    train: Callable[..., Any] = tokenpact.train_bpe  # type: ignore[attr-defined]
    return train


def trainer_kwargs(
    flags: Mapping[str, Any], train: Callable[..., Any]
) -> tuple[dict[str, Any], list[str]]:
    """Return ``(kwargs, unknown)``: recorded flags the trainer accepts, and the rest."""
    params = inspect.signature(train).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    kwargs: dict[str, Any] = {}
    unknown: list[str] = []
    for key, value in flags.items():
        if key in NON_RESULT_FLAGS:
            continue
        if key not in params and not takes_any:
            unknown.append(key)
            continue
        if key == "special_tokens" and isinstance(value, list):
            value = tuple(
                SpecialToken(t["content"], t.get("role", "reserved"))
                if isinstance(t, Mapping)
                else t
                for t in value
            )
        kwargs[key] = value
    return kwargs, sorted(unknown)


def _first_difference(a: Any, b: Any, path: str = "$") -> str | None:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}.{key} present on one side only"
            found = _first_difference(a[key], b[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for index, (x, y) in enumerate(zip(a, b, strict=False)):
            found = _first_difference(x, y, f"{path}[{index}]")
            if found:
                return found
        return None if len(a) == len(b) else f"{path} has {len(a)} vs {len(b)} items"
    return None if a == b else f"{path}: {a!r:.60} vs {b!r:.60}"


def _corpus_digest(tok: Tokenizer) -> Any:
    training = getattr(tok, "training", None) or {}
    corpus = training.get("corpus") or {}
    return corpus.get("digest") if isinstance(corpus, Mapping) else None


def replay(
    tok: Tokenizer,
    texts: Iterable[str],
    *,
    train: Callable[..., Any] | None = None,
) -> Report:
    """Retrain ``tok`` from ``texts`` with its recorded flags and compare everything.

    ``train`` defaults to ``tokenpact.train_bpe``.
    """
    report = Report("replay")
    training = getattr(tok, "training", None)
    flags = training.get("config") if isinstance(training, Mapping) else None
    if not isinstance(flags, Mapping):
        report.failed(
            "replay.training",
            "the tokenizer has no recorded training config; only trained artifacts replay",
        )
        return report
    trainer = train or _default_train()
    kwargs, unknown = trainer_kwargs(flags, trainer)
    report.expect(
        "replay.flags",
        not unknown,
        f"recorded flags {unknown} are not accepted by this trainer version",
    )
    retrained = trainer(texts, **kwargs)
    recorded = _corpus_digest(tok)
    replayed = _corpus_digest(retrained)
    report.expect(
        "replay.corpus_digest",
        recorded is not None and recorded == replayed,
        f"the corpus given hashes to {replayed}, but training recorded {recorded}; "
        "pass exactly the pinned training files in their original order",
    )
    old, new = config_of(tok), config_of(retrained)
    for name, fn in (
        ("vocabulary", vocabulary_hash),
        ("merges", ranks_hash),
        ("semantic_hash", semantic_hash),
    ):
        before, after = fn(old), fn(new)
        report.expect(f"replay.{name}", before == after, f"{before} before, {after} after replay")
    diff = _first_difference(old, new)
    report.expect("replay.config", diff is None, f"configs differ: {diff}")
    texts_sample = [c["text"] for c in golden_inputs(old, long_span_chars=64, long_input_chars=256)]
    sample = [t for t in texts_sample if t is not None][:_SAMPLE_CASES]
    mismatched = [t for t in sample if list(tok.encode(t)) != list(retrained.encode(t))]
    report.expect(
        "replay.ids",
        not mismatched,
        f"{len(mismatched)} sample texts encode differently, e.g. {mismatched[:1]!r:.80}",
    )
    return report
