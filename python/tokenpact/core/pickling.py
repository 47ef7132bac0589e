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
silently encodes other IDs. ``Tokenizer.__reduce__`` and its ``_pickled_state`` are the
class's own; this module holds the receiving side and the frozen dataclasses' reduce.
"""

from __future__ import annotations

import pickle
from dataclasses import fields
from types import MappingProxyType
from typing import Any

from ..errors import ContractError

Reduced = tuple[Any, tuple[Any, ...]]


def reduce_frozen(obj: Any) -> Reduced:
    """``__reduce__`` of a frozen dataclass holding read-only mapping views (a spec, a
    provenance): the views are not picklable, so they travel as plain dicts as the
    constructor's arguments, and ``__post_init__`` freezes them again."""
    values = (getattr(obj, f.name) for f in fields(obj))
    return type(obj), tuple(dict(v) if isinstance(v, MappingProxyType) else v for v in values)


def rebuild_tokenizer(cls: type[Any], state: bytes, expected_hash: str) -> Any:
    """The tokenizer ``Tokenizer.__reduce__`` sent, refused unless it behaves the same
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
