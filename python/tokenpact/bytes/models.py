"""Declared, hashable configurations of byte and character models and their accounts.

Each configuration is a frozen dataclass with keyword-only options, ``to_config()`` (the
canonical dict its :attr:`hash` covers) and ``account(text)`` returning a
:class:`PositionAccount`. The numbers follow the ByT5, CANINE, Charformer, MEGABYTE and
BLT papers.

>>> text = "A naïve cat.\\n"
>>> [m.account(text).n_global_squared for m in (ByT5Config(), CanineConfig(stride=4),
...  CharformerConfig(max_block=4, downsample=2), MegabyteConfig(patch_width=4))]
[196, 16, 49, 16]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..errors import ConfigError, InvalidInputError
from .accounting import PositionAccount, ceil_div, config_hash
from .patchers import Patcher, check_starts
from .units import TextUnits

# Hugging Face's ByT5Tokenizer: ids 0..2 are <pad>, </s>, <unk>; byte b is id b + 3.
BYT5_SPECIALS = ("<pad>", "</s>", "<unk>")
# Hugging Face's CanineTokenizer: [CLS] and [SEP] are private-use code points.
CANINE_CLS = 0xE000
CANINE_SEP = 0xE001


def _positive(name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")
    return value


def _non_negative(name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError(f"{name} must be an integer >= 0, got {value!r}")
    return value


class _Hashable:
    def to_config(self) -> dict[str, Any]:
        raise NotImplementedError

    @property
    def hash(self) -> str:
        """Framed SHA-256 of :meth:`to_config` (domain ``byte-model-config-v1``)."""
        return config_hash(self.to_config())


@dataclass(frozen=True, kw_only=True)
class ByT5Config(_Hashable):
    """ByT5: UTF-8 bytes straight into a T5 stack; ``n_raw == n_global == n_bytes``.

    ``add_eos`` appends ``</s>`` (Hugging Face's tokenizer does by default; the
    position counts in docs/BYTES.md do not).
    """

    add_eos: bool = False
    num_special_ids: int = len(BYT5_SPECIALS)

    def __post_init__(self) -> None:
        _positive("num_special_ids", self.num_special_ids)

    def to_config(self) -> dict[str, Any]:
        return {"model": "byt5", "add_eos": self.add_eos, "num_special_ids": self.num_special_ids}

    def ids(self, text: str) -> list[int]:
        """Model input IDs: byte ``b`` becomes ``b + num_special_ids``."""
        ids = [b + self.num_special_ids for b in TextUnits.of(text).data]
        return ids + [1] if self.add_eos else ids

    def account(self, text: str) -> PositionAccount:
        n = TextUnits.of(text).n_bytes + int(self.add_eos)
        return PositionAccount(
            "byt5", "bytes", n, 0, n, n, tuple(range(n)), self.hash, {"byte_vocab_rows": 256}
        )


@dataclass(frozen=True, kw_only=True)
class CanineConfig(_Hashable):
    """CANINE: hashed code-point embeddings, local transformer, stride-``r`` downsampling,
    deep stack on ``ceil(n / r)`` positions, upsampling back to characters.

    Hash functions and bucket counts are checkpoint state, so they are part of the hash.
    """

    stride: int = 4
    local_block: int = 128
    num_hash_functions: int = 8
    num_hash_buckets: int = 16384
    add_cls_sep: bool = False

    def __post_init__(self) -> None:
        for name in ("stride", "local_block", "num_hash_functions", "num_hash_buckets"):
            _positive(name, getattr(self, name))

    def to_config(self) -> dict[str, Any]:
        return {
            "model": "canine",
            "stride": self.stride,
            "local_block": self.local_block,
            "num_hash_functions": self.num_hash_functions,
            "num_hash_buckets": self.num_hash_buckets,
            "add_cls_sep": self.add_cls_sep,
        }

    def ids(self, text: str) -> list[int]:
        """Code-point IDs (``[CLS]``/``[SEP]`` as U+E000/U+E001 when ``add_cls_sep``)."""
        TextUnits.of(text)  # rejects lone surrogates with a typed error
        ids = [ord(ch) for ch in text]
        return [CANINE_CLS, *ids, CANINE_SEP] if self.add_cls_sep else ids

    def account(self, text: str) -> PositionAccount:
        n = len(self.ids(text))
        starts = tuple(range(0, n, self.stride))
        return PositionAccount(
            "canine",
            "code_points",
            n,
            n,
            ceil_div(n, self.stride),
            n,
            starts,
            self.hash,
            {"local_blocks": ceil_div(n, self.local_block)},
        )


@dataclass(frozen=True, kw_only=True)
class CharformerConfig(_Hashable):
    """Charformer GBST: candidate blocks of widths ``1..max_block`` (stride = width, padded),
    a soft mixture per position, then mean pooling by ``downsample``.

    The mixture is latent: it produces no hard segmentation and no portable IDs.
    """

    max_block: int = 4
    downsample: int = 2
    conv_before_blocks: bool = True

    def __post_init__(self) -> None:
        _positive("max_block", self.max_block)
        _positive("downsample", self.downsample)

    def to_config(self) -> dict[str, Any]:
        return {
            "model": "charformer",
            "max_block": self.max_block,
            "downsample": self.downsample,
            "conv_before_blocks": self.conv_before_blocks,
            "unit": "bytes",
        }

    def candidate_blocks(self, length: int) -> int:
        """``sum(ceil(L / b) for b in 1..max_block)``: block representations enumerated."""
        return sum(ceil_div(length, b) for b in range(1, self.max_block + 1))

    def account(self, text: str) -> PositionAccount:
        n = TextUnits.of(text).n_bytes
        n_global = ceil_div(n, self.downsample)
        return PositionAccount(
            "charformer",
            "bytes",
            n,
            n,
            n_global,
            n_global,
            tuple(range(0, n, self.downsample)),
            self.hash,
            {"candidate_blocks": self.candidate_blocks(n)},
        )


@dataclass(frozen=True, kw_only=True)
class MegabyteConfig(_Hashable):
    """MEGABYTE: ``K = ceil(T / P)`` fixed patches; a global stack over patches and a local
    model predicting the ``P`` bytes inside each patch.

    The global input of patch ``k`` is the previous patch (a pad for ``k = 0``), never
    the patch it predicts: :meth:`global_input_spans` and :func:`check_global_inputs`.
    """

    patch_width: int = 4

    def __post_init__(self) -> None:
        _positive("patch_width", self.patch_width)

    def to_config(self) -> dict[str, Any]:
        return {"model": "megabyte", "patch_width": self.patch_width, "global_shift": 1}

    def global_input_spans(self, n_bytes: int) -> list[tuple[int, int] | None]:
        """Byte span each global position reads: ``None`` (learned pad) for patch 0, else
        ``[(k-1)P, kP)``."""
        p = self.patch_width
        return [None if k == 0 else ((k - 1) * p, k * p) for k in range(ceil_div(n_bytes, p))]

    def attention_estimate(self, n_bytes: int) -> Fraction:
        """The two-level attention shape ``(T/P)**2 + (T/P) * P**2 = T**2/P**2 + T*P``
        (global pairs over patches plus local pairs inside each), exact; a byte-level
        model's single stack would be ``T**2``. Shape only: widths and depths differ."""
        t, p = _non_negative("n_bytes", n_bytes), self.patch_width
        return Fraction(t * t, p * p) + t * p

    def attention_pairs(self, n_bytes: int) -> int:
        """The same shape counted over whole patches: ``K**2 + K * P**2`` with
        ``K = ceil(T / P)`` (the last patch padded)."""
        k = ceil_div(_non_negative("n_bytes", n_bytes), self.patch_width)
        return k * k + k * self.patch_width**2

    def forward_flops(self, n_bytes: int, *, global_params: int, local_params: int) -> Fraction:
        """The paper's feed-forward-dominated estimate ``F ~ 2T(m_G/P + m_L)`` of one
        forward pass, with ``m_G``/``m_L`` the global and local non-embedding parameters:
        the global stack runs once per patch, the local one once per byte. An
        approximation, not a kernel measurement."""
        t = _non_negative("n_bytes", n_bytes)
        m_g = _non_negative("global_params", global_params)
        m_l = _non_negative("local_params", local_params)
        return 2 * t * (Fraction(m_g, self.patch_width) + m_l)

    def account(self, text: str) -> PositionAccount:
        n = TextUnits.of(text).n_bytes
        k = ceil_div(n, self.patch_width)
        return PositionAccount(
            "megabyte",
            "bytes",
            n,
            k * self.patch_width,
            k,
            n,
            tuple(range(0, n, self.patch_width)),
            self.hash,
            {"padding_bytes": k * self.patch_width - n},
        )


