"""Type stub for the private Rust extension (keep in sync with src/py/)."""

from typing import Any, final

import numpy as np

__version__: str

def unicode_tables_version() -> str: ...
def hf_byte_level_tables(
    vocab: dict[str, int],
    merges: list[Any],
    added: list[tuple[str, int]],
    char_prefix: str | None = None,
) -> tuple[list[bytes], list[tuple[int, int, int]]]: ...
def gpt2_byte_alphabet() -> str: ...
def pretokenize(
    text: str, pattern: str, name: str | None = None, byte_offsets: bool = False
) -> list[tuple[int, int]]: ...

@final
class NativeChatTemplate:
    """A chat template compiled for the native engine (src/chat_template, binding
    src/py/chat_template.rs). The constructor raises ValueError when the engine does not
    run the template; ``render`` returns ``(text, spans, generation_spans)`` (code points;
    content spans sorted, ``{% generation %}`` spans in output order) or the reason (a
    str) it declined, and then the Python engine renders. ``prepare`` and
    ``prepare_messages`` (plain messages wrapped natively, src/py/chat_messages.rs; None
    when not plain) ready a render for a chunk job's worker; both decline a template
    with ``{% generation %}`` blocks (``has_generation``), whose records need ``render``.
    ``prefix_texts`` renders a record's histories (the supervision rule's cuts) with the
    context converted once."""

    def __new__(
        cls, source: str, span_type: type, env_globals: dict[str, Any]
    ) -> NativeChatTemplate: ...
    @property
    def has_generation(self) -> bool: ...
    def render(
        self, context: dict[str, Any], max_iterations: int, max_chars: int
    ) -> tuple[str, list[tuple[int, int, int]], list[tuple[int, int]]] | str:
        """``(text, content spans, generation spans)``, or the reason it declined."""
    def prepare(
        self, context: dict[str, Any], max_iterations: int, max_chars: int
    ) -> NativeRenderInput | str: ...
    def prepare_messages(
        self,
        messages: Any,
        context: dict[str, Any],
        owner_type: type,
        kind: int,
        matcher: SpecialMatcher,
        max_iterations: int,
        max_chars: int,
        mode: str | None = None,
    ) -> tuple[NativeRenderInput, list[Any], tuple[str, ...], str | None, bool] | None: ...
    def prefix_texts(
        self,
        messages: Any,
        context: dict[str, Any],
        cuts: list[tuple[int, bool]],
        matcher: SpecialMatcher | None,
        max_iterations: int,
        max_chars: int,
    ) -> list[str] | str | None: ...

@final
class NativeRenderInput:
    """A render prepared by ``NativeChatTemplate.prepare`` for a chunk job's worker
    (``ChatChunkEncoder.start(..., renders=...)``); runs once."""

    @property
    def size(self) -> int: ...

@final
class SpecialMatcher:
    def __new__(
        cls,
        specials: list[tuple[str, int]],
        flags: list[tuple[bool, bool, bool, bool]] | None = None,
        core: Engine | None = None,
        gates: list[str] | None = None,
    ) -> SpecialMatcher: ...
    def find_first(self, text: str) -> tuple[int, str] | None: ...
    def admits_any(self) -> bool: ...

