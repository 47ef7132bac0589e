"""Pickling a :class:`~tokenpact.Tokenizer`, so it reaches worker processes as users send
it: ``datasets.map(num_proc=N)``, a ``multiprocessing`` or ``concurrent.futures`` pool
with the spawn start method, a PyTorch ``DataLoader``'s workers, a Ray task's arguments.

A tokenizer travels as what builds it: its spec (the behaviour, ~0.1 MB for a 16k BPE),
its provenance (source record and the exact source file bytes, so ``save`` and
``release_hash`` keep working) and the constructor arguments of its class. The native
engine and every derived table are rebuilt on the other side, never pickled: they are
memory layouts of this process. A tokenizer built with a caller's own ``engine`` sends
that engine as it is (it must be picklable itself).

The sender's semantic hash travels too, and the receiver refuses a tokenizer whose
rebuilt behaviour hashes differently (another tokenpact version on the worker, a spec
pickled by hand): a typed :class:`~tokenpact.errors.ContractError`, never a worker that
silently encodes other IDs.
"""

from __future__ import annotations

import pickle
from dataclasses import fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..errors import ContractError

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

Reduced = tuple[Any, tuple[Any, ...]]


def reduce_frozen(obj: Any) -> Reduced:
    """``__reduce__`` of a frozen dataclass holding read-only mapping views (a spec, a
    provenance): the views are not picklable, so they travel as plain dicts as the
    constructor's arguments, and ``__post_init__`` freezes them again."""
    values = (getattr(obj, f.name) for f in fields(obj))
    return type(obj), tuple(dict(v) if isinstance(v, MappingProxyType) else v for v in values)


def pickled_state(tok: Tokenizer) -> bytes:
    """What builds ``tok`` (spec, its caller's engine or None, provenance, the extra
    constructor keywords of its class) as one bytes object; the Tokenizer keeps it
    (a cached property), so it is pickled once per tokenizer.

    One bytes object, pickled by the C pickler: ``datasets`` pickles a map's function
    with dill, a pure-Python pickler, to fingerprint it on every ``map`` call and again
    to send it to each worker. Walking Llama 3's spec that way took 3.5 s per pickling;
    now the first pickling takes 0.16 s and each later one 3 ms.
    """
    parts = (tok._spec, tok._given_engine, tok._provenance, tok._pickle_kwargs())
    return pickle.dumps(parts, protocol=pickle.HIGHEST_PROTOCOL)


def reduce_tokenizer(tok: Tokenizer) -> Reduced:
    """``tok.__reduce__()``: :func:`rebuild_tokenizer` and its arguments."""
    return rebuild_tokenizer, (type(tok), tok._pickled_state, tok.semantic_hash)


def rebuild_tokenizer(cls: type[Any], state: bytes, expected_hash: str) -> Any:
    """The tokenizer :func:`reduce_tokenizer` sent, refused unless it behaves the same
    (same semantic hash) on this side."""
    spec, engine, provenance, kwargs = pickle.loads(state)
    tok = cls(spec, engine, provenance, **kwargs)
    if tok.semantic_hash != expected_hash:
        raise ContractError(
            f"the unpickled tokenizer's semantic hash {tok.semantic_hash} differs from the "
            f"sender's {expected_hash}: this process runs another tokenpact version (or the "
            "pickle was altered); install the same version on both sides"
        )
    return tok