def check_global_inputs(
    spans: Sequence[tuple[int, int] | None], patch_width: int
) -> list[tuple[int, str]]:
    """Return ``(patch, problem)`` for every global input that reads a byte of the patch it
    predicts or a later one (the "current patch leaks into the global input" failure)."""
    problems = []
    for k, span in enumerate(spans):
        if span is not None and span[1] > k * patch_width:
            problems.append(
                (k, f"global input of patch {k} reads bytes {span[0]}..{span[1] - 1}, but bytes "
                f">= {k * patch_width} belong to the patch it predicts; shift the global "
                "input by one patch")
            )  # fmt: skip
    return problems


@dataclass(frozen=True, kw_only=True)
class BLTConfig(_Hashable):
    """BLT: local byte encoder, global transformer over patches, local byte decoder.

    ``patcher`` decides patch starts (fixed stride, whitespace, BPE-shaped or entropy);
    ``n_global`` is the number of patches ``m`` with ``0 = q_0 < ... < q_m = n_bytes``.
    """

    patcher: Patcher
    ngram_hash_sizes: tuple[int, ...] = ()

    def to_config(self) -> dict[str, Any]:
        return {
            "model": "blt",
            "patcher": self.patcher.to_config(),
            "ngram_hash_sizes": list(self.ngram_hash_sizes),
        }

    def account(self, text: str, *, starts: Sequence[int] | None = None) -> PositionAccount:
        """Account ``text``; ``starts`` overrides the patcher (for a recorded trace)."""
        data = TextUnits.of(text).data
        chosen = self.patcher.starts(data) if starts is None else starts
        checked = check_starts(chosen, len(data))
        n = len(data)
        return PositionAccount("blt", "bytes", n, n, len(checked), n, checked, self.hash)


def account_all(text: str, models: Sequence[Any]) -> list[PositionAccount]:
    """Accounts of one text under several configurations (a comparison table's rows)."""
    if not models:
        raise InvalidInputError("pass at least one model configuration")
    return [m.account(text) for m in models]