@final
class Engine:
    """One tokenizer engine over both runtimes (src/engine.rs, src/py/engine.rs): a
    pipeline (byte-level BPE, Hugging Face pipelines) or a SentencePiece model. What
    differs between them is declared in ``capabilities``."""

    @staticmethod
    def from_merges(
        merges: list[tuple[int, int]],
        pattern: str,
        name: str | None,
        specials: list[tuple[str, int]],
        steps: list[tuple[str, str | None, str, bool]] | None = None,
        controls: list[int] = ...,
    ) -> Engine: ...
    @staticmethod
    def from_records(
        vocab: list[bytes],
        records: list[tuple[int, int, int]],
        pattern: str,
        name: str | None,
        specials: list[tuple[str, int]],
        steps: list[tuple[str, str | None, str, bool]] | None = None,
        ignore_merges: bool = False,
        controls: list[int] = ...,
    ) -> Engine: ...
    @staticmethod
    def from_ranks(
        ranks: list[bytes],
        pattern: str,
        name: str | None,
        specials: list[tuple[str, int]],
        steps: list[tuple[str, str | None, str, bool]] | None = None,
        id_offset: int = 0,
        controls: list[int] = ...,
    ) -> Engine: ...
    @property
    def kind(self) -> str: ...
    @property
    def model_kind(self) -> str: ...
    @property
    def capabilities(self) -> frozenset[str]: ...
    def encode(self, text: str, allowed: SpecialMatcher | None = None) -> list[int]: ...
    def encode_serial(self, text: str) -> list[int]: ...
    def encode_batch(
        self, texts: list[str], allowed: SpecialMatcher | None = None, threads: int | None = None
    ) -> list[list[int]]: ...
    def encode_batch_flat(
        self, texts: list[str], allowed: SpecialMatcher | None = None, threads: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]: ...
    def encode_batch_flat_digests(
        self, texts: list[str], allowed: SpecialMatcher | None = None, threads: int | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...
    def encode_with_offsets(
        self,
        text: str,
        allowed: SpecialMatcher | None = None,
        untrusted: list[tuple[int, int]] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
    def encode_offsets_lists(
        self,
        text: str,
        allowed: SpecialMatcher | None = None,
        untrusted: list[tuple[int, int]] | None = None,
        codepoints: bool = True,
    ) -> tuple[list[int], list[int]]: ...
    def id_array_list(self, ids: np.ndarray) -> list[int]: ...
    def decode_bytes(self, ids: np.ndarray) -> bytes: ...
    def decode_text(self, ids: np.ndarray) -> str: ...
    def nbest(self, text: str, n: int) -> list[tuple[list[int], float]]: ...
    def log_likelihood(self, text: str) -> float: ...
    def sample(self, text: str, alpha: float, key: tuple[int, int, int, int]) -> list[int]: ...
    def sample_lcg64(self, text: str, alpha: float, seed: int, count: int) -> list[list[int]]: ...
    def token_bytes(self, id: int) -> bytes | None: ...
    def piece_strs(self, ids: np.ndarray) -> list[str]: ...
    def normalize(self, text: str) -> str: ...
    def normalize_aligned(self, text: str) -> tuple[str, list[int]]: ...
    def piece_to_id(self, piece: str) -> int | None: ...
    def model_size(self) -> int: ...
    def merge_result(self, left: int, right: int) -> int | None: ...
    def merges(self) -> list[tuple[int, int]]: ...
    def vocab(self) -> list[bytes]: ...

# The byte-level constructors' historical name (``BpeCore.from_merges(...)``).
BpeCore = Engine

def pipeline_core(
    config: str,
    vocab: list[bytes],
    records: list[tuple[int, int, int]],
    specials: list[tuple[str, int]],
    steps: list[tuple[str, str | None, str, bool]],
    controls: list[int] = ...,
) -> Engine: ...
def core_pretokenize(core: Engine, text: str) -> list[tuple[int, int]]: ...
def normalize_str(node: str, text: str) -> tuple[str, list[tuple[int, int]]]: ...

@final
class BpeTrainer:
    def __new__(
        cls,
        pattern: str,
        name: str | None,
        max_merges: int,
        min_frequency: int,
        max_token_length: int | None,
        tie_break: str,
        threads: int | None,
    ) -> BpeTrainer: ...
    def add_texts(self, texts: list[str]) -> None: ...
    def add_files(self, paths: list[str], formats: list[str], text_field: str) -> None: ...
    def add_counts(
        self,
        pieces: list[bytes],
        counts: np.ndarray,
        documents: int,
        bytes: int,
        digest_hex: str,
    ) -> None: ...
    def corpus_stats(self) -> tuple[int, int, str, int]: ...
    def start(self) -> None: ...
    def step(self, steps: int) -> str | None: ...
    def seed_merges(self, merges: list[tuple[int, int]]) -> None: ...
    def merges_done(self) -> int: ...
    def finish_pending(self) -> None: ...
    def result(self) -> dict[str, Any]: ...

def count_pretokens(
    texts: list[str], pattern: str, name: str | None, threads: int | None = None
) -> tuple[list[bytes], np.ndarray, int, int, str]: ...

# Corpus deduplication (src/py/data.rs)
def minhash_signatures(
    texts: list[str],
    kind: str,
    n: int,
    scheme: str,
    a: np.ndarray,
    b: np.ndarray,
    threads: int | None = None,
) -> np.ndarray: ...
def lsh_band_keys(
    signatures: np.ndarray, bands: int, rows: int, threads: int | None = None
) -> np.ndarray: ...
def lsh_candidate_groups(
    keys: np.ndarray, threads: int | None = None
) -> tuple[np.ndarray, np.ndarray]: ...
def lsh_verify_groups(
    texts: list[str],
    members: np.ndarray,
    offsets: np.ndarray,
    kind: str,
    n: int,
    threshold: float,
    threads: int | None = None,
) -> tuple[np.ndarray, int, int]: ...

# Cleaning engines: language identification, scripts, quality counts (src/py/data_clean.rs)
@final
class NativeCharTable:
    def __new__(cls, entries: np.ndarray) -> NativeCharTable: ...
    def script_counts(self, texts: list[bytes], max_chars: int) -> list[list[tuple[int, int]]]: ...

@final
class NativeLangId:
    def __new__(
        cls,
        rows: np.ndarray,
        state_row: np.ndarray,
        output: np.ndarray,
        ptc: np.ndarray,
        prior: np.ndarray,
        columns: list[int],
        aliases: list[tuple[int, int]],
    ) -> NativeLangId: ...
    def classify(self, inputs: list[bytes]) -> tuple[np.ndarray, np.ndarray]: ...

@final
class NativeQualityCounts:
    def __new__(
        cls, table: NativeCharTable, stop_words: list[bytes], top_ns: list[int], dup_ns: list[int]
    ) -> NativeQualityCounts: ...
    @staticmethod
    def names() -> list[str]: ...
    def counts(self, texts: list[bytes], no_space: list[bool], scale: list[int]) -> np.ndarray: ...

# The loader's packed rows from one mapped stream (src/py/packed_rows.rs)
def packed_rows(
    stream: np.ndarray,
    starts: np.ndarray,
    samples: np.ndarray,
    seq_len: int,
    item: int,
    out: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...

# Blocks of documents as one UTF-8 buffer + offsets, the Ray engine's unit (src/py/data_blocks.rs)
def pack_texts(texts: list[str]) -> tuple[np.ndarray, np.ndarray]: ...
def count_pretokens_block(
    buf: np.ndarray, offsets: np.ndarray, pattern: str, name: str | None, threads: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int, str]: ...
def sum_count_tables(
    pieces: list[np.ndarray],
    offsets: list[np.ndarray],
    counts: list[np.ndarray],
    threads: int | None = None,
) -> tuple[list[bytes], np.ndarray]: ...
def minhash_band_keys_block(
    buf: np.ndarray,
    offsets: np.ndarray,
    kind: str,
    n: int,
    scheme: str,
    a: np.ndarray,
    b: np.ndarray,
    bands: int,
    rows: int,
    threads: int | None = None,
) -> np.ndarray: ...
def corpus_records_json(
    texts: list[str],
    doc_ids: list[str],
    license_classes: list[str],
    sources: list[str],
    splits: list[str],
) -> tuple[bytes, np.ndarray]: ...
def corpus_records_json_digested(
    digests: np.ndarray,
    doc_ids: list[str],
    license_classes: list[str],
    sources: list[str],
    splits: list[str],
) -> bytes: ...

@final
class ParquetShardWriter:
    def __new__(
        cls,
        path: str,
        *,
        id_bits: int,
        doc_ids: list[str],
        metadata: list[tuple[str, str]],
        created_by: str,
    ) -> ParquetShardWriter: ...
    @property
    def written(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    def write_chunk(self, ids: np.ndarray, offsets: np.ndarray, truncated: np.ndarray) -> None: ...
    def finish(self) -> str: ...
    def abort(self) -> None: ...

# A constructor function (it was a class): builds the one Engine class.
def SentencePieceCore(
    pieces: list[bytes],
    scores: list[float],
    types: list[int],
    model_type: str,
    byte_fallback: bool,
    normalizer: tuple[bytes, bool, bool, bool, bool],
    denormalizer: tuple[bytes, bool, bool, bool, bool] | None,
    unk_surface: bytes,
    *,
    segment_cache: bool = True,
) -> Engine: ...

# --- BPE-dropout (src/py/dropout.rs) --------------------------------------------------

@final
class BpeDropoutCore:
    """BPE-dropout engine; reference: tokenpact.stochastic.bpe_dropout_reference."""

    def __new__(
        cls, merges: list[tuple[int, int]], pattern: str, name: str | None = None
    ) -> BpeDropoutCore: ...
    def encode(self, text: str, p: float, stream: int) -> list[int]: ...
    def encode_batch(
        self, texts: list[str], p: float, streams: list[int], threads: int | None = None
    ) -> list[list[int]]: ...

# --- trainers (src/py/trainers.rs) -------------------------------------------------

RNG_NAME: str

def rng_uniform(seed: int, epoch: int, sample: int, view: int, occurrence: int) -> float: ...

@final
class WordCounter:
    def __new__(
        cls,
        split: str,
        lowercase: bool = False,
        threads: int | None = None,
        normalizer: tuple[bytes, bool, bool, bool, bool] | None = None,
    ) -> WordCounter: ...
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
    split_by_unicode_script: bool = True,
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
    initial_alphabet: list[str] = ...,
    limit_alphabet: int | None = None,
) -> tuple[list[str], list[tuple[str, str]], list[int], str]: ...

@final
class UnigramCore:
    def __new__(
        cls, pieces: list[str], logp: list[float], unk_id: int, byte_base: int | None = None
    ) -> UnigramCore: ...
    def encode(self, text: str) -> list[int]: ...
    def log_likelihood(self, text: str) -> float: ...
    def nbest(self, text: str, n: int) -> list[tuple[list[int], float]]: ...
    def sample(self, text: str, alpha: float, key: tuple[int, int, int, int]) -> list[int]: ...
    def lattice_stats(
        self, text: str, n: int
    ) -> tuple[float, list[float], list[int], list[tuple[list[int], float]]]: ...
    def sample_raw(self, text: str, alpha: float, key: tuple[int, int, int, int]) -> list[int]: ...

@final
class WordPieceCore:
    def __new__(
        cls, vocab: list[str], unk_id: int, prefix: str, max_chars: int, lowercase: bool
    ) -> WordPieceCore: ...
    def encode(self, text: str) -> list[int]: ...
    def decode(self, ids: list[int]) -> str: ...

def max_threads() -> int: ...
def id_space_limit(entries: int) -> int: ...

# ---------------------------------------------------------------- runtime (src/py/runtime.rs)
@final
class IncrementalDecoderCore:
    def __new__(
        cls, core: Any, strict: bool, skip_ids: list[int], prompt: list[int] = ...
    ) -> IncrementalDecoderCore: ...
    def push(self, ids: list[int]) -> str: ...
    def push_one(self, id: int) -> str: ...
    def push_array(self, ids: np.ndarray) -> str: ...
    def finish(self) -> str: ...
    def held(self) -> int: ...
    def count(self) -> int: ...

def block_keys_tokenpact(ids: np.ndarray, block_size: int, namespace: bytes) -> bytes: ...
def block_keys_vllm(
    ids: np.ndarray, block_size: int, none_hash: bytes, extra_first: bytes, extra_rest: bytes
) -> bytes: ...

DEFAULT_SCAN_STEP: int

def final_pretoken_prefix(text: str, name: str) -> int | None: ...

@final
class StopScannerCore:
    def __new__(cls, patterns: list[str], first_listed: bool = ...) -> StopScannerCore: ...
    def feed(self, text: str) -> tuple[int, int] | None: ...
    def depth(self) -> int: ...

@final
class StreamingCore:
    def __new__(
        cls,
        engine: Engine,
        rule: str,
        pattern: str | None = None,
        allowed: SpecialMatcher | None = None,
        through_spellings: bool = True,
        scan_step: int = 256,
    ) -> StreamingCore: ...
    def push_bytes(self, data: bytes) -> list[int]: ...
    def push_bytes_into(self, data: bytes, out: list[int]) -> int: ...
    def push(self, text: str) -> list[int]: ...
    def push_into(self, text: str, out: list[int]) -> int: ...
    def provisional(self) -> list[int]: ...
    def finish(self) -> list[int]: ...
    def finish_into(self, out: list[int]) -> int: ...
    def reset(self) -> None: ...
    @property
    def pending_text(self) -> str: ...
    @property
    def mid_character(self) -> bool: ...
    @property
    def committed(self) -> list[int]: ...

@final
class OutputEngineCore:
    def __new__(
        cls,
        core: Any,
        stop_ids: list[int],
        sequences: list[list[int]],
        strings: list[str],
        budget: int | None,
        include: bool,
        prompt_boundary: int,
        prompt: list[int] = ...,
        skip_ids: list[int] = ...,
        first_listed: bool = ...,
        window: int | None = ...,
    ) -> OutputEngineCore: ...
    def push(self, ids: list[int]) -> tuple[str, int]: ...
    def push_one(self, id: int) -> tuple[str, int, tuple[str, int] | None]: ...
    def end(self) -> str: ...
    def finish_state(self) -> tuple[str, int] | None: ...
    def processed(self) -> list[int]: ...
    def held(self) -> str: ...

# ---------------------------------------------------------------- chat (src/py/chat_encode.rs)
def chat_token_lists(
    ids: np.ndarray,
    codes: np.ndarray,
    kinds: list[str] | tuple[str, ...],
    engine: Engine | None = None,
) -> tuple[list[int], list[int], list[str]]: ...
def chat_mask_list(length: int, ranges: list[tuple[int, int]]) -> list[int]: ...

@final
class ChatEncodeJob:
    """A chunk of rendered chat texts being encoded on worker threads."""

    def wait(
        self, help: bool = True, lists: bool = True
    ) -> list[
        tuple[
            tuple[np.ndarray, np.ndarray, np.ndarray, list[int], list[int], list[int]],
            tuple[list[int], list[int], list[str]] | np.ndarray,
        ]
    ]: ...
    def done(self) -> bool: ...
    def __len__(self) -> int: ...

@final
class ChatChunkEncoder:
    def __new__(
        cls,
        engine: Engine,
        allowed: SpecialMatcher | None,
        is_control: np.ndarray,
        kinds: list[str],
    ) -> ChatChunkEncoder: ...
    def start(
        self,
        texts: list[str],
        spans: list[list[int]],
        span_kinds: list[list[int]],
        threads: int,
        renders: list[NativeRenderInput | None] | None = None,
    ) -> ChatEncodeJob: ...

def capability_names() -> list[str]: ...
