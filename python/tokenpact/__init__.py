"""tokenpact: tokenizers as versioned contracts.

import tokenpact as tp
tok = tp.train_bpe(texts, vocab_size=32_000)
ids = tok.encode("The cat sleeps.")

The package root is lazy (PEP 562): ``import tokenpact`` loads only this file, and each
public name below imports its module on first use. That keeps ``import tokenpact`` and
every CLI call cheap (numpy, jinja2 and the native core load only when needed).
"""

from __future__ import annotations

import importlib

# Not ``typing.TYPE_CHECKING``: importing typing costs more than this whole module.
TYPE_CHECKING = False

# Public name -> (module relative to this package, attribute or None for the module).
# One table is the whole public surface; ``tests/unit/test_package_root.py`` checks that
# every entry resolves and that ``__all__`` lists exactly these names.
_EXPORTS: dict[str, tuple[str, str | None]] = {
    # subpackages and modules
    "audit": ("audit", None),
    "baselines": ("baselines", None),
    "batch": ("batch", None),
    "chat": ("chat", None),
    "components": ("components", None),
    "bytes": ("bytes", None),
    "contract": ("contract", None),
    "core": ("core", None),
    "data": ("data", None),
    "doctor": ("doctor", None),
    "errors": ("errors", None),
    "files": ("files", None),
    "hf_adapter": ("hf_adapter", None),
    "migrate": ("migrate", None),
    "runtime": ("runtime", None),
    "stochastic": ("stochastic", None),
    # errors
    "ArtifactError": ("errors", "ArtifactError"),
    "BatchError": ("errors", "BatchError"),
    "CapabilityError": ("errors", "CapabilityError"),
    "ConfigError": ("errors", "ConfigError"),
    "ContractError": ("errors", "ContractError"),
    "DecodeError": ("errors", "DecodeError"),
    "InvalidInputError": ("errors", "InvalidInputError"),
    "LossyWhitespaceWarning": ("errors", "LossyWhitespaceWarning"),
    "SpecialTokenError": ("errors", "SpecialTokenError"),
    "TokenpactError": ("errors", "TokenpactError"),
    "TrainingError": ("errors", "TrainingError"),
    "UnknownTokenError": ("errors", "UnknownTokenError"),
    # core
    "Tokenizer": ("core", "Tokenizer"),
    # loading, saving, exporting (tokenpact.files)
    "load": ("files", "load"),
    "save": ("files", "save"),
    "export": ("files", "export"),
    "TokenizerSpec": ("core", "TokenizerSpec"),
    "Provenance": ("core", "Provenance"),
    "Encoding": ("encoding", "Encoding"),
    "Padding": ("truncation", "Padding"),
    "Truncation": ("truncation", "Truncation"),
    "PATTERNS": ("patterns", "PATTERNS"),
    "DEFAULT_SPECIAL_TOKENS": ("special", "DEFAULT_SPECIAL_TOKENS"),
    "AddedTokenFlags": ("special", "AddedTokenFlags"),
    "SpecialToken": ("special", "SpecialToken"),
    "marker": ("special", "marker"),
    "marker_tokens": ("special", "marker_tokens"),
    "LiteralTextPolicy": ("core.literal_text", "LiteralTextPolicy"),
    "TextFiles": ("corpus", "TextFiles"),
    "pretokenize": ("patterns", "pretokenize"),
    # training and sampling
    "train_bpe": ("train", "train_bpe"),
    "train_char_bpe": ("train", "train_char_bpe"),
    "train_unigram": ("train", "train_unigram"),
    "train_wordpiece": ("train", "train_wordpiece"),
    "SampleKey": ("stochastic", "SampleKey"),
    "bpe_dropout": ("stochastic", "bpe_dropout"),
    # transformers' tokenizer surface (Trainer, SFTTrainer, datasets.map)
    "TransformersTokenizer": ("hf_adapter", "TransformersTokenizer"),
    # tiktoken's entry points (standard encodings from files already on the machine)
    "get_encoding": ("formats.tiktoken_registry", "get_encoding"),
    "encoding_for_model": ("formats.tiktoken_registry", "encoding_for_model"),
    "list_encoding_names": ("formats.tiktoken_registry", "list_encoding_names"),
    # contract shortcuts
    "golden": ("contract.golden", None),
    "reconcile": ("contract", "reconcile"),
    "validate_special_ids": ("contract", "validate_special_ids"),
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        # One version source: Cargo.toml (pyproject's version is dynamic, read by maturin).
        from ._native import __version__ as version

        globals()["__version__"] = version
        return version
    try:
        module_name, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'tokenpact' has no attribute {name!r}") from None
    module = importlib.import_module(f".{module_name}", __name__)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from typing import Any

    from . import (
        baselines,
        batch,
        chat,
        components,
        contract,
        errors,
        files,
        hf_adapter,
        stochastic,
    )
    from .contract import (
        golden,
        validate_special_ids,
    )
    from .core import Tokenizer
    from .core.literal_text import LiteralTextPolicy
    from .corpus import TextFiles
    from .encoding import Encoding
    from .errors import (
        ArtifactError,
        BatchError,
        CapabilityError,
        ConfigError,
        ContractError,
        DecodeError,
        InvalidInputError,
        LossyWhitespaceWarning,
        SpecialTokenError,
        TokenpactError,
        TrainingError,
        UnknownTokenError,
    )
    from .files import export, load, save
    from .formats.tiktoken_registry import encoding_for_model, get_encoding, list_encoding_names
    from .hf_adapter import TransformersTokenizer
    from .patterns import PATTERNS, pretokenize
    from .special import (
        DEFAULT_SPECIAL_TOKENS,
        AddedTokenFlags,
        SpecialToken,
        marker,
        marker_tokens,
    )
    from .stochastic import SampleKey, bpe_dropout
    from .train import train_bpe, train_char_bpe, train_unigram, train_wordpiece
    from .truncation import Padding, Truncation

    __version__: str
