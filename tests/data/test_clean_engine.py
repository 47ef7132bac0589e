"""The native cleaning engines against their Python references: the language labels,
confidences and script shares, the quality statistics and the drop decisions are the
same, on generated text (every character class the rules read) and on real text."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenpact.data import Document
from tokenpact.data.cleaning import LangIdConfig, QualityConfig, clean
from tokenpact.data.cleaning.pipeline import CleaningPipeline, _run_document, clean_block
from tokenpact.data.cleaning.presets import preset_config

from .py3langid_oracle import py3langid_identifier

PIECES = [
    *"ab Zé ΣςσÅİK\u212a",  # Latin, Greek sigma, Kelvin sign, dotted capital I
    *"#{}.!?。！？…-*•·–",  # symbols, sentence ends, bullets
    *" \t\n\r\x0b\x0c\x1c\x1d\x85\xa0\u2028\u3000",  # every kind of Python whitespace
    *"猫ねネ한ไทยабв\u0301\u1100\u1161",  # CJK, kana, Hangul, Thai, Cyrillic, marks, jamo
    "\ud800",  # a lone surrogate (JSON allows one)
    "...",
    "\n\n",
    "\n \n",
    " the ",
    " The ",
    " (the) ",
    " of ",
    " lorem ipsum ",
    " LOREM IPSUM ",
    " word ",
    " javascript ",
]
TEXT = st.lists(st.sampled_from(PIECES), max_size=120).map("".join)
META = st.sampled_from([{}, {"language": "en"}, {"language": "ja"}, {"language": "th"}])
META = META | st.sampled_from([{"language": "und"}, {"language": "de"}, {"language": "zh"}])
CONFIGS = [
    QualityConfig(),
    QualityConfig.c4(),
    QualityConfig(min_words=3, max_top_ngram_chars=((1, 0.5), (2, 0.2)), stop_words=("σς", "é")),
    QualityConfig.from_json(preset_config("technical", ["quality"])["quality"]),
    QualityConfig(no_space_ngram_scale=None, chars_per_word=()),
]


def same_outcome(a: Any, b: Any) -> None:
    assert (a.text, a.reasons, dict(a.meta), dict(a.counts)) == (
        b.text,
        b.reasons,
        dict(b.meta),
        dict(b.counts),
    )


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(TEXT, META), min_size=1, max_size=6), st.sampled_from(CONFIGS))
def test_quality_engine_equals_the_reference(docs: list[tuple[str, dict]], config: Any) -> None:
    worker = config.prepare()
    texts = [t for t, _ in docs]
    metas = [m for _, m in docs]
    for text, meta, outcome in zip(texts, metas, worker.batch(texts, metas), strict=True):
        same_outcome(outcome, worker.reference(text, meta))
        no_space, _ = worker.policy(text, meta)
        scale = worker._scale(meta, no_space)
        engine = worker._engine().counts(
            [text.encode("utf-8", "surrogatepass")], [no_space], [scale]
        )
        stats = worker.stats_from_counts(engine.tolist()[0], no_space, scale)
        assert stats == worker.stats_reference(text, no_space=no_space, scale=scale)


@settings(max_examples=40, deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=4), st.sampled_from([None, ("en", "de", "ja", "ru")]))
def test_langid_engine_equals_the_reference(texts: list[str], languages: Any) -> None:
    worker = LangIdConfig(languages=languages, max_chars=60).prepare()
    for text, outcome in zip(texts, worker.batch(texts, [{}] * len(texts)), strict=True):
        same_outcome(outcome, worker.reference(text, {}))


def test_engines_equal_the_references_on_real_text(real_docs: list[Document]) -> None:
    docs = real_docs[:120]
    lang = LangIdConfig().prepare()
    quality = QualityConfig().prepare()
    texts = [d.text for d in docs]
    found = lang.batch(texts, [{}] * len(texts))
    metas = [o.meta for o in found]
    ident = py3langid_identifier()
    for text, outcome in zip(texts, found, strict=True):
        same_outcome(outcome, lang.reference(text, {}))
        # py3langid itself (float32, BLAS) picks the same label, nearly the same confidence.
        label, confidence = ident.classify(text[:10_000])
        assert outcome.meta["language"] == label
        assert abs(outcome.meta["language_confidence"] - float(confidence)) < 1e-3
    for text, meta, outcome in zip(texts, metas, quality.batch(texts, metas), strict=True):
        same_outcome(outcome, quality.reference(text, meta))


def test_block_at_a_time_equals_document_at_a_time(real_docs: list[Document]) -> None:
    pipeline = CleaningPipeline([LangIdConfig(keep=("en",)), QualityConfig()])
    workers = pipeline.prepare()
    docs = real_docs[:80]
    by_block = clean_block(workers, docs)
    by_doc = [_run_document(workers, d) for d in docs]
    assert [vars(r) for r in by_block] == [vars(r) for r in by_doc]
    assert any(r.dropped_by == "langid" for r in by_block)
    assert any(r.dropped_by == "quality" for r in by_block)
    # Block size does not change the result.
    one = clean(docs, steps=["langid", "quality"], ray_options={"block_docs": 1})
    many = clean(docs, steps=["langid", "quality"], ray_options={"block_docs": 33})
    assert one.output_records() == many.output_records() and one.report() == many.report()


def test_engine_input_errors_are_typed() -> None:
    import numpy as np

    from tokenpact import _native
    from tokenpact.errors import InvalidInputError

    with pytest.raises(InvalidInputError):
        _native.NativeCharTable(np.zeros(10, dtype=np.uint16))
    worker = QualityConfig().prepare()
    with pytest.raises(InvalidInputError):
        worker._engine().counts([b"a"], [], [1])
    from tokenpact.errors import ArtifactError

    def model(rows: int, state: int, feature: int) -> Any:
        return _native.NativeLangId(
            np.zeros(rows, dtype=np.uint32),
            np.array([state], dtype=np.uint32),
            np.array([feature], dtype=np.int32),
            np.zeros((1, 2), dtype=np.uint16),
            np.zeros(2, dtype=np.float32),
            [0, 1],
            [],
        )

    assert model(256, 0, 0).classify([b"abc"])[0].tolist() == [0]
    for bad in ((255, 0, 0), (256, 1, 0), (256, 0, 5)):  # short row, missing row, feature
        with pytest.raises(ArtifactError, match="language model"):
            model(*bad)


def test_a_worker_loads_the_language_model_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The labels and the native engine come from one load of the model file (a load
    decompresses ~68 MB: seconds per worker)."""
    from tokenpact.data.cleaning import langid, langid_model

    loads: list[int] = []
    real = langid_model._load_arrays

    def counting() -> Any:
        loads.append(1)
        return real()

    monkeypatch.setattr(langid_model, "_load_arrays", counting)
    langid_model._classes.cache_clear()
    langid._model.cache_clear()
    try:
        worker = LangIdConfig(languages=("en", "de")).prepare()
        found = worker.batch(["The cat sat on the mat and looked at the dog."], [{}])
        assert found[0].meta["language"] == "en"
        assert len(loads) == 1
    finally:
        langid_model._classes.cache_clear()
        langid._model.cache_clear()
