"""Render a batch on forked worker processes (``render_batch``/``render_columns`` with
``executor="processes"``; the process executor of :mod:`tokenpact.chat.executors`).

The thread pipeline (:mod:`tokenpact.chat.render_core`) runs the native encoding in
parallel, but Jinja rendering and input wrapping hold the GIL, so on short records its
2-thread speedup is bounded by about total / serial (1.4-1.9x measured). Here each of the
``threads`` workers is a process forked from this one, holding its own copy of the
compiled template (inherited through the fork, so nothing is pickled but the records),
and runs the render core (:mod:`tokenpact.chat.render_core`) on one thread over a chunk
of records. A chunk comes
back as the compact columns of :class:`~tokenpact.chat.RenderedColumns` (one frame of raw
array bytes and the per-record tuples). ``threads - 1`` workers take chunks from the
front of the batch while this thread renders chunks from the back, and lays the workers'
chunks end to end or, for ``render_batch``, rebuilds each :class:`Conversation` from
its columns (:meth:`RenderedColumns.to_conversations`, which the tests compare with
``render``).

A pool is forked per template and worker count on first use and kept until the template
is collected, so a batch pays no fork. Workers are daemon processes; they only ever run
single-threaded code (``threads=1`` starts no native thread pool), so forking a process
whose native or Python thread pools are live leaves the children nothing to deadlock on.

Failures keep the serial loop's behaviour: a chunk that fails in a worker (or a worker
that died) is rendered again here, record by record, so the first failing conversation
raises its own typed error with the note naming it.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import pickle
import signal
import struct
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any, cast

import numpy as np

from .columns import RenderedColumns
from .conversation import Conversation
from .errors import ChatTemplateError
from .record_errors import note_record, split_item
from .render_core import Settings, check_threads, columns_here, conversations_here

# Records per chunk: the records left over twice the participants (guided scheduling:
# chunks shrink towards the end, so the workers and this thread finish together),
# between 8 and 64: each chunk costs a fixed ~0.1-0.2 ms (one render_columns call and
# its layout, a message each way), which a 1-record chunk of a short conversation
# (~0.1-0.3 ms) would double.
_MIN_CHUNK = 8
_MAX_CHUNK = 64
# Chunks queued per worker: the next one waits in the pipe while it renders the current.
_IN_FLIGHT = 2

# The template a worker serves, set only around the fork (the child reads its copy).
_SERVING: Any = None
# Whether the calling thread renders chunks too (benchmarks turn it off to measure what
# it spends on the workers' chunks alone: sending, unpacking, rebuilding).
PARENT_RENDERS = True
_CLOSE_IN_CHILD: list[Connection] = []
_CPU = struct.Struct("<d")
_LENGTH = struct.Struct("<q")
_PROTOCOL = pickle.HIGHEST_PROTOCOL


def fork_available() -> bool:
    """Whether this platform can fork worker processes."""
    return "fork" in multiprocessing.get_all_start_methods()


def _serve(conn: Connection) -> None:
    """A worker's loop: pickled ``(records, options, settings)`` in, one frame out (the chunk's CPU
    seconds, then its packed columns, absent when the chunk failed); an empty message
    stops it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    for inherited in _CLOSE_IN_CHILD:  # so that the parent's exit reads as EOF here
        inherited.close()
    template = _SERVING
    parent = os.getppid()
    while True:
        try:
            while not conn.poll(1.0):
                if os.getppid() != parent:  # the parent was killed: nobody to serve
                    return
            message = conn.recv_bytes()
        except (EOFError, OSError):
            return
        if not message:  # the pool is closing
            return
        start = time.process_time()
        try:
            records, options, settings = pickle.loads(message)
            columns = columns_here(template, records, 1, options, settings)
            payload = _pack(columns)
        except BaseException:  # noqa: BLE001 - the parent renders the chunk again
            payload = b""  # empty: failed
        # One frame: the CPU seconds this chunk took (8 bytes), then the packed columns.
        conn.send_bytes(_CPU.pack(time.process_time() - start) + payload)


_ARRAYS = (
    "input_ids",
    "offsets",
    "special_tokens_mask",
    "origin",
    "message_index",
    "owner_index",
    "assistant_mask",
    "byte_starts",
    "byte_ends",
    "prompt_boundary",
)
_TUPLES = ("owners", "roles", "texts")


