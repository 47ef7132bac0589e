"""The Tokenizer: a typed spec run by its native engine, with an explicit special-token
policy.

Example::

    tok = tp.train_bpe(texts, vocab_size=4096)
    ids = tok.encode("The cat sleeps.")
    assert tok.decode(ids) == "The cat sleeps."

Its collaborators, each with its own state, built here once per tokenizer: the
special-token policy (:class:`.special_policy.SpecialTokenPolicy`: the added-token tables
and the matchers of the trust rule), structured encoding
(:class:`.structured_encoding.StructuredEncoder`), the token strings behind the peer
libraries' names (:class:`.peer_names.TokenNames`). They take what they need from the
tokenizer at construction or read its public API; no other module reads its private
attributes. The semantic hash is the contract's (:mod:`tokenpact.contract`, a layer
below). Reading and writing files is :mod:`tokenpact.files` (``tp.load``, ``tp.save``,
``tp.export``), a layer above: the methods of the same names here are deprecated
aliases that call those public functions through the package root (:func:`_files`).
"""

from __future__ import annotations

import math
import os
import pickle
import warnings
from collections.abc import Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np

from .. import _native, contract
from .._text import _surrogate_error, _text_arg, _texts_arg, _threads_arg
from ..components import Pipeline
from ..errors import (
    CapabilityError,
    ConfigError,
    DecodeError,
    InvalidInputError,
    UnknownTokenError,
)
from ..postprocess import apply_single, single_boundaries, with_boundaries
from ..special import KNOWN_ROLES, AddedTokenFlags, SpecialToken
from ..stochastic import LCG64_NAME, RNG_NAME, RNGS, SampleKey
from ..truncation import Padding, Truncation
from . import token_ids
from .byte_bpe import merges_spec, ranks_spec, records_spec
from .engine import Capability, Engine, build_engine, capabilities
from .literal_text import LiteralTextPolicy
from .peer_names import TokenNames
from .pickling import Reduced, rebuild_tokenizer
from .provenance import BUILT_IN_MEMORY, Provenance
from .spec import SPECIAL_DECODE, TokenizerSpec
from .special_policy import SpecialSpec, SpecialTokenPolicy, check_disallowed
from .structured_encoding import StructuredEncoder

if TYPE_CHECKING:
    from types import ModuleType

    from ..encoding import Encoding

NATIVE_FILE = "tokenpact.json"
__all__ = ["KNOWN_ROLES", "NATIVE_FILE", "SpecialSpec", "Tokenizer"]


_P = TypeVar("_P")


def _call_policy(given: _P | Literal[False] | None, own: _P | None) -> _P | None:
    """A call's padding or truncation policy: its own, the tokenizer's when None, none
    when False."""
    if given is None:
        return own
    return None if given is False else given


def _check_alpha(alpha: float) -> None:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
        raise ConfigError(f"alpha must be a positive number, got {alpha!r}")
    if not (alpha > 0 and math.isfinite(alpha)):
        raise ConfigError(f"alpha must be a positive number, got {alpha}")


def _check_generator(generator: str) -> None:
    if generator not in RNGS:
        raise ConfigError(f"unknown generator {generator!r}; use one of {', '.join(RNGS)}")


def _files() -> ModuleType:
    """:mod:`tokenpact.files`, the public file functions the deprecated file methods of
    :class:`Tokenizer` alias. Reached as ``tokenpact.files`` (the package root's public
    name, imported on first use) because it sits above the core: the core imports
    nothing above it, and the aliases go away with the next release."""
    import tokenpact

    return tokenpact.files


