"""Unigram language-model training (Kudo 2018).

Example::

    tok = tp.train_unigram(texts, vocab_size=8000)
    tok.encode("New York"), tok.sample("New York", alpha=0.5, key=tp.SampleKey(seed=1))
"""

from __future__ import annotations

import lzma
from collections.abc import Iterable, Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from .. import _native
from ..errors import ConfigError, LossyWhitespaceWarning, TrainingError, warn_at_caller
from ..formats.sentencepiece_model import (
    BYTE,
    CONTROL,
    NORMAL,
    UNKNOWN,
    NormalizerSpec,
    Piece,
    SentencePieceModel,
    TrainerSpec,
    model_spec,
)
from ..formats.sentencepiece_write import UnigramSettings, encode_model, float32
from ..special import SpecialToken
from ._words import (
    check_fraction,
    check_int,
    count_words,
    special_config,
    specials_with_unk,
)
from .trained import UnigramTokenizer

UNIGRAM_SPECIALS = (
    SpecialToken("<unk>", "unk"),
    SpecialToken("<s>", "bos"),
    SpecialToken("</s>", "eos"),
)
M_STEPS = ("digamma", "simple")
# SentencePiece's built-in rules, as its precompiled charsmaps (scripts/gen_sp_charsmaps.py).
NORMALIZATIONS = ("identity", "nmt_nfkc", "nfkc")
RULES_DIR = Path(__file__).resolve().parent / "sp_rules"
# Names the trained model in errors (what from_model_bytes calls it too).
MODEL_LABEL = "<trained unigram model>"


@cache
def charsmap(name: str) -> bytes:
    """SentencePiece's precompiled charsmap of rule ``name`` (empty for ``identity``)."""
    if name == "identity":
        return b""
    return lzma.decompress((RULES_DIR / f"{name}.charsmap.xz").read_bytes())


