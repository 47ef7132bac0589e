"""Type stub for the private Rust extension (keep in sync with src/py.rs)."""

from typing import Any

import numpy as np

__version__: str

def pretokenize(
    text: str, pattern: str, name: str | None = None, byte_offsets: bool = False
) -> list[tuple[int, int]]: ...

class SpecialMatcher:
    def __init__(self, specials: list[tuple[str, int]]) -> None: ...
    def find_first(self, text: str) -> tuple[int, str] | None: ...

class BpeCore:
    @staticmethod
    def from_merges(
        merges: list[tuple[int, int]],
        pattern: str,
        name: str | None,
        specials: list[tuple[str, int]],
        steps: list[tuple[str, str | None, str, bool]] | None = None,
    ) -> BpeCore: ...
    @staticmethod
    def from_records(
        vocab: list[bytes],
        records: list[tuple[int, int, int]],
        pattern: str,
        name: str | None,
        specials: list[tuple[str, int]],
        steps: list[tuple[str, str | None, str, bool]] | None = None,
        ignore_merges: bool = False,
    ) -> BpeCore: ...
    @staticmethod
    def from_ranks(
        ranks: list[bytes],
        pattern: str,
        name: str | None,
        specials: list[tuple[str, int]],
        steps: list[tuple[str, str | None, str, bool]] | None = None,
    ) -> BpeCore: ...
    def encode(self, text: str, allowed: SpecialMatcher | None = None) -> list[int]: ...
    def encode_batch(
        self, texts: list[str], allowed: SpecialMatcher | None = None, threads: int | None = None
    ) -> list[list[int]]: ...
    def encode_batch_flat(
        self, texts: list[str], allowed: SpecialMatcher | None = None, threads: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]: ...
    def encode_with_offsets(
        self,
        text: str,
        allowed: SpecialMatcher | None = None,
        untrusted: list[tuple[int, int]] | None = None,
        chars: bool = False,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
    def decode_bytes(self, ids: np.ndarray) -> bytes: ...
    def token_bytes(self, id: int) -> bytes | None: ...
    def model_size(self) -> int: ...
    def merge_result(self, left: int, right: int) -> int | None: ...
    def merges(self) -> list[tuple[int, int]]: ...
    def vocab(self) -> list[bytes]: ...

def pipeline_core(
    config: str,
    vocab: list[bytes],
    records: list[tuple[int, int, int]],
    specials: list[tuple[str, int]],
    steps: list[tuple[str, str | None, str, bool]],
) -> BpeCore: ...
def normalize_str(node: str, text: str) -> tuple[str, list[tuple[int, int]]]: ...

class BpeTrainer:
    def __init__(
        self,
        pattern: str,
        name: str | None,
        max_merges: int,
        min_frequency: int,
        max_token_length: int | None,
        tie_break: str,
        threads: int | None,
    ) -> None: ...
    def add_texts(self, texts: list[str]) -> None: ...
    def add_files(self, paths: list[str], formats: list[str], text_field: str) -> None: ...
    def corpus_stats(self) -> tuple[int, int, str, int]: ...
    def start(self) -> None: ...
    def step(self, steps: int) -> str | None: ...
    def merges_done(self) -> int: ...
    def result(self) -> dict[str, Any]: ...