class Tokenizer:
    """A tokenizer: a :class:`~tokenpact.core.TokenizerSpec` run by its native engine, with
    declared special tokens and an explicit special-token policy."""

    def __init__(
        self,
        spec: TokenizerSpec,
        engine: Engine | None = None,
        provenance: Provenance | None = None,
    ) -> None:
        """Run ``spec`` on ``engine`` (built from the spec when omitted); ``provenance``
        records where it came from (source files, training record)."""
        provenance = BUILT_IN_MEMORY if provenance is None else provenance
        self._spec = spec
        self._provenance = provenance
        self._given_engine = engine  # pickled as is; a built engine is rebuilt instead
        # Any: the optional methods beyond the Engine protocol are declared capabilities.
        self._core: Any = build_engine(spec, label=provenance.label) if engine is None else engine
        self._capabilities = capabilities(self._core)
        self._pattern_name, self._pattern = spec.pattern_name, spec.pattern
        self._specials = tuple(spec.special_tokens)
        self._roles = {t.content: t.role for t, _ in self._specials}
        # The added tokens (specials are control, the others content) and the matchers
        # of the trust rule over them: a collaborator with its own tables and caches.
        self._special = SpecialTokenPolicy(
            {t.content: i for t, i in self._specials},
            spec.added_tokens,
            spec.added_token_flags,
            self._core if Capability.ADDED_TOKEN_FLAGS in self._capabilities else None,
        )
        # Bound once for the hot paths (no attribute hop per call).
        self._special_ids = self._special.special_ids
        self._resolve_policy = self._special.resolve
        self._structured = StructuredEncoder(
            self._core, self._capabilities, self._special, spec.trim_offsets
        )

    # ------------------------------------------------------------------ pickling
    def __reduce__(self) -> Reduced:
        """Pickled as spec, provenance and semantic hash; the engine is rebuilt and the
        hash checked on unpickling (:mod:`.pickling`)."""
        return rebuild_tokenizer, (type(self), self._pickled_state, self.semantic_hash)

    @cached_property
    def _pickled_state(self) -> bytes:
        """What builds this tokenizer (spec, its caller's engine or None, provenance, the
        extra constructor keywords of its class) as one bytes object, made on first
        pickling and kept.

        One bytes object, pickled by the C pickler: ``datasets`` pickles a map's function
        with dill, a pure-Python pickler, to fingerprint it on every ``map`` call and
        again to send it to each worker. Walking Llama 3's spec that way took 3.5 s per
        pickling; now the first pickling takes 0.16 s and each later one 3 ms.
        """
        parts = (self._spec, self._given_engine, self._provenance, self._pickle_kwargs())
        return pickle.dumps(parts, protocol=pickle.HIGHEST_PROTOCOL)

    def _pickle_kwargs(self) -> dict[str, Any]:
        """Constructor keywords a subclass needs beyond spec, engine and provenance."""
        return {}

    def __copy__(self) -> Tokenizer:
        return self  # immutable: a copy would behave identically

    def __deepcopy__(self, memo: dict[int, Any]) -> Tokenizer:
        return self

    @cached_property
    def _names(self) -> TokenNames:
        """The token strings of the peer libraries' names, built on first use (the table
        is vocabulary-sized)."""
        return TokenNames(
            self._core.vocab(),
            byte_level=self._spec.kind.byte_level,
            size=self.vocab_size,
            added=self._special.gated,
        )

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_merges(
        cls,
        merges: Sequence[tuple[int, int]],
        *,
        pattern: str = "gpt4",
        special_tokens: Iterable[SpecialToken | str] = (),
        training: dict[str, Any] | None = None,
    ) -> Tokenizer:
        """Build from ranked merges over bytes: merge ``r`` creates ID ``256 + r``.

        Special tokens get the IDs after the merges, in declared order.
        """
        spec = merges_spec(merges, pattern=pattern, special_tokens=special_tokens)
        return cls(spec, provenance=Provenance(training=training))

    @classmethod
    def from_merge_records(
        cls,
        records: Sequence[tuple[int, int, int]],
        *,
        vocab: Sequence[bytes],
        pattern: str = "gpt4",
        special_tokens: Sequence[tuple[SpecialToken, int]] = (),
        post_processor: dict[str, Any] | None = None,
    ) -> Tokenizer:
        """Build from explicit merge records ``(left, right, new_id)`` in rank order.

        ``vocab[i]`` is the byte piece of ID ``i``; each record must satisfy
        ``vocab[new_id] == vocab[left] + vocab[right]``. Selection is the dynamic
        minimum ``(rank, position)`` encode merges by, so a rule may use an ID that a later
        rank creates.
        """
        spec = records_spec(
            records,
            vocab=vocab,
            pattern=pattern,
            special_tokens=special_tokens,
            post_processor=post_processor,
        )
        return cls(spec)

    @classmethod
    def from_ranks(
        cls,
        ranks: Sequence[bytes],
        *,
        pattern: str,
        special_tokens: dict[str, int] | None = None,
        roles: dict[str, str] | None = None,
    ) -> Tokenizer:
        """Build from tiktoken-style ranks: ``ranks[i]`` is the byte piece with rank/ID ``i``."""
        return cls(ranks_spec(ranks, pattern=pattern, special_tokens=special_tokens, roles=roles))

    @classmethod
    def from_tiktoken(
        cls,
        path: str | os.PathLike[str],
        *,
        pattern: str | None = None,
        special_tokens: dict[str, int] | None = None,
        roles: dict[str, str] | None = None,
    ) -> Tokenizer:
        """Load a ``*.tiktoken`` rank file (tiktoken's merge semantics are kept exactly).

        A standard file (cl100k_base, o200k_base, ..., recognized by its SHA-256) gets
        tiktoken's pattern and special tokens for whatever is not passed; any other file
        gets ``pattern`` (default ``"gpt4"``) and the ``special_tokens`` passed.

        Deprecated alias of ``tokenpact.files.from_tiktoken``."""
        tok: Tokenizer = _files().from_tiktoken(
            path, pattern=pattern, special_tokens=special_tokens, roles=roles, cls=cls
        )
        return tok

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], *, pattern: str | None = None, verify: bool = True
    ) -> Tokenizer:
        """Load an artifact directory, ``tokenpact.json``, ``tokenizer.json``, ``*.tiktoken``
        or a SentencePiece ``.model``.

        A ``.model`` file is told apart from a tiktoken rank file (Llama 3 ships one named
        ``tokenizer.model``) by its content: protobuf versus base64 lines. A directory's
        ``training.json`` (written by :meth:`save` for trained tokenizers) becomes
        ``training``.

        A directory saved by :meth:`save` is checked against its ``manifest.json`` and
        ``golden.json`` (pass ``verify=False`` to skip); drift raises ContractError.

        Deprecated alias of ``tp.load(path, pattern=..., verify=...)``.
        """
        tok: Tokenizer = _files().load(path, pattern=pattern, verify=verify, cls=cls)
        return tok

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Tokenizer:
        """HF ``tokenizers``' name of :meth:`load`: any file or directory ``load`` reads."""
        return cls.load(path)

    @classmethod
    def from_pretrained(cls, name_or_path: str | os.PathLike[str]) -> Tokenizer:
        """transformers' name: a local model directory (``tokenizer.json`` with its
        ``tokenizer_config.json``: special tokens, chat template), any file :meth:`load`
        reads, or a Hub model ID already in the local Hugging Face cache. Nothing is
        downloaded: a Hub ID not cached raises ArtifactError naming how to fetch it.

        Deprecated alias of ``tokenpact.files.from_pretrained``."""
        tok: Tokenizer = _files().from_pretrained(name_or_path, cls=cls)
        return tok

    def save_pretrained(self, directory: str | os.PathLike[str]) -> Path:
        """Write a directory transformers' ``AutoTokenizer.from_pretrained`` loads with
        identical IDs and chat template: ``tokenizer.json`` and ``tokenizer_config.json``
        (``chat_template.jinja`` too when the source had one). Returns the directory.

        Deprecated alias of ``tokenpact.files.save_pretrained``."""
        written: Path = _files().save_pretrained(self, directory)
        return written

    @classmethod
    def from_sentencepiece(cls, path: str | os.PathLike[str]) -> Tokenizer:
        """Load a SentencePiece ``.model`` (Unigram, BPE, char or word); IDs match
        ``sentencepiece``.

        ``sentencepiece`` itself is not needed: the protobuf is decoded by tokenpact.
        Deprecated alias of ``tokenpact.files.from_sentencepiece``.
        """
        tok: Tokenizer = _files().from_sentencepiece(path)
        return tok

    @classmethod
    def from_hf(cls, path: str | os.PathLike[str]) -> Tokenizer:
        """Load a Hugging Face ``tokenizer.json`` (file or directory); IDs match HF.
        Deprecated alias of ``tokenpact.files.from_hf``."""
        tok: Tokenizer = _files().from_hf(path)
        return tok

    @classmethod
    def from_components(
        cls,
        model: Any,
        *,
        normalizer: Any = None,
        pre_tokenizer: Any = None,
        post_processor: Any = None,
        decoder: Any = None,
        added_tokens: Iterable[Any] = (),
        config: dict[str, Any] | None = None,
    ) -> Tokenizer:
        """Assemble a tokenizer from :mod:`tokenpact.components` objects (validated and
        built exactly like the equivalent ``tokenizer.json``); ``config`` is an optional
        ``tokenizer_config.json`` dict (roles, chat template). Deprecated alias of
        ``tokenpact.files.from_components``."""
        tok: Tokenizer = _files().from_components(
            model,
            normalizer=normalizer,
            pre_tokenizer=pre_tokenizer,
            post_processor=post_processor,
            decoder=decoder,
            added_tokens=added_tokens,
            config=config,
        )
        return tok

    def components(self) -> Pipeline:
        """This tokenizer's stages as a :class:`tokenpact.components.Pipeline`
        (``tokenpact.files.components``)."""
        pipeline: Pipeline = _files().components(self)
        return pipeline

    # ------------------------------------------------------------------ properties
    @property
    def vocab_size(self) -> int:
        """Number of IDs: model vocabulary plus special and added tokens (max ID + 1)."""
        return max(int(self._core.model_size()), self._special.max_id + 1)

    @property
    def pattern(self) -> str:
        return self._pattern

    @property
    def pattern_name(self) -> str | None:
        return self._pattern_name

    @property
    def semantics(self) -> str:
        """The model's merge/segmentation semantics (``spec.kind``'s tag)."""
        return self._spec.kind.value

    @property
    def spec(self) -> TokenizerSpec:
        """The typed description of this tokenizer's behaviour (:mod:`tokenpact.core`)."""
        return self._spec

    @property
    def provenance(self) -> Provenance:
        """Where this tokenizer came from: format, exact source files, training record."""
        return self._provenance

    @property
    def special_tokens(self) -> dict[str, int]:
        return dict(self._special_ids)

    @property
    def special_token_roles(self) -> dict[str, str]:
        return dict(self._roles)

    def _role_id(self, role: str) -> int | None:
        return next((i for t, i in self._specials if t.role == role), None)

    @property
    def bos_id(self) -> int | None:
        return self._role_id("bos")

    @property
    def eos_id(self) -> int | None:
        return self._role_id("eos")

    @property
    def pad_id(self) -> int | None:
        return self._role_id("pad")

    @property
    def merges(self) -> list[tuple[int, int]]:
        return [tuple(m) for m in self._core.merges()]  # type: ignore[misc]

    @property
    def training(self) -> dict[str, Any] | None:
        training = self._provenance.training
        return None if training is None else dict(training)

    @property
    def post_processor(self) -> dict[str, Any] | None:
        post = self._spec.post_processor
        return None if post is None else post.to_config()

    @property
    def padding(self) -> Padding | None:
        """The artifact's padding policy (None: none); ``encode_structured`` and
        ``encode_structured_batch`` apply it when a call passes no ``padding``."""
        return self._spec.padding

    @property
    def truncation(self) -> Truncation | None:
        """The artifact's truncation policy (None: none); ``encode_structured`` and
        ``encode_structured_batch`` apply it when a call passes no ``truncation``."""
        return self._spec.truncation

    def with_padding(self, padding: Padding | None) -> Tokenizer:
        """This tokenizer with ``padding`` as its padding policy (None removes it).

        The policy is behaviour: it is in ``to_config()``, the semantic hash, the
        manifest and the saved artifact (``policy.json``), so two artifacts that pad
        differently never share an identity."""
        if padding is not None and not isinstance(padding, Padding):
            raise ConfigError(f"padding must be a tokenpact.Padding or None, not {padding!r}")
        return self._with_spec(self._spec.replace(padding=padding))

    def with_truncation(self, truncation: Truncation | None) -> Tokenizer:
        """This tokenizer with ``truncation`` as its truncation policy (None removes it);
        recorded like :meth:`with_padding`'s policy."""
        if truncation is not None and not isinstance(truncation, Truncation):
            raise ConfigError(
                f"truncation must be a tokenpact.Truncation or None, not {truncation!r}"
            )
        return self._with_spec(self._spec.replace(truncation=truncation))

    @property
    def literal_text(self) -> LiteralTextPolicy:
        """The contract's literal-text policy (``LiteralTextPolicy()``, ``ordinary``, unless
        set by :meth:`with_literal_text`); ``tok.literal_text.encode(tok, text)`` applies it."""
        return self._spec.literal_text

    def with_literal_text(self, policy: LiteralTextPolicy) -> Tokenizer:
        """This tokenizer with ``policy`` as its contract's literal-text policy.

        A policy other than the default is behaviour the contract declares: it is in
        ``to_config()``, the semantic hash, the manifest and the saved artifact
        (``policy.json``), so two artifacts that answer literal marker text differently
        never share an identity; the default leaves every identity unchanged."""
        if not isinstance(policy, LiteralTextPolicy):
            raise ConfigError(f"policy must be a tokenpact.LiteralTextPolicy, not {policy!r}")
        policy._pattern(self)  # the escape must not occur in a control spelling
        return self._with_spec(self._spec.replace(literal_text=policy))

    def _with_spec(self, spec: TokenizerSpec) -> Tokenizer:
        return type(self)(spec, self._given_engine, self._provenance, **self._pickle_kwargs())

    @property
    def added_tokens(self) -> dict[str, int]:
        """Non-special added tokens: content, matched in text by every call as Hugging
        Face ``tokenizers`` matches them (flags included)."""
        return dict(self._special.added)

    @property
    def source(self) -> dict[str, Any]:
        """Where this tokenizer came from (format, path, flags of the source file)."""
        return dict(self._provenance.source)

    @property
    def unicode_version(self) -> str:
        """Unicode version of the built-in scanners' character tables (e.g. "17.0.0")."""
        return _native.unicode_tables_version().split(";")[-1]

    @property
    def unicode_tables(self) -> str:
        """The `regex` release whose character classes the built-in scanners reproduce."""
        return "regex " + _native.unicode_tables_version().split(";")[0]

    @property
    def semantic_hash(self) -> str:
        """Hash of this tokenizer's behaviour (unchanged by reformatting its files)."""
        cached = getattr(self, "_semantic_hash", None)
        if cached is None:
            cached = contract.semantic_hash(self)
            self._semantic_hash = cached
        return cached

    @property
    def release_hash(self) -> str:
        """Semantic hash bound to the exact bytes of the files :meth:`save` writes
        (``tokenpact.files.release_hash``)."""
        digest: str = _files().release_hash(self)
        return digest

    @property
    def manifest(self) -> dict[str, Any]:
        """The ``manifest.json`` :meth:`save` would write (``tokenpact.files.manifest``)."""
        manifest: dict[str, Any] = _files().manifest(self)
        return manifest

    @property
    def capabilities(self) -> frozenset[Capability]:
        """What this tokenizer's engine offers beyond encoding, decoding and lookups, as
        the engine declares it (:class:`~tokenpact.core.Capability`)."""
        return self._capabilities

    @property
    def engine(self) -> Any:
        """The native engine behind this tokenizer (opaque; runtime engines such as
        :class:`tokenpact.runtime.IncrementalDecoder` run on it directly)."""
        return self._core

    def to_config(self) -> dict[str, Any]:
        """Canonical description of this tokenizer's behaviour (what the semantic hash
        covers): ``spec.to_config()``."""
        return self._spec.to_config()

    def vocab(self) -> list[bytes]:
        """Byte piece of every model ID (special tokens excluded)."""
        return list(self._core.vocab())

    # ------------------------------------------------------------------ encoding
    def _post(self, ids: list[int]) -> list[int]:
        return apply_single(self._spec.post_processor, self._special_ids, ids)

    def boundary_ids(
        self,
        content: Sequence[int],
        *,
        add_special_tokens: bool = False,
        bos: bool | None = None,
        eos: bool | None = None,
    ) -> tuple[list[int], list[int]]:
        """The control IDs ``encode`` puts before and after ``content`` (the IDs of the
        text alone): the post-processor's when ``add_special_tokens``, then the explicit
        ``bos``/``eos`` flags, which win (see :meth:`encode`)."""
        if add_special_tokens:
            before, after = single_boundaries(self._spec.post_processor, self._special_ids)
        else:
            before, after = [], []
        if bos is None and eos is None:
            return before, after
        return with_boundaries(
            list(content[:1]) + list(content[-1:]) if content else [],
            before,
            after,
            bos=bos,
            eos=eos,
            bos_id=self.bos_id,
            eos_id=self.eos_id,
        )

    def encode(
        self,
        text: str,
        *,
        allowed_special: SpecialSpec = (),
        disallowed_special: SpecialSpec = (),
        add_special_tokens: bool = False,
        bos: bool | None = None,
        eos: bool | None = None,
    ) -> list[int]:
        """Encode text. Ordinary added tokens match as in Hugging Face ``tokenizers``;
        control (special) spellings are ordinary text unless ``allowed_special``.

        ``add_special_tokens`` applies the post-processor's template. ``bos``/``eos``
        are explicit flags, independent of the template, and they win over it:
        ``bos=True`` makes the IDs start with exactly one BOS (added unless the template
        or an allowed spelling at the start of the text already gives one; never two),
        ``bos=False`` drops the template's BOS; ``eos`` likewise at the end. ``None``
        (the default) leaves the template's choice. A flag needs a special token with
        that role (ConfigError otherwise).

        The tokenizer's padding / truncation policy (``tok.padding`` /
        ``tok.truncation``, e.g. imported from a ``tokenizer.json``) is not applied here:
        ``encode`` returns every content ID, never padded or cut, even where Hugging
        Face's ``encode`` pads and truncates. ``encode_structured`` applies the policy."""
        text = _text_arg(text)
        if allowed_special or disallowed_special:
            allowed, disallowed = self._resolve_policy(allowed_special, disallowed_special)
        else:  # the default policy, inline: ordinary added tokens only, nothing refused
            allowed, disallowed = self._default_matcher, None
        try:
            if disallowed is not None:
                check_disallowed(text, disallowed)
            ids: list[int] = self._core.encode(text, allowed)
        except UnicodeEncodeError as exc:
            raise _surrogate_error(text, exc) from None
        if bos is not None or eos is not None:
            before, after = self.boundary_ids(
                ids, add_special_tokens=add_special_tokens, bos=bos, eos=eos
            )
            return [*before, *ids, *after]
        return self._post(ids) if add_special_tokens else ids

    # ------------------------------------------------------------------ batch encoding
    # Many texts on the native engine's threads, the GIL released; each checks the
    # special-token policy of every text first, and a lone surrogate in any text is one
    # typed error.
    def encode_batch(
        self,
        texts: Iterable[str],
        *,
        allowed_special: SpecialSpec = (),
        disallowed_special: SpecialSpec = (),
        add_special_tokens: bool = False,
        threads: int | None = None,
        bos: bool | None = None,
        eos: bool | None = None,
    ) -> list[list[int]]:
        """Encode many texts in parallel (GIL released); same result as ``encode`` each
        (``bos``/``eos``: its explicit boundary flags). Like ``encode``, it applies no
        padding or truncation policy: ``encode_structured_batch`` does."""
        out: list[list[int]] = self.batch_call(
            self._core.encode_batch,
            texts,
            allowed_special=allowed_special,
            disallowed_special=disallowed_special,
            threads=threads,
        )
        if bos is not None or eos is not None:
            bounded = []
            for ids in out:
                before, after = self.boundary_ids(
                    ids, add_special_tokens=add_special_tokens, bos=bos, eos=eos
                )
                bounded.append([*before, *ids, *after])
            return bounded
        return [self._post(ids) for ids in out] if add_special_tokens else out

    def encode_batch_flat(
        self,
        texts: Iterable[str],
        *,
        allowed_special: SpecialSpec = (),
        disallowed_special: SpecialSpec = (),
        threads: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Encode many texts into flat numpy arrays ``(ids, offsets)``.

        ``ids[offsets[i]:offsets[i + 1]]`` are the IDs of text ``i``; no per-token objects.
        """
        flat: tuple[np.ndarray, np.ndarray] = self.batch_call(
            self._core.encode_batch_flat,
            texts,
            allowed_special=allowed_special,
            disallowed_special=disallowed_special,
            threads=threads,
        )
        return flat

    def encode_batch_flat_digests(
        self,
        texts: Iterable[str],
        *,
        allowed_special: SpecialSpec = (),
        disallowed_special: SpecialSpec = (),
        threads: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Deprecated: ``tokenpact.data.chunk_encoding.encode_flat_digests(tok, texts)``.

        :meth:`encode_batch_flat` plus ``(sha256, sizes)``: the SHA-256 of each text's
        UTF-8 (an ``(n, 32)`` uint8 array) and its UTF-8 size (int64).
        """
        warnings.warn(
            "Tokenizer.encode_batch_flat_digests is deprecated and goes in a later release; "
            "use tokenpact.data.chunk_encoding.encode_flat_digests(tok, texts) (the per-text "
            "digests are a dataset encoder's option)",
            DeprecationWarning,
            stacklevel=2,
        )
        flat: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] = self.batch_call(
            self._core.encode_batch_flat_digests,
            texts,
            allowed_special=allowed_special,
            disallowed_special=disallowed_special,
            threads=threads,
        )
        return flat

    def batch_call(
        self,
        method: Any,
        texts: Iterable[str],
        *,
        allowed_special: SpecialSpec = (),
        disallowed_special: SpecialSpec = (),
        threads: int | None = None,
    ) -> Any:
        """Run ``method``, a batch method of :attr:`engine` taking ``(texts, allowed,
        threads)``, under this tokenizer's special-token policy: the texts are checked
        first (a disallowed spelling raises), and a lone surrogate is a typed error.

        ``encode_batch`` and ``encode_batch_flat`` are this call on the engine's methods
        of those names; the dataset encoder's per-text digests are another.
        """
        items = _texts_arg(texts, "encode_batch")
        allowed, disallowed = self._resolve_policy(allowed_special, disallowed_special)
        try:
            if disallowed is not None:
                for t in items:
                    check_disallowed(t, disallowed)
            return method(items, allowed, _threads_arg(threads))
        except UnicodeEncodeError as exc:
            raise InvalidInputError(f"a text contains a lone surrogate: {exc}") from None

    def normalize(self, text: str) -> str:
        """The normalizer's output for ``text`` (``text`` itself when there is none): the
        text ``encode`` segments. A SentencePiece model's normalizer (rules, whitespace
        cleanup) is applied and its ``▁`` written back as spaces, without the dummy
        prefix, so ``normalize(text)`` is what ``decode(encode(text))`` gives when every
        character has a piece."""
        node = self._spec.normalizer_json
        if node is None:
            model = self._spec.sentencepiece_model
            if model is None or not hasattr(self._core, "normalize"):
                return _text_arg(text)
            out = str(self._core.normalize(_text_arg(text)))
            if model.normalizer_spec.add_dummy_prefix:
                out = out.removeprefix("\u2581")
            return out.replace("\u2581", " ") if model.normalizer_spec.escape_whitespaces else out
        return str(_native.normalize_str(node, _text_arg(text))[0])

    def pretokenize(self, text: str) -> list[tuple[int, int]]:
        """Codepoint spans of the pre-tokens of ``text`` (special tokens not matched).

        With a normalizer, spans are pre-tokens of the normalized text mapped back to
        the raw text."""
        if self._spec.pretokenizes_on_engine:
            return [tuple(s) for s in _native.core_pretokenize(self._core, _text_arg(text))]  # type: ignore[misc]
        return _native.pretokenize(_text_arg(text), self._pattern, self._pattern_name)

    # ------------------------------------------------------------------ decoding
    _ids = token_ids.id_array

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """Concatenated byte pieces of ``ids`` (no UTF-8 decoding)."""
        return bytes(self._core.decode_bytes(self._ids(ids)))

    def decode(
        self,
        ids: Iterable[int],
        *,
        errors: Literal["strict", "replace"] = "strict",
        skip_special_tokens: bool | None = None,
        special_token_policy: Literal["keep", "ignore", "raise"] | None = None,
    ) -> str:
        """Decode IDs to text. ``errors="strict"`` raises DecodeError on invalid UTF-8.

        Special-token IDs follow the spec's ``special_decode`` policy (``"keep"``: their
        spellings, the default; ``"ignore"``: dropped, as a Tekken file says;
        ``"raise"``: DecodeError) unless ``skip_special_tokens`` says otherwise (True:
        drop them, as in HF tokenizers; False: keep them). ``special_token_policy`` (a
        policy name) is the deprecated keyword of the Tekken tokenizer, kept for one
        release."""
        if errors not in ("strict", "replace"):
            raise ConfigError(f'errors must be "strict" or "replace", not {errors!r}')
        if special_token_policy is not None:
            if skip_special_tokens is not None:
                raise ConfigError("pass skip_special_tokens or special_token_policy, not both")
            if special_token_policy not in SPECIAL_DECODE:
                raise ConfigError(
                    f"special_token_policy must be one of {SPECIAL_DECODE}, "
                    f"got {special_token_policy!r}"
                )
            policy: str = special_token_policy
        elif skip_special_tokens is None:
            policy = self._spec.special_decode
        else:
            policy = "ignore" if skip_special_tokens else "keep"
        if policy != "keep":
            arr = self._ids(ids)
            specials = np.fromiter(self._special_ids.values(), dtype=np.uint32)
            special = np.isin(arr, specials)
            if policy == "raise" and special.any():
                raise DecodeError(
                    f"the IDs contain special tokens {arr[special][:5].tolist()}; drop them, "
                    "or decode with skip_special_tokens=True (drop) or False (keep)"
                )
            ids = arr[~special]
        if errors == "replace" and Capability.SENTENCEPIECE_DECODE in self._capabilities:
            # SentencePiece's own replacement rule: one U+FFFD per ill-formed byte.
            return str(self._core.decode_text(self._ids(ids)))
        data = self.decode_bytes(ids)
        if errors == "replace":
            return data.decode("utf-8", errors="replace")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise token_ids.utf8_error(data, exc) from None

    def token_bytes(self, token_id: int) -> bytes:
        """Byte piece of one ID (a special token's spelling as UTF-8)."""
        i = int(self._ids([token_id])[0])
        piece = self._core.token_bytes(i)
        if piece is None:
            raise UnknownTokenError(
                f"token ID {i} is not in this tokenizer (IDs are 0..{self.vocab_size - 1})"
            )
        return bytes(piece)

    def token_id(self, piece: str | bytes) -> int:
        """ID of a piece given as bytes, or as str (a special spelling or UTF-8 text)."""
        if isinstance(piece, str):
            if piece in self._special_ids:
                return self._special_ids[piece]
            data = piece.encode("utf-8")
        else:
            data = bytes(piece)
        index = self._piece_index
        if data not in index:
            raise UnknownTokenError(
                f"{piece!r} is not a single token of this tokenizer; use encode() for text"
            )
        return index[data]

    @cached_property
    def _piece_index(self) -> dict[bytes, int]:
        index: dict[bytes, int] = {}
        for i, p in enumerate(self._core.vocab()):
            index.setdefault(bytes(p), i)
        return index

    # ------------------------------------------------------------------ segmentation lattice
    def _require(self, capability: Capability, call: str) -> None:
        if capability not in self._capabilities:
            raise CapabilityError(
                f"{call} needs the {capability.value!r} capability, which this "
                f"{self.semantics} tokenizer's engine lacks: only Unigram models have a "
                "segmentation lattice (check tok.capabilities first)",
                capability.value,
            )

    def nbest(self, text: str, n: int) -> list[tuple[list[int], float]]:
        """The ``n`` most probable segmentations of ``text`` with their log probabilities,
        best first (the :attr:`Capability.NBEST` of every Unigram model: SentencePiece's
        ``nbest_encode_as_ids``). Special spellings are ordinary text here."""
        self._require(Capability.NBEST, "nbest")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ConfigError(f"n must be an int >= 0, got {n!r}")
        text = _text_arg(text)
        try:
            best = self._core.nbest(text, n)
        except UnicodeEncodeError as exc:
            raise _surrogate_error(text, exc) from None
        return [(list(ids), float(score)) for ids, score in best]

    def log_likelihood(self, text: str) -> float:
        """log P(text): the exact marginal over all segmentations of every word (the
        :attr:`Capability.LOG_LIKELIHOOD` of every Unigram model)."""
        self._require(Capability.LOG_LIKELIHOOD, "log_likelihood")
        text = _text_arg(text)
        try:
            return float(self._core.log_likelihood(text))
        except UnicodeEncodeError as exc:
            raise _surrogate_error(text, exc) from None

    def sample(
        self,
        text: str,
        *,
        alpha: float = 1.0,
        key: SampleKey | None = None,
        generator: str = RNG_NAME,
        seed: int | None = None,
    ) -> list[int]:
        """Draw a segmentation of ``text`` from P(z)^alpha (the
        :attr:`Capability.SAMPLE` of every Unigram model).

        ``generator`` names the random numbers: ``"splitmix64-counter/1"`` (the default)
        draws from ``key``'s counter-based stream (or ``SampleKey(seed=seed)``'s), so the
        draw is a function of ``(text, key)`` alone and replays from a
        :meth:`sampling_record`; ``"lcg64_v1"`` is the first draw of :meth:`samples`
        with that ``seed``. See ``tokenpact.stochastic``."""
        if generator == LCG64_NAME:
            if key is not None or seed is None:
                raise ConfigError("lcg64_v1 draws from a seed, not a SampleKey; pass seed=")
            return self.samples(text, 1, alpha=alpha, generator=generator, seed=seed)[0]
        self._require(Capability.SAMPLE, "sample")
        _check_generator(generator)
        if key is None:
            if seed is None:
                raise ConfigError("sample needs key=SampleKey(...) (or seed=) to draw from")
            key = SampleKey(seed=seed)
        elif seed is not None:
            raise ConfigError("pass key= or seed=, not both")
        text = _text_arg(text)
        _check_alpha(alpha)
        try:
            return list(self._core.sample(text, float(alpha), key.fields()))
        except UnicodeEncodeError as exc:
            raise _surrogate_error(text, exc) from None

    def samples(
        self,
        text: str,
        count: int,
        *,
        alpha: float = 1.0,
        generator: str = LCG64_NAME,
        seed: int,
    ) -> list[list[int]]:
        """``count`` successive segmentations of ``text`` drawn from P(z)^alpha.

        ``"lcg64_v1"`` (the default): one sequential stream from ``seed``; each draw is
        read as the exact inverse CDF over a word's segmentations in lexicographic
        ID-path order (one draw per word, words in text order), the rule of the
        specification's worked Unigram sampling trace. ``"splitmix64-counter/1"``: draw
        ``i`` is :meth:`sample` with ``SampleKey(seed=seed, sample_id=i)``."""
        self._require(Capability.SAMPLE, "samples")
        _check_generator(generator)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ConfigError(f"count must be an int >= 0, got {count!r}")
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
            raise ConfigError(f"seed must be an int in [0, 2**64), got {seed!r}")
        if generator == RNG_NAME:
            return [
                self.sample(text, alpha=alpha, key=SampleKey(seed=seed, sample_id=i))
                for i in range(count)
            ]
        text = _text_arg(text)
        _check_alpha(alpha)
        try:
            drawn = self._core.sample_lcg64(text, float(alpha), seed, count)
        except UnicodeEncodeError as exc:
            raise _surrogate_error(text, exc) from None
        return [list(ids) for ids in drawn]

    def sampling_record(self, alpha: float, key: SampleKey) -> dict[str, Any]:
        """The stochastic segmentation manifest of ``sample(text, alpha=alpha, key=key)``;
        :func:`tokenpact.contract.replay_segmentation` recomputes the sample from it."""
        self._require(Capability.SAMPLE, "sampling_record")
        from ..contract.segmentation import segmentation_manifest

        manifest = segmentation_manifest(self, method="unigram_sample", parameter=alpha, key=key)
        return manifest.to_json()

    # ------------------------------------------------------------------ special-token policy
    @property
    def added_token_flags(self) -> dict[str, AddedTokenFlags]:
        """Hugging Face matching flags of the added tokens that have any (see
        :class:`AddedTokenFlags`); every other added token is matched plainly."""
        return dict(self._special.flags)

    @cached_property
    def _default_matcher(self) -> Any:
        """The matcher of the default policy (ordinary added tokens only; None without),
        kept here so the hot encode path reads it in one attribute lookup."""
        return self._special.default_matcher

    def special_matcher(
        self, controls: Iterable[str], *, promoted: Iterable[str] = (), find_only: bool = False
    ) -> Any:
        """The native matcher (``_native.SpecialMatcher``, cached per set) of a call that
        lets the added tokens ``controls`` be control tokens: every ordinary added token
        matches too, and ``promoted`` ordinary tokens count as controls (None when
        nothing can match). Engine calls on :attr:`engine` take it where they take a
        special-token policy (chat rendering encodes with it). ``find_only=True``: a
        matcher of ``controls`` alone, written as they are, whose ``find_first(text)``
        returns ``(UTF-8 byte start, spelling)`` of the first one in ``text``, or None.
        A spelling that is no added token raises
        :class:`~tokenpact.errors.UnknownTokenError`."""
        return self._special.special_matcher(controls, promoted=promoted, find_only=find_only)

    # ------------------------------------------------------------------ structured encoding
    def encode_structured(
        self,
        text: str,
        pair: str | None = None,
        *,
        allowed_special: SpecialSpec = (),
        disallowed_special: SpecialSpec = (),
        add_special_tokens: bool = False,
        coordinate: str = "raw_codepoints",
        untrusted_spans: Sequence[tuple[int, int]] = (),
        truncation: Truncation | Literal[False] | None = None,
        padding: Padding | Literal[False] | None = None,
    ) -> Encoding:
        """Encode with offsets, masks, origins and sequence metadata.

        Offsets point into the input in the declared ``coordinate``: the raw text
        (``raw_codepoints`` or ``raw_utf8_bytes``) or the normalized text
        ``tok.normalize(text)`` (``normalized_codepoints``: the normalized characters that
        came from the token's raw span). Control tokens inserted by the post-processor and
        PAD get empty offsets ``(0, 0)``, as Hugging Face reports them; ``span_offsets``
        gives ``None`` for them instead. ``pair`` is a second sequence
        (``sequence_ids`` 0/1, ``type_ids`` from the template). ``untrusted_spans`` are
        codepoint ranges of ``text`` (user content in a rendered chat, say) where special
        spellings are never recognized, even when ``allowed_special`` permits them
        elsewhere; the whole text is still pre-tokenized in one pass. ``truncation`` and
        ``padding`` are explicit policies (see :class:`Truncation`, :class:`Padding`); when
        omitted, the tokenizer's own policy applies (``tok.truncation`` / ``tok.padding``:
        set by ``with_truncation`` / ``with_padding``, or imported from a ``tokenizer.json``
        that sets them); ``False`` means none for this call, whatever the tokenizer's.
        """
        spec = self._spec
        return self._structured.encode(
            self,
            text,
            pair,
            allowed_special,
            disallowed_special,
            add_special_tokens,
            coordinate,
            untrusted_spans,
            _call_policy(truncation, spec.truncation),
            _call_policy(padding, spec.padding),
        )

    def encode_structured_batch(
        self,
        texts: Sequence[str],
        pairs: Sequence[str] | None = None,
        *,
        allowed_special: SpecialSpec = (),
        disallowed_special: SpecialSpec = (),
        add_special_tokens: bool = False,
        coordinate: str = "raw_codepoints",
        truncation: Truncation | Literal[False] | None = None,
        padding: Padding | Literal[False] | None = None,
    ) -> list[Encoding]:
        """``encode_structured`` for many texts; padding aligns the whole batch (the
        tokenizer's own policies apply when a call passes none; ``False``: none)."""
        spec = self._spec
        return self._structured.encode_batch(
            self,
            texts,
            pairs,
            allowed_special,
            disallowed_special,
            add_special_tokens,
            coordinate,
            _call_policy(truncation, spec.truncation),
            _call_policy(padding, spec.padding),
        )

    # ------------------------------------------------------------------ peer libraries' names
    # Hugging Face tokenizers' and tiktoken's names, with those libraries' meanings.
    def get_vocab(self) -> dict[str, int]:
        """Every token string and its ID, special and added tokens included (HF's
        ``get_vocab(with_added_tokens=True)``). Token strings follow Hugging Face: a
        byte-level BPE piece is spelled in GPT-2's byte-to-unicode alphabet (``"Ġthe"``),
        other pieces as their UTF-8 text, special and added tokens as their content."""
        return self._names.get_vocab()

    def token_to_id(self, token: str) -> int | None:
        """ID of a token string (HF spelling), or None when it is not one token."""
        return self._names.token_to_id(token)

    def id_to_token(self, token_id: int) -> str | None:
        """Token string of an ID (HF spelling), or None when the ID is not in use."""
        return self._names.id_to_token(token_id)

    def decode_batch(
        self,
        batch: Iterable[Iterable[int]],
        *,
        errors: Literal["strict", "replace"] = "strict",
        skip_special_tokens: bool | None = None,
    ) -> list[str]:
        """``decode`` of each ID sequence."""
        return [
            self.decode(ids, errors=errors, skip_special_tokens=skip_special_tokens)
            for ids in batch
        ]

    @property
    def n_vocab(self) -> int:
        """tiktoken's name: the number of IDs (largest ID + 1), same as ``vocab_size``."""
        return self.vocab_size

    def encode_ordinary(self, text: str) -> list[int]:
        """tiktoken's ``encode_ordinary``: every special spelling is plain text (the
        default policy of :meth:`encode`, named as tiktoken names it)."""
        return self.encode(text)

    def encode_ordinary_batch(
        self, texts: Iterable[str], *, num_threads: int | None = None
    ) -> list[list[int]]:
        """tiktoken's ``encode_ordinary_batch``."""
        return self.encode_batch(texts, threads=num_threads)

    @property
    def special_tokens_set(self) -> set[str]:
        """tiktoken's ``special_tokens_set``: the spellings of the special tokens."""
        return set(self._special_ids)

    @property
    def max_token_value(self) -> int:
        """tiktoken's ``max_token_value``: the largest ID in use."""
        return self.vocab_size - 1

    # transformers' and HF tokenizers' names.
    def __len__(self) -> int:
        """``len(tok)``, as ``len()`` of a transformers tokenizer: every ID, added tokens
        included (``vocab_size``)."""
        return self.vocab_size

    def __call__(
        self, text: str | Sequence[str], *, add_special_tokens: bool = True
    ) -> dict[str, Any]:
        """``tok(text)`` as a transformers tokenizer answers it: ``{"input_ids": [...],
        "attention_mask": [...]}`` with the post-processor's special tokens added; a list
        of texts gives lists of lists (padding, truncation and tensors:
        :class:`tokenpact.hf_adapter.TransformersTokenizer`)."""
        if isinstance(text, str):
            ids = self.encode(text, add_special_tokens=add_special_tokens)
            return {"input_ids": ids, "attention_mask": [1] * len(ids)}
        if not isinstance(text, Sequence):
            raise InvalidInputError(
                f"tok(text) takes a str or a list of str, not {type(text).__name__}"
            )
        batch = self.encode_batch(text, add_special_tokens=add_special_tokens)
        return {"input_ids": batch, "attention_mask": [[1] * len(ids) for ids in batch]}

    def get_vocab_size(self, with_added_tokens: bool = True) -> int:
        """HF ``tokenizers``' ``get_vocab_size``: IDs in use, added tokens included unless
        ``with_added_tokens=False`` (then the model's own vocabulary only)."""
        if with_added_tokens:
            return self.vocab_size
        return int(self._core.model_size())

    def convert_ids_to_tokens(
        self, ids: int | Iterable[int], skip_special_tokens: bool = False
    ) -> Any:
        """transformers' ``convert_ids_to_tokens``: token strings (HF spelling) of one ID
        or a sequence of IDs; an ID not in use raises UnknownTokenError."""
        token_of = self._names.token_of
        if isinstance(ids, int):
            return token_of(int(ids))
        specials = self._special.special_id_set
        return [token_of(int(i)) for i in ids if not (skip_special_tokens and int(i) in specials)]

    def convert_tokens_to_ids(self, tokens: str | Iterable[str]) -> Any:
        """transformers' ``convert_tokens_to_ids``: the ID of one token string or of each
        in a sequence; a string that is no single token maps to the unknown token's ID,
        or to None without one, as in transformers."""
        if isinstance(tokens, str):
            return self._one_id(tokens)
        return [self._one_id(t) for t in tokens]

    def _one_id(self, token: str) -> int | None:
        found = self._names.index.get(token)
        return found if found is not None else self.unk_token_id

    def batch_decode(
        self,
        sequences: Iterable[Iterable[int]],
        skip_special_tokens: bool | None = None,
        *,
        errors: Literal["strict", "replace"] = "replace",
    ) -> list[str]:
        """transformers' ``batch_decode``: ``decode`` of each sequence. Invalid UTF-8
        becomes U+FFFD as in transformers (``errors="strict"`` raises DecodeError)."""
        return [
            self.decode(ids, errors=errors, skip_special_tokens=skip_special_tokens)
            for ids in sequences
        ]

    @property
    def unk_token_id(self) -> int | None:
        """The ID of the special token with role ``unk``, else a SentencePiece model's
        unknown piece (None without either)."""
        found = self._role_id("unk")
        model = self._spec.sentencepiece_model
        if found is None and model is not None:
            unk = int(model.trainer_spec.unk_id)
            return unk if 0 <= unk < len(model.pieces) else None
        return found

    @property
    def bos_token_id(self) -> int | None:
        """transformers' name of :attr:`bos_id`."""
        return self.bos_id

    @property
    def eos_token_id(self) -> int | None:
        """transformers' name of :attr:`eos_id`."""
        return self.eos_id

    @property
    def pad_token_id(self) -> int | None:
        """transformers' name of :attr:`pad_id`."""
        return self.pad_id

    # ------------------------------------------------------------------ artifacts
    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Write the artifact directory: the tokenizer file (``tokenpact.json``, or the
        exact ``tokenizer.json`` / ``tokenizer.model`` it was built from, plus
        ``training.json``), ``manifest.json`` and ``golden.json``, as one atomic commit.
        Deprecated alias of ``tp.save(tok, directory)``."""
        written: Path = _files().save(self, directory)
        return written

    def export_hf(self, path: str | os.PathLike[str]) -> Path:
        """Write a Hugging Face ``tokenizer.json`` that `tokenizers` loads with identical IDs.
        Deprecated alias of ``tp.export(tok, "hf", path)``."""
        written: Path = _files().export(self, "hf", path)
        return written

    def export_sentencepiece(self, path: str | os.PathLike[str]) -> Path:
        """Write the SentencePiece ``.model`` of a SentencePiece-backed tokenizer (a
        directory gets ``dir/tokenizer.model``); ``sentencepiece`` loads it with equal IDs.
        Deprecated alias of ``tp.export(tok, "sentencepiece", path)``."""
        written: Path = _files().export(self, "sentencepiece", path)
        return written

    def export_tiktoken(self, path: str | os.PathLike[str]) -> None:
        """Write the byte pieces as a ``*.tiktoken`` rank file (ID == rank).

        Only exact for models whose IDs are ranks in tiktoken's sense; a ranked-merge
        model is exported with ``rank = ID`` which tiktoken applies with its own rule.
        Other models (WordPiece, Unigram, SentencePiece, normalizers) raise ConfigError
        instead of writing a file that encodes differently. Deprecated alias of
        ``tp.export(tok, "tiktoken", path)``.
        """
        _files().export(self, "tiktoken", path)

    def __repr__(self) -> str:
        return (
            f"Tokenizer(vocab_size={self.vocab_size}, pattern={self._pattern_name or 'custom'}, "
            f"semantics={self.semantics}, special_tokens={len(self._specials)})"
        )