def train_unigram(
    texts: Iterable[str],
    *,
    vocab_size: int,
    special_tokens: Iterable[SpecialToken | str] = UNIGRAM_SPECIALS,
    byte_fallback: bool = False,
    character_coverage: float = 0.9995,
    max_piece_length: int = 16,
    seed_size: int = 1_000_000,
    shrinking_factor: float = 0.75,
    em_sub_iterations: int = 2,
    m_step: str = "digamma",
    normalization: str = "identity",
    remove_extra_whitespaces: bool | None = None,
    split_by_unicode_script: bool = True,
    threads: int | None = None,
) -> UnigramTokenizer:
    """Train a Unigram LM tokenizer; ``vocab_size`` counts specials and byte pieces.

    Text is normalized by the SentencePiece normalizer the written ``.model`` carries
    (``normalization``: ``"identity"``, ``"nmt_nfkc"`` or ``"nfkc"``, SentencePiece's rule
    tables; ``remove_extra_whitespaces``: strip and collapse runs of spaces, as
    SentencePiece does by default, ``False`` keeps text exactly; left unset it is
    SentencePiece's ``True`` and a ``LossyWhitespaceWarning`` counts the training texts
    it changes, whose round trip is then lossy), spaces become ``▁``, one
    ``▁`` is prepended and a word starts at every ``▁``; training and encoding see the same
    normalized text. Seeds: the characters covering ``character_coverage`` of the corpus
    (always kept) plus the ``seed_size`` best right-branching substrings (count x length, up
    to ``max_piece_length`` characters, seen at least twice); with
    ``split_by_unicode_script`` (SentencePiece's default) no piece mixes Unicode scripts:
    punctuation and digits (Common) never join letters, combining marks count as the
    letter before them, kana as Han (``tokenpact.reference.piece_scripts``). EM uses
    exact forward-backward marginals; ``m_step="digamma"`` is SentencePiece's update
    (drops pieces expected under 0.5 times), ``"simple"`` the maximum-likelihood
    p = c / sum c. Each round runs ``em_sub_iterations`` EM steps, then keeps
    ``max(target, shrinking_factor x size)`` pieces by estimated loss increase. IDs:
    specials first, then ``<0x00>..<0xFF>`` when ``byte_fallback``, then pieces by
    descending probability. The result depends on neither ``threads`` nor document order.
    The trainer draws no random numbers.

    The result is a SentencePiece-backed ``Tokenizer`` whose spec is the typed
    SentencePiece model (scores as float32, exactly what its ``.model`` bytes parse back
    to): ``save`` writes ``tokenizer.model`` + ``training.json``,
    ``export_sentencepiece`` / ``export_hf`` the peer files (docs/TRAINERS.md).
    """
    specials = specials_with_unk(special_tokens)
    check_int("vocab_size", vocab_size, 1)
    check_fraction("character_coverage", character_coverage, 0.0, 1.0)
    check_int("max_piece_length", max_piece_length, 1)
    check_int("seed_size", seed_size, 1)
    shrinking = check_fraction("shrinking_factor", shrinking_factor, 0.0, 1.0)
    check_int("em_sub_iterations", em_sub_iterations, 1)
    if m_step not in M_STEPS:
        raise ConfigError(f"unknown m_step {m_step!r}; use one of {M_STEPS}")
    if normalization not in NORMALIZATIONS:
        raise ConfigError(
            f"unknown normalization {normalization!r}; use one of {NORMALIZATIONS} "
            "(SentencePiece's rule names)"
        )
    watch = remove_extra_whitespaces is None
    if watch:
        remove_extra_whitespaces = True  # SentencePiece's default, with a warning
        texts, lossy = _watch_whitespace(texts)
    for name, flag in (
        ("remove_extra_whitespaces", remove_extra_whitespaces),
        ("split_by_unicode_script", split_by_unicode_script),
    ):
        if not isinstance(flag, bool):
            raise ConfigError(f"{name} must be True or False, got {flag!r}")
    reserved = len(specials) + (256 if byte_fallback else 0)
    if vocab_size <= reserved:
        raise TrainingError(
            f"vocab_size={vocab_size} leaves no room for pieces after {len(specials)} special "
            f"tokens{' and 256 byte pieces' if byte_fallback else ''}; "
            f"use vocab_size > {reserved}"
        )
    config = {
        "vocab_size": vocab_size,
        "special_tokens": special_config(specials),
        "byte_fallback": byte_fallback,
        "character_coverage": character_coverage,
        "max_piece_length": max_piece_length,
        "seed_size": seed_size,
        "shrinking_factor": shrinking,
        "em_sub_iterations": em_sub_iterations,
        "m_step": m_step,
        "normalization": normalization,
        "remove_extra_whitespaces": remove_extra_whitespaces,
        "split_by_unicode_script": split_by_unicode_script,
        "split": "metaspace",
    }
    spec = normalizer_spec(config)
    counter, corpus = count_words(
        texts,
        split="normalized",
        lowercase=False,
        threads=threads,
        normalizer=(spec.precompiled_charsmap, True, spec.remove_extra_whitespaces, True, False),
    )
    if watch and lossy.count:
        warn_at_caller(
            f"remove_extra_whitespaces defaults to SentencePiece's True, which strips and "
            f"collapses runs of spaces: {lossy.count} of {lossy.seen} training texts"
            f"{' checked' if lossy.sampled else ''} will not round-trip "
            "(decode(encode(text)) != text). For LLM data pass "
            "remove_extra_whitespaces=False (tokenpact train --keep-extra-whitespaces); "
            "pass True to keep SentencePiece's behaviour without this warning",
            LossyWhitespaceWarning,
        )
    learned, info = _native.train_unigram(
        counter,
        vocab_size - reserved,
        max_piece_length,
        seed_size,
        character_coverage,
        shrinking,
        em_sub_iterations,
        m_step,
        threads,
        split_by_unicode_script,
    )
    # Scores are float32, as the .model stores them: the trained model and a reloaded one
    # are the same typed model (the spec is built from it, the bytes are only written).
    model = trained_model(specials, learned, byte_fallback=byte_fallback, config=config)
    data = model_bytes(model, config)
    training = {
        "algorithm": "unigram",
        "config": config,
        "seed": None,
        "corpus": corpus,
        "stop_reason": info["stop_reason"],
        "required_chars": info["required_chars"],
        "dropped_chars": info["dropped_chars"],
        "seed_pieces": info["seed_pieces"],
        "prune_rounds": info["rounds"],
        "em_trace": [list(x) for x in info["em_trace"]],
        "sampling_rng": _native.RNG_NAME,
    }
    tokenizer_spec, provenance = model_spec(model, data)
    return UnigramTokenizer(tokenizer_spec, provenance=provenance.with_training(training))