def _pack(columns: RenderedColumns) -> bytes:
    """The columns that travel (all but the tokenizer and the facts both sides hold), as
    one frame: the pickled dtypes, lengths and per-record tuples, then each array's raw
    bytes (pickling a dozen small numpy arrays per chunk cost more than the data)."""
    arrays = [np.ascontiguousarray(getattr(columns, name)) for name in _ARRAYS]
    header = pickle.dumps(
        ([(a.dtype.str, a.size) for a in arrays], [getattr(columns, n) for n in _TUPLES]),
        protocol=_PROTOCOL,
    )
    return b"".join([_LENGTH.pack(len(header)), header, *[a.tobytes() for a in arrays]])


def _unpack_fields(frame: bytes, at: int) -> dict[str, Any]:
    """:func:`_pack`'s fields from ``frame[at:]`` (the arrays are read-only views of
    ``frame``: :func:`concatenate` copies them into the result)."""
    (size,) = _LENGTH.unpack_from(frame, at)
    at += _LENGTH.size
    shapes, tuples = pickle.loads(memoryview(frame)[at : at + size])
    at += size
    fields: dict[str, Any] = dict(zip(_TUPLES, tuples, strict=True))
    for name, (dtype, count) in zip(_ARRAYS, shapes, strict=True):
        array = np.frombuffer(frame, dtype=dtype, count=count, offset=at)
        fields[name] = array
        at += array.nbytes
    return fields


class ProcessPool:
    """``workers`` forked processes serving one template (see the module doc)."""

    def __init__(self, template: Any, workers: int) -> None:
        global _SERVING
        context = multiprocessing.get_context("fork")
        self.connections: list[Connection] = []
        self.processes: list[Any] = []
        self.lock = threading.Lock()
        # CPU seconds the workers reported and records they rendered (benchmarks read them).
        self.child_cpu = 0.0
        self.child_records = 0
        self.broken = False
        _SERVING = template
        # Every pool's parent ends, this one's as they are made: a worker closes its
        # copies, so that each worker sees EOF when this process goes.
        _CLOSE_IN_CHILD.extend(
            c for pools in _POOLS.values() for p in pools.values() for c in p.connections
        )
        try:
            for _ in range(workers):
                parent_end, child_end = context.Pipe(duplex=True)
                _CLOSE_IN_CHILD.append(parent_end)
                process = context.Process(
                    target=_serve, args=(child_end,), daemon=True, name="tokenpact-chat-render"
                )
                process.start()
                child_end.close()
                self.connections.append(parent_end)
                self.processes.append(process)
        finally:
            _SERVING = None
            _CLOSE_IN_CHILD.clear()
        self.pid = os.getpid()
        self.served = _served(template)
        self._finalizer = weakref.finalize(self, _close, self.connections, self.processes, self.pid)

    def close(self) -> None:
        """Stop the workers (also when the pool is collected)."""
        self._finalizer()

    def run(
        self, items: list[Any], job: tuple[Any, ...], local: Callable[[int, int], Any]
    ) -> Iterator[tuple[int, int, Any, bool]]:
        """Every record once, in chunks ``(start, end, result, packed)``: the workers
        take chunks from the front and send back packed columns (``packed``; None when
        the chunk failed), while this process renders chunks from the back with
        ``local(start, end)`` between collecting the workers' replies."""
        with self.lock:
            try:
                yield from self._run(items, job, local)
            except BaseException:
                # Left early (the caller failed, or an interrupt): replies may still be
                # in the pipes, so this pool is not used again.
                self.broken = True
                raise

    def _run(
        self, items: list[Any], job: tuple[Any, ...], local: Callable[[int, int], Any]
    ) -> Iterator[tuple[int, int, Any, bool]]:
        queued: dict[Connection, deque[tuple[int, int]]] = {c: deque() for c in self.connections}
        alive = set(self.connections)
        front, back = 0, len(items)  # records [front, back) are not handed out yet
        retry: list[tuple[int, int]] = []  # the chunks of a worker that died

        def size() -> int:
            share = (back - front) // (2 * (len(alive) + 1))
            return max(min(_MIN_CHUNK, _MAX_CHUNK), min(_MAX_CHUNK, share))

        def lose(conn: Connection) -> None:
            """A worker that died: this process renders its chunks; the pool is replaced
            on the next call."""
            alive.discard(conn)
            retry.extend(queued.pop(conn))
            self.broken = True

        def feed(conn: Connection) -> None:
            nonlocal front
            while conn in alive and len(queued[conn]) < _IN_FLIGHT and front < back:
                chunk = (front, min(back, front + size()))
                front = chunk[1]
                try:
                    message = pickle.dumps((items[chunk[0] : chunk[1]], *job), _PROTOCOL)
                except Exception:  # noqa: BLE001 - an object pickle refuses: render it here
                    retry.append(chunk)
                    continue
                try:
                    conn.send_bytes(message)
                except (OSError, ValueError):
                    retry.append(chunk)
                    lose(conn)
                    return
                queued[conn].append(chunk)

        for conn in self.connections:
            feed(conn)
        while True:
            busy = [c for c in alive if queued[c]]
            left = retry or front < back
            if not left and not busy:
                return
            mine = left and (PARENT_RENDERS or not busy)
            # With a chunk to render here next, only look; else block.
            for ready in wait(busy, 0 if mine else None) if busy else []:
                conn = cast(Connection, ready)
                try:
                    frame = conn.recv_bytes()
                except (EOFError, OSError):
                    lose(conn)
                    continue
                start, end = queued[conn].popleft()
                (cpu,) = _CPU.unpack_from(frame)
                self.child_cpu += cpu
                self.child_records += end - start
                feed(conn)  # before the caller's work on this chunk: keep the worker busy
                packed = frame if len(frame) > _CPU.size else None
                yield start, end, packed, True
            if mine and retry:
                start, end = retry.pop()
            elif mine and front < back:  # feeding the workers above may have taken the last
                start, end = max(front, back - size()), back
                back = start
            else:
                continue
            yield start, end, local(start, end), False


