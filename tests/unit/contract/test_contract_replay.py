"""Replay (seed 003, "Validate before model training" step 1): retrain and compare."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from contract_helpers import CORPUS

from tokenpact.contract import replay, semantic_hash
from tokenpact.contract.canonical import canonical_bytes
from tokenpact.contract.replay import trainer_kwargs


def test_training_twice_is_identical(tp: ModuleType) -> None:
    first = tp.train_bpe(CORPUS, vocab_size=330, min_frequency=1)
    second = tp.train_bpe(list(reversed(CORPUS)), vocab_size=330, min_frequency=1, threads=1)
    assert canonical_bytes(first.to_config()) == canonical_bytes(second.to_config())
    assert first.training["corpus"]["digest"] == second.training["corpus"]["digest"]


def test_replay_from_the_recorded_flags_matches(tok: Any) -> None:
    report = replay(tok, CORPUS)
    assert report.ok, report.format()
    assert {c.name for c in report} >= {
        "replay.corpus_digest",
        "replay.vocabulary",
        "replay.merges",
        "replay.semantic_hash",
        "replay.config",
        "replay.ids",
    }


def test_replay_on_another_corpus_names_the_corpus_first(tok: Any) -> None:
    report = replay(tok, CORPUS[:3])
    assert "replay.corpus_digest" in report.failed_names
    assert "pinned training files" in report.format()
    assert "replay.semantic_hash" in report.failed_names


def test_untrained_tokenizers_cannot_replay(tp: ModuleType) -> None:
    tok = tp.Tokenizer.from_merges([(97, 98)])
    assert replay(tok, ["ab"]).failed_names == {"replay.training"}


def test_unknown_recorded_flags_are_reported(tok: Any) -> None:
    calls: list[dict[str, Any]] = []

    def old_trainer(texts: Any, *, vocab_size: int, pattern: str = "gpt4") -> Any:
        calls.append({"vocab_size": vocab_size, "pattern": pattern})
        return tok

    report = replay(tok, CORPUS, train=old_trainer)
    assert calls == [{"vocab_size": 320, "pattern": tok.pattern}]
    flags = next(c for c in report.failures if c.name == "replay.flags")
    assert "min_frequency" in flags.message and "special_tokens" in flags.message
    assert report.failed_names == {"replay.flags"}


def test_trainer_kwargs_rebuilds_special_tokens(tp: ModuleType, tok: Any) -> None:
    kwargs, unknown = trainer_kwargs(tok.training["config"], tp.train_bpe)
    assert unknown == []
    assert kwargs["special_tokens"] == tuple(tp.DEFAULT_SPECIAL_TOKENS)
    assert "pattern_name" not in kwargs
    assert semantic_hash(tp.train_bpe(CORPUS, **kwargs)) == semantic_hash(tok)
