"""Type stub for the private Rust extension (keep in sync with src/py/)."""

from typing import Any

import numpy as np

__version__: str

def unicode_tables_version() -> str: ...
def hf_byte_level_tables(
    vocab: dict[str, int],
    merges: list[Any],
    added: list[tuple[str, int]],
    char_prefix: str | None = None,
) -> tuple[list[bytes], list[tuple[int, int, int]]]: ...
def pretokenize(
    text: str, pattern: str, name: str | None = None, byte_offsets: bool = False
) -> list[tuple[int, int]]: ...

class SpecialMatcher:
    def __init__(
        self,
        specials: list[tuple[str, int]],
        flags: list[tuple[bool, bool, bool, bool]] | None = None,
        core: BpeCore | None = None,
    ) -> None: ...
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
        id_offset: int = 0,
    ) -> BpeCore: ...
    def encode(self, text: str, allowed: SpecialMatcher | None = None) -> list[int]: ...
    def encode_serial(self, text: str) -> list[int]: ...
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
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
    def decode_bytes(self, ids: np.ndarray) -> bytes: ...
    def token_bytes(self, id: int) -> bytes | None: ...
    def encode_offsets_lists(
        self,
        text: str,
        allowed: SpecialMatcher | None = None,
        untrusted: list[tuple[int, int]] | None = None,
        codepoints: bool = True,
    ) -> tuple[list[int], list[int]]: ...
    def piece_strs(self, ids: np.ndarray) -> list[str]: ...
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
def core_pretokenize(core: BpeCore, text: str) -> list[tuple[int, int]]: ...
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

class SentencePieceCore:
    """A SentencePiece model (src/py/sentencepiece.rs); same encode/decode names as BpeCore."""

    def __init__(
        self,
        pieces: list[bytes],
        scores: list[float],
        types: list[int],
        model_type: str,
        byte_fallback: bool,
        normalizer: tuple[bytes, bool, bool, bool, bool],
        denormalizer: tuple[bytes, bool, bool, bool, bool] | None,
        unk_surface: bytes,
    ) -> None: ...
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
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
    def decode_bytes(self, ids: np.ndarray) -> bytes: ...
    def decode_text(self, ids: np.ndarray) -> str: ...
    def token_bytes(self, id: int) -> bytes | None: ...
    def normalize(self, text: str) -> str: ...
    def piece_to_id(self, piece: str) -> int: ...
    def model_size(self) -> int: ...
    def merges(self) -> list[tuple[int, int]]: ...
    def vocab(self) -> list[bytes]: ...

# --- BPE-dropout (src/py/dropout.rs) --------------------------------------------------

class BpeDropoutCore:
    """BPE-dropout engine; reference: tokenpact.stochastic.bpe_dropout_reference."""

    def __init__(
        self, merges: list[tuple[int, int]], pattern: str, name: str | None = None
    ) -> None: ...
    def encode(self, text: str, p: float, stream: int) -> list[int]: ...
    def encode_batch(
        self, texts: list[str], p: float, streams: list[int], threads: int | None = None
    ) -> list[list[int]]: ...

# --- trainers (src/py/trainers.rs) -------------------------------------------------

RNG_NAME: str

def rng_uniform(seed: int, epoch: int, sample: int, view: int, occurrence: int) -> float: ...

class WordCounter:
    def __init__(
        self,
        split: str,
        lowercase: bool = False,
        threads: int | None = None,
        normalizer: tuple[bytes, bool, bool, bool, bool] | None = None,
    ) -> None: ...
    def add_texts(self, texts: list[str]) -> None: ...
    def add_files(self, paths: list[str], formats: list[str], text_field: str) -> None: ...
    def stats(self) -> tuple[int, int, int]: ...

def train_unigram(
    counter: WordCounter,
    vocab_size: int,
    max_piece_length: int,
    seed_size: int,
    character_coverage: float,
    shrinking_factor: float,
    em_sub_iterations: int,
    m_step: str,
    threads: int | None = None,
) -> tuple[list[tuple[str, float]], dict[str, Any]]: ...
def train_wordpiece(
    counter: WordCounter,
    vocab_size: int,
    specials: list[str],
    prefix: str,
    min_frequency: int,
    limit_alphabet: int | None = None,
    scoring: str = "count",
    threads: int | None = None,
) -> tuple[list[str], dict[str, Any]]: ...
def train_char_bpe(
    counter: WordCounter,
    eow: str,
    max_merges: int | None,
    piece_room: int | None,
    min_frequency: int,
    tie_break: str,
    threads: int | None = None,
) -> tuple[list[str], list[tuple[str, str]], list[int], str]: ...

class UnigramCore:
    def __init__(
        self, pieces: list[str], logp: list[float], unk_id: int, byte_base: int | None = None
    ) -> None: ...
    def encode(self, text: str) -> list[int]: ...
    def encode_batch(self, texts: list[str], threads: int | None = None) -> list[list[int]]: ...
    def decode_bytes(self, ids: list[int]) -> bytes: ...
    def log_likelihood(self, text: str) -> float: ...
    def nbest(self, text: str, n: int) -> list[tuple[list[int], float]]: ...
    def sample(self, text: str, alpha: float, key: tuple[int, int, int, int]) -> list[int]: ...
    def lattice_stats(
        self, text: str, n: int
    ) -> tuple[float, list[float], list[int], list[tuple[list[int], float]]]: ...
    def sample_raw(self, text: str, alpha: float, key: tuple[int, int, int, int]) -> list[int]: ...

class WordPieceCore:
    def __init__(
        self, vocab: list[str], unk_id: int, prefix: str, max_chars: int, lowercase: bool
    ) -> None: ...
    def encode(self, text: str) -> list[int]: ...
    def decode(self, ids: list[int]) -> str: ...

class CharBpeCore:
    def __init__(
        self,
        pieces: list[str],
        merges: list[tuple[int, int, int]],
        unk_id: int,
        eow: str,
        lowercase: bool,
    ) -> None: ...
    def encode(self, text: str) -> list[int]: ...
    def decode(self, ids: list[int]) -> str: ...
