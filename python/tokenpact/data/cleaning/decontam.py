"""Benchmark decontamination: n-gram overlap between the corpus and named evaluation files.

Text is normalized (NFKC, ``casefold``) and cut into units: words (``\\w+`` runs) for
space-delimited scripts, single characters for scripts written without spaces (Han,
Kana, Thai...; see :mod:`.scripts`). A document is contaminated when it shares at least
``min_matches`` distinct ``n``-word n-grams (default 13, as in GPT-3's and many later
decontamination passes) or ``char_n``-character n-grams of no-space text (default 25)
with any evaluation text. ``policy="drop"`` removes it; ``"flag"`` keeps it marked.

N-grams are keyed by an 8-byte BLAKE2b digest (not Python's per-process ``hash``), so
every worker of every engine computes the same keys. Evaluation texts shorter than one
n-gram cannot be matched this way; the step record counts them (``eval_too_short``).
The configuration hash covers each evaluation file's name and SHA-256, so the manifest
records which version of each evaluation set was checked.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from ...errors import ConfigError, InvalidInputError
from .scripts import NO_SPACE_SCRIPTS, char_script
from .step import Outcome, StepConfig, check_choice, check_range, check_strings

POLICIES = ("drop", "flag")
_WORD = re.compile(r"\w+")
_CHUNK = 1 << 20


def text_units(text: str) -> tuple[list[str], list[str]]:
    """(words of space-delimited scripts, characters of no-space scripts) of ``text``."""
    words: list[str] = []
    chars: list[str] = []
    for match in _WORD.finditer(unicodedata.normalize("NFKC", text).casefold()):
        run: list[str] = []
        for ch in match.group(0):
            if char_script(ch) in NO_SPACE_SCRIPTS:
                if run:
                    words.append("".join(run))
                    run = []
                chars.append(ch)
            else:
                run.append(ch)
        if run:
            words.append("".join(run))
    return words, chars


def _key(kind: str, units: list[str]) -> int:
    joined = (kind + "\x1f" + "\x1f".join(units)).encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(joined, digest_size=8).digest(), "big")


def ngram_keys(text: str, *, n: int, char_n: int) -> set[int]:
    """The keys of every word ``n``-gram and no-space character ``char_n``-gram."""
    words, chars = text_units(text)
    keys = {_key("w", words[i : i + n]) for i in range(len(words) - n + 1)}
    keys.update(_key("c", chars[i : i + char_n]) for i in range(len(chars) - char_n + 1))
    return keys


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                h.update(chunk)
    except OSError as exc:
        raise InvalidInputError(
            f"evaluation file {path} cannot be read ({exc.strerror or exc}); check the path"
        ) from None
    return "sha256:" + h.hexdigest()


@dataclass(frozen=True)
class DecontamConfig(StepConfig):
    """``eval_sets``: evaluation files (text, JSON Lines, Parquet; read with
    :func:`~tokenpact.data.read_documents`, ``text_fields`` naming the fields to index)."""

    NAME = "decontam"
    LIBRARY = None
    STEP_VERSION = 1

    eval_sets: tuple[str, ...] = ()
    n: int = 13
    char_n: int = 25
    min_matches: int = 1
    policy: str = "drop"
    text_fields: tuple[str, ...] = ("text",)

    def __post_init__(self) -> None:
        object.__setattr__(self, "eval_sets", tuple(os.fspath(p) for p in self.eval_sets))
        check_strings(self.eval_sets, "eval_sets")
        if not self.eval_sets:
            raise ConfigError("decontam needs eval_sets: the benchmark/test files to check")
        names = [Path(p).name for p in self.eval_sets]
        if len(set(names)) != len(names):
            raise ConfigError(f"evaluation files need distinct file names, got {names}")
        check_range(self.n, "n", low=1)
        check_range(self.char_n, "char_n", low=1)
        check_range(self.min_matches, "min_matches", low=1)
        check_choice(self.policy, POLICIES, "decontam policy")
        check_strings(self.text_fields, "text_fields")

    @cached_property
    def eval_set_digests(self) -> dict[str, str]:
        """Each evaluation file's name and SHA-256 (the version that was checked)."""
        return {Path(p).name: _file_sha256(Path(p)) for p in self.eval_sets}

    def identity(self) -> dict[str, Any]:
        out = self.to_json()
        out["eval_sets"] = self.eval_set_digests
        return out

    def eval_texts(self, path: str) -> Iterable[str]:
        from ..readers import read_documents

        for field_name in self.text_fields:
            try:
                for doc in read_documents(path, text_field=field_name, id_field=None):
                    yield doc.text
            except UnicodeDecodeError as exc:
                raise InvalidInputError(
                    f"evaluation file {path} is not UTF-8 ({exc.reason} at byte {exc.start}); "
                    "convert it with iconv first"
                ) from None

    def prepare(self) -> DecontamWorker:
        index: dict[int, int] = {}
        too_short = 0
        names = list(self.eval_set_digests)
        for bit, path in enumerate(self.eval_sets):
            for text in self.eval_texts(path):
                keys = ngram_keys(text, n=self.n, char_n=self.char_n)
                if not keys:
                    too_short += 1
                for key in keys:
                    index[key] = index.get(key, 0) | (1 << bit)
        return DecontamWorker(self, index, names, too_short)


class DecontamWorker:
    def __init__(
        self, config: DecontamConfig, index: dict[int, int], names: list[str], too_short: int
    ) -> None:
        self.c = config
        self.index = index
        self.names = names
        self.eval_too_short = too_short

    def matches(self, text: str) -> tuple[int, list[str]]:
        """(distinct shared n-grams, names of the evaluation sets they come from)."""
        mask = hits = 0
        for key in ngram_keys(text, n=self.c.n, char_n=self.c.char_n):
            bits = self.index.get(key)
            if bits is not None:
                hits += 1
                mask |= bits
        return hits, [name for i, name in enumerate(self.names) if mask >> i & 1]

    def __call__(self, text: str, meta: Mapping[str, Any]) -> Outcome:
        hits, sets = self.matches(text)
        if hits < self.c.min_matches:
            return Outcome(text)
        reasons = tuple(f"decontam.{name}" for name in sets)
        annotations = {"contamination": {"ngrams": hits, "eval_sets": sets}}
        counts = {f"matched:{name}": 1 for name in sets}
        if self.c.policy == "drop":
            return Outcome(None, reasons, annotations, counts)
        return Outcome(text, reasons, annotations, counts)