def _close(connections: list[Connection], processes: list[Any], pid: int) -> None:
    if os.getpid() != pid:  # a forked copy of the pool: the workers are the parent's
        return
    for conn in connections:
        try:
            conn.send_bytes(b"")
            conn.close()
        except (OSError, ValueError):
            pass
    for process in processes:
        process.join(timeout=1.0)
        if process.is_alive():
            process.terminate()


_POOLS: weakref.WeakKeyDictionary[Any, dict[int, ProcessPool]] = weakref.WeakKeyDictionary()
_POOLS_LOCK = threading.Lock()


def pool_for(template: Any, workers: int) -> ProcessPool:
    """The live pool of ``workers`` processes serving ``template`` (forked on first use
    and again after a worker died or the process forked)."""
    with _POOLS_LOCK:
        pools = _POOLS.setdefault(template, {})
        pool = pools.get(workers)
        if pool is not None and pool.pid != os.getpid():
            pool = None  # inherited through a fork: the parent's workers, not ours to stop
        elif pool is not None and (pool.broken or pool.served != _served(template)):
            pool.close()  # a worker died, or the template changed since the fork
            pool = None
        if pool is None:
            pool = pools[workers] = ProcessPool(template, workers)
        return pool


def _served(template: Any) -> tuple[Any, ...]:
    """What a worker's copy of ``template`` holds and could go stale after the fork."""
    return (
        template.limits,
        id(template.tokenizer),
        template.template_hash,
        tuple(template.special_tokens.items()),
    )