def trained_model(
    specials: Sequence[SpecialToken],
    learned: Iterable[tuple[str, float]],
    *,
    byte_fallback: bool,
    config: dict[str, Any],
) -> SentencePieceModel:
    """The SentencePiece model of a trained Unigram model, as its ``.model`` reads back.

    IDs: specials (the unknown token as UNKNOWN, the others CONTROL), then the 256 BYTE
    pieces with byte fallback, then the learned pieces. The normalizer (rule charsmap,
    whitespace cleanup, dummy prefix, spaces escaped to ``▁``) is the one the trainer
    normalized its words with: SentencePiece's lattice over the whole text then cuts at
    every ``▁`` exactly as the per-word Viterbi does, since no learned piece has a ``▁``
    after its first character.
    """
    pieces = [Piece(t.content, 0.0, UNKNOWN if t.role == "unk" else CONTROL) for t in specials]
    if byte_fallback:
        pieces += [Piece(f"<0x{b:02X}>", 0.0, BYTE) for b in range(256)]
    taken = {p.piece for p in pieces}
    for piece, score in learned:
        if piece not in taken:
            taken.add(piece)
            pieces.append(Piece(piece, float32(score), NORMAL))
    ids = {t.role: i for i, t in enumerate(specials) if t.role in ("unk", "bos", "eos", "pad")}
    names = {t.role: t.content for t in specials}
    trainer = TrainerSpec(
        model_type="unigram",
        vocab_size=len(pieces),
        byte_fallback=byte_fallback,
        unk_id=ids["unk"],
        bos_id=ids.get("bos", -1),
        eos_id=ids.get("eos", -1),
        pad_id=ids.get("pad", -1),
        unk_piece=names["unk"],
        bos_piece=names.get("bos", "<s>"),
        eos_piece=names.get("eos", "</s>"),
        pad_piece=names.get("pad", "<pad>"),
        # Configs from before the option were trained without the script rule. With it,
        # digits keep their own script (Common for ASCII), which is SentencePiece's
        # split_by_number=true; without it neither flag constrains anything.
        split_by_unicode_script=config.get("split_by_unicode_script", False),
        split_by_number=config.get("split_by_unicode_script", False),
        max_sentencepiece_length=config["max_piece_length"],
        character_coverage=float32(config["character_coverage"]),
        control_symbols=[t.content for t in specials if t.role not in ("unk", "bos", "eos", "pad")],
    )
    return SentencePieceModel(
        Path(MODEL_LABEL), pieces, trainer, normalizer_spec(config), NormalizerSpec()
    )


def model_bytes(model: SentencePieceModel, config: dict[str, Any]) -> bytes:
    """The ``.model`` bytes of a trained model (with how it was trained)."""
    settings = UnigramSettings(
        seed_sentencepiece_size=config["seed_size"],
        shrinking_factor=config["shrinking_factor"],
        num_sub_iterations=config["em_sub_iterations"],
    )
    return encode_model(model.pieces, model.trainer_spec, model.normalizer_spec, unigram=settings)


def normalizer_spec(config: dict[str, Any]) -> NormalizerSpec:
    """The NormalizerSpec of ``config``; the trainer normalizes its text with this very
    spec, so the written model and the counted words cannot disagree. Older configs
    (before these options) were identity without whitespace cleanup."""
    name = config.get("normalization", "identity")
    return NormalizerSpec(
        name=name,
        precompiled_charsmap=charsmap(name),
        add_dummy_prefix=True,
        remove_extra_whitespaces=config.get("remove_extra_whitespaces", False),
        escape_whitespaces=True,
        present=True,
    )


class _Lossy:
    """How many texts the whitespace cleanup changes (of ``seen`` checked)."""

    def __init__(self) -> None:
        self.count = 0
        self.seen = 0
        self.sampled = False


# Files are read natively; their first documents are checked in Python (a bound on the
# extra reading the warning costs).
FILE_SAMPLE_DOCS = 10_000


def _collapses(text: str) -> bool:
    return "  " in text or text[:1] == " " or text[-1:] == " "


def _watch_whitespace(texts: Iterable[str]) -> tuple[Iterable[str], _Lossy]:
    """``texts`` unchanged (a generator counting as it passes them on, for in-memory
    texts) and the count of texts SentencePiece's whitespace cleanup would change."""
    from ..corpus import TextFiles

    lossy = _Lossy()
    if isinstance(texts, TextFiles):
        lossy.sampled = True
        for i, text in enumerate(texts):
            if i >= FILE_SAMPLE_DOCS:
                break
            lossy.seen += 1
            lossy.count += _collapses(text)
        return texts, lossy
    if isinstance(texts, (str, bytes)):
        return texts, lossy  # rejected with its own error by the word counter

    def counted() -> Iterator[str]:
        for text in texts:
            if isinstance(text, str):
                lossy.seen += 1
                lossy.count += _collapses(text)
            yield text

    return counted(), lossy
