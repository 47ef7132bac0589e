"""Request compilation: pinned artifacts in, an exact sequence object out, or a typed
error naming what disagrees.

``compile_request`` checks, failing closed:

- the tokenizer's semantic hash and the template hash against the checkpoint
  declaration (an unbound declaration is an error, not a pass);
- every prompt ID against the checkpoint's input embedding rows, and every stop ID
  against its output rows;
- the prompt boundary: it must be the end of the compiled prompt (generation starts
  there, and stop matching with it);

and returns the IDs with their aligned metadata (``special_tokens_mask``: 1 where a
trusted control was inserted; ``sequence_ownership``: who wrote each token), the stop
policy and the prefix-cache keys of the complete blocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..contract.declarations import CheckpointDeclaration
from ..contract.hashing import parse_hash
from ..errors import ContractError, InvalidInputError
from .cache_keys import BlockKeys, CacheNamespace, block_keys
from .stops import StopPolicy

if TYPE_CHECKING:
    from ..core import Tokenizer

__all__ = ["CompiledRequest", "compile_request"]


# The owner of a prompt given as bare IDs: the caller, with no provenance per token.
CALLER_IDS = "caller_ids"


@dataclass(frozen=True)
class CompiledRequest:
    """An admitted request: exact IDs, where generation starts, what stops it, and the
    cache keys of its complete blocks (``None`` without a namespace).

    ``special_tokens_mask`` and ``sequence_ownership`` are aligned with ``input_ids``.
    From a conversation they are its provenance: the mask is 1 exactly on the controls
    the template inserted, and a token's owner is the content it came from
    (``messages[2].content``) or ``control`` / ``template`` for the grammar's own
    tokens. Bare prompt IDs carry no provenance: the mask marks the tokenizer's special
    IDs and every owner is ``caller_ids``."""

    input_ids: tuple[int, ...]
    prompt_boundary: int
    policy: StopPolicy
    tokenizer_semantic_hash: str
    template_hash: str
    cache: BlockKeys | None
    special_tokens_mask: tuple[int, ...] = ()
    sequence_ownership: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        n = len(self.input_ids)
        if len(self.special_tokens_mask) != n or len(self.sequence_ownership) != n:
            raise ContractError(
                f"a compiled request needs one special_tokens_mask entry and one owner per ID "
                f"({n} IDs, {len(self.special_tokens_mask)} mask entries, "
                f"{len(self.sequence_ownership)} owners)"
            )


def _metadata(source: Any, ids: list[int], tokenizer: Tokenizer) -> tuple[list[int], list[str]]:
    """(special_tokens_mask, sequence_ownership) of a compiled source or of bare IDs."""
    mask = getattr(source, "special_tokens_mask", None)
    origin = getattr(source, "origin", None)
    if mask is None or origin is None:
        specials = set(tokenizer.special_tokens.values())
        return [int(i in specials) for i in ids], [CALLER_IDS] * len(ids)
    owners = tuple(getattr(source, "owners", ()))
    index = getattr(source, "owner_index", None) or [-1] * len(ids)
    ownership = [
        owners[k] if 0 <= k < len(owners) else str(o) for o, k in zip(origin, index, strict=True)
    ]
    return [int(m) for m in mask], ownership


def _source(
    conversation_or_ids: Any, template_hash: str | None, compiler: Any, mode: str
) -> tuple[list[int], int, str | None, StopPolicy | None, Any]:
    """(IDs, prompt boundary, template hash, stop policy, compiled source) of a
    Conversation, messages or raw IDs."""
    source = conversation_or_ids
    if compiler is not None:
        source = compiler.compile(source, mode=mode)
    if hasattr(source, "input_ids") and hasattr(source, "prompt_boundary"):
        declared = getattr(source, "template_hash", None)
        if template_hash is not None and declared is not None and template_hash != declared:
            raise ContractError(
                "template_hash disagrees with the conversation's own template hash; pass one"
            )
        rendered = getattr(source, "stop_policy", None)
        return (
            [int(i) for i in source.input_ids],
            int(source.prompt_boundary),
            declared,
            rendered if isinstance(rendered, StopPolicy) else None,
            source,
        )
    if isinstance(source, (str, bytes)) or not isinstance(source, Sequence):
        raise InvalidInputError(
            "compile_request takes a compiled Conversation (tokenpact.chat), messages with "
            "compiler=..., or a list of prompt IDs with template_hash=..."
        )
    ids = list(source)
    if any(isinstance(i, bool) or not isinstance(i, int) for i in ids):
        raise InvalidInputError("prompt IDs must be ints")
    return ids, len(ids), template_hash, None, None


def _check_bound(declared: str | None, actual: str | None, what: str) -> str:
    if declared is None:
        raise ContractError(
            f"the checkpoint declaration has no {what} hash: bind it to the release with "
            "CheckpointDeclaration.bind(tokenizer_hash=..., template_hash=...)"
        )
    if actual is None:
        raise ContractError(f"the request has no {what} hash to check against the checkpoint")
    if parse_hash(declared) != parse_hash(actual):
        raise ContractError(
            f"{what} hash {parse_hash(actual)} does not match the checkpoint's "
            f"{parse_hash(declared)}; serve the {what} the checkpoint was trained with"
        )
    return parse_hash(actual)


def compile_request(
    conversation_or_ids: Any,
    tokenizer: Tokenizer,
    checkpoint: CheckpointDeclaration,
    policy: StopPolicy | None = None,
    *,
    template_hash: str | None = None,
    compiler: Any = None,
    mode: str = "generation",
    namespace: CacheNamespace | None = None,
    block_size: int = 16,
) -> CompiledRequest:
    """Check a request against the checkpoint and return its exact sequence object.

    ``policy``: what ends generation; by default the conversation's own
    ``stop_policy`` (what ``render`` returned), else no stop.
    """
    ids, boundary, template, rendered, compiled = _source(
        conversation_or_ids, template_hash, compiler, mode
    )
    if policy is None:
        policy = rendered if rendered is not None else StopPolicy()
    elif not isinstance(policy, StopPolicy):
        raise InvalidInputError(
            f"policy must be a StopPolicy (the type Conversation.stop_policy has), not "
            f"{type(policy).__name__}"
        )
    tok_hash = _check_bound(checkpoint.tokenizer_hash, tokenizer.semantic_hash, "tokenizer")
    tpl_hash = _check_bound(checkpoint.template_hash, template, "template")
    if not ids:
        raise InvalidInputError("the prompt is empty; a request needs at least one ID")
    if boundary != len(ids):
        raise ContractError(
            f"the prompt boundary is {boundary} but the prompt has {len(ids)} IDs; a "
            "training-mode sequence cannot be served (compile it with mode='generation' or "
            "'prefill')"
        )
    rows = checkpoint.input_embedding_rows
    bad = next((i for i in ids if not 0 <= i < rows), None)
    if bad is not None:
        raise ContractError(
            f"prompt ID {bad} has no row in the checkpoint's input embedding ({rows} rows)"
        )
    out_rows = checkpoint.output_vocab_rows or rows
    stops = list(policy.stop_token_ids) + [i for s in policy.stop_sequences for i in s]
    bad = next((i for i in stops if i >= out_rows), None)
    if bad is not None:
        raise ContractError(
            f"stop ID {bad} can never be generated: the checkpoint's output layer has "
            f"{out_rows} rows"
        )
    if namespace is not None and namespace.mode == "conservative":
        if namespace.tokenizer_hash != tok_hash or namespace.template_hash != tpl_hash:
            raise ContractError(
                "the conservative cache namespace names another tokenizer or template than "
                "this request; build it from the checked hashes"
            )
    cache = (
        None if namespace is None else block_keys(ids, block_size=block_size, namespace=namespace)
    )
    mask, ownership = _metadata(compiled, ids, tokenizer)
    return CompiledRequest(
        tuple(ids),
        boundary,
        policy,
        tok_hash,
        tpl_hash,
        cache,
        special_tokens_mask=tuple(mask),
        sequence_ownership=tuple(ownership),
    )