def render_processes(
    template: Any,
    conversations: Sequence[Any],
    threads: int | None,
    options: dict[str, Any],
    settings: Settings,
    *,
    here: Callable[[list[Any]], Any],
    convert: Callable[[RenderedColumns], Any],
) -> list[Any]:
    """Each chunk of ``conversations`` rendered by ``threads - 1`` forked workers or by
    ``here(chunk)`` on this thread, as each of them is free, in order: a worker's chunk
    comes back as columns, which ``convert`` turns into what ``here`` returns."""
    if not fork_available():
        raise ChatTemplateError(
            "executor='processes' needs the 'fork' start method, which this platform "
            "lacks; use executor='threads'"
        )
    workers = check_threads(threads)
    items = list(conversations)
    for k, item in enumerate(items):
        if type(item) is not list:  # a plain message list is always well formed here
            split_item(item, k)  # the serial loop's typed error for a malformed record
    if not items:
        return []
    out: dict[int, tuple[int, Any]] = {}
    failed = []

    def local(start: int, end: int) -> Any:
        try:
            return here(items[start:end])
        except Exception:  # noqa: BLE001 - rendered again in order below, raising then
            return None

    pool = pool_for(template, workers - 1)
    for start, end, result, packed in pool.run(items, (options, settings), local):
        if result is None:
            failed.append((start, end))
        else:
            columns = _unpack(template, result, settings.mode) if packed else None
            out[start] = end, result if columns is None else convert(columns)
    for start, end in sorted(failed):  # in order: the first failing record raises
        redone = _render_here(template, items[start:end], start, options, settings)
        out[start] = end, convert(redone)
    return [out[start][1] for start in sorted(out)]


def _render_here(
    template: Any, chunk: list[Any], first: int, options: dict[str, Any], settings: Settings
) -> RenderedColumns:
    """A chunk a worker could not render, rendered here record by record, so that the
    first failing record raises its own error, named as the serial loop names it."""
    for k, item in enumerate(chunk):
        try:
            columns_here(template, [item], 1, options, settings, named=False)
        except Exception as exc:
            note_record(exc, first + k)
            raise
    return columns_here(template, chunk, 1, options, settings)


def _unpack(template: Any, frame: bytes, mode: str) -> RenderedColumns:
    """A worker's columns with the facts this process holds (tokenizer, hashes, mode)."""
    return RenderedColumns(
        **_unpack_fields(frame, _CPU.size),
        stop_ids=template._stop_ids(),
        tokenizer_hash=template.tokenizer.semantic_hash,
        template_hash=template.template_hash,
        mode=mode,
        tokenizer=template.tokenizer,
    )


def conversations_in_processes(
    template: Any,
    conversations: Sequence[Any],
    threads: int | None,
    options: dict[str, Any],
    settings: Settings,
) -> list[Conversation]:
    """``render_batch`` with forked workers: a worker's chunk comes back as columns,
    which its conversations view; this thread's own chunks are rendered here."""

    def here(chunk: list[Any]) -> list[Conversation]:
        return conversations_here(template, chunk, 1, options, settings)

    def convert(columns: RenderedColumns) -> list[Conversation]:
        return columns.to_conversations()

    parts = render_processes(
        template, conversations, threads, options, settings, here=here, convert=convert
    )
    return [conv for part in parts for conv in part]


def columns_in_processes(
    template: Any,
    conversations: Sequence[Any],
    threads: int | None,
    options: dict[str, Any],
    settings: Settings,
) -> RenderedColumns | None:
    """``render_columns`` with forked workers (None for no records)."""

    def here(chunk: list[Any]) -> RenderedColumns:
        return columns_here(template, chunk, 1, options, settings)

    parts = render_processes(
        template, conversations, threads, options, settings, here=here, convert=lambda c: c
    )
    return concatenate(parts) if parts else None


def concatenate(parts: list[RenderedColumns]) -> RenderedColumns:
    """The chunks' columns end to end (at least one chunk), in fresh writable arrays."""
    if len(parts) == 1 and parts[0].input_ids.flags.writeable:  # rendered here
        return parts[0]
    first = parts[0]
    lengths = [len(p.input_ids) for p in parts]
    bases = np.cumsum([0, *lengths[:-1]])
    offsets = np.concatenate(
        [first.offsets[:1], *[p.offsets[1:] + base for p, base in zip(parts, bases, strict=True)]]
    )
    arrays: dict[str, Any] = {
        name: np.concatenate([getattr(p, name) for p in parts])
        for name in _ARRAYS
        if name != "offsets"
    }
    tuples: dict[str, Any] = {
        name: tuple(itertools.chain.from_iterable(getattr(p, name) for p in parts))
        for name in _TUPLES
    }
    return RenderedColumns(
        **arrays,
        offsets=offsets,
        **tuples,
        stop_ids=first.stop_ids,
        tokenizer_hash=first.tokenizer_hash,
        template_hash=first.template_hash,
        mode=first.mode,
        tokenizer=first.tokenizer,
    )
