"""Where a batch of conversations renders: threads or forked processes, one interface.

:meth:`ChatTemplate.render_batch <tokenpact.chat.ChatTemplate.render_batch>` and
:meth:`~tokenpact.chat.ChatTemplate.render_columns` validate their options, then hand the
records to the executor that their one ``executor`` parameter names:

- ``"threads"`` (:class:`ThreadExecutor`): the calling thread prepares chunks of records
  while native worker threads render and encode them without the GIL
  (:mod:`tokenpact.chat.batch_render`);
- ``"processes"`` (:class:`ProcessExecutor`): ``threads - 1`` forked worker processes
  beside the calling thread, each running the one-thread ``render_columns`` on whole
  chunks, Jinja included (:mod:`tokenpact.chat.process_render`; POSIX only). With one
  thread there is nothing to fork and it runs the thread executor.

Both give what rendering each record alone gives, in input order, and raise the error of
the first failing record with a note naming it.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from typing import Any, Protocol

from . import _encode
from .batch_render import (
    Stages,
    check_threads,
    finish_encoded,
    native_stages,
    pipeline,
    render_many,
    wait_chunk,
)
from .columns import ColumnsBuilder, RenderedColumns, add_record
from .conversation import Conversation
from .deferred_render import resolve
from .errors import ChatTemplateError
from .process_render import columns_in_processes, conversations_in_processes
from .record_errors import note_record

EXECUTOR_NAMES: tuple[str, ...] = ("threads", "processes")


class BatchExecutor(Protocol):
    """Renders a batch for one template; ``options`` are the template's render options
    (``render_options``'s) with ``add_special_tokens``, ``validate`` and ``supervise``."""

    def conversations(
        self,
        template: Any,
        conversations: Sequence[Any],
        threads: int | None,
        options: dict[str, Any],
        mode: str,
    ) -> list[Conversation]:
        """``[template.render(record, **options) for record in conversations]``."""
        ...

    def columns(
        self,
        template: Any,
        conversations: Sequence[Any],
        threads: int | None,
        options: dict[str, Any],
        mode: str,
    ) -> RenderedColumns:
        """The same records as one :class:`~tokenpact.chat.RenderedColumns`."""
        ...


def _split(options: dict[str, Any]) -> tuple[dict[str, Any], bool, bool, str]:
    """``options`` as the template's render options and the three batch settings."""
    rest = dict(options)
    add_special_tokens = rest.pop("add_special_tokens", False)
    validate = rest.pop("validate", False)
    supervise = rest.pop("supervise", "turns")
    return rest, add_special_tokens, validate, supervise


class ThreadExecutor:
    """The calling thread prepares, native worker threads encode (``threads - 1`` of
    them; none with one thread): :mod:`tokenpact.chat.batch_render`."""

    name = "threads"

    def conversations(
        self,
        template: Any,
        conversations: Sequence[Any],
        threads: int | None,
        options: dict[str, Any],
        mode: str,
    ) -> list[Conversation]:
        render_opts, add_special_tokens, validate, supervise = _split(options)
        # Looked up per call (the benchmark swaps it to measure the serial part with the
        # encoding left to the workers).
        start = _encode.chunk_encoder(template.tokenizer, template._info)
        stages = None
        if start is not None:
            finish = functools.partial(
                finish_encoded,
                template,
                mode=mode,
                add_special_tokens=add_special_tokens,
                supervise=supervise,
            )
            stages = native_stages(template, start, render_opts, mode, validate, finish)
        render = functools.partial(
            template.render,
            add_special_tokens=add_special_tokens,
            validate=validate,
            supervise=supervise,
        )
        return render_many(render, conversations, threads, render_opts, stages)

    def columns(
        self,
        template: Any,
        conversations: Sequence[Any],
        threads: int | None,
        options: dict[str, Any],
        mode: str,
    ) -> RenderedColumns:
        render_opts, add_special_tokens, validate, supervise = _split(options)
        builder = ColumnsBuilder()
        start = _encode.chunk_encoder(template.tokenizer, template._info)
        if start is None:  # no native engine: render each, then lay the lists out
            for conv in template.render_batch(conversations, threads=threads, **options):
                builder.add_conversation(conv)
        else:
            ignored: Any = lambda *args: None  # noqa: E731 - the collector below finishes
            stages = native_stages(template, start, render_opts, mode, validate, ignored)

            def collect(_: Stages, chunk: list[Any], job: Any, first: int) -> list[Any]:
                results = wait_chunk(job, len(chunk), lists=False)
                for k, ((messages, opts, rendered), result) in enumerate(
                    zip(chunk, results, strict=True)
                ):
                    try:
                        rendered, result = resolve(rendered, result)
                        add_record(
                            template,
                            builder,
                            messages,
                            opts,
                            rendered,
                            result,
                            mode,
                            add_special_tokens,
                            supervise,
                        )
                    except Exception as exc:
                        note_record(exc, first + k)
                        raise
                return []

            pipeline(stages, conversations, threads, render_opts, collect)
        return builder.build(
            tokenizer=template.tokenizer,
            template_hash=template.template_hash,
            mode=mode,
            stops=template._stop_ids(),
        )


class ProcessExecutor:
    """``threads - 1`` forked worker processes and the calling thread render whole
    chunks: :mod:`tokenpact.chat.process_render`."""

    name = "processes"

    def conversations(
        self,
        template: Any,
        conversations: Sequence[Any],
        threads: int | None,
        options: dict[str, Any],
        mode: str,
    ) -> list[Conversation]:
        return conversations_in_processes(template, conversations, threads, options, mode)

    def columns(
        self,
        template: Any,
        conversations: Sequence[Any],
        threads: int | None,
        options: dict[str, Any],
        mode: str,
    ) -> RenderedColumns:
        found = columns_in_processes(template, conversations, threads, options, mode)
        if found is not None:
            return found
        # No records: the empty columns, laid out as the threads lay them out.
        return THREADS.columns(template, conversations, threads, options, mode)


THREADS = ThreadExecutor()
PROCESSES = ProcessExecutor()


def executor_for(executor: str, threads: int | None) -> BatchExecutor:
    """The executor named ``executor`` for a batch on ``threads`` threads (processes
    with one thread: the thread executor, as there is no worker to fork)."""
    if executor == "threads":
        return THREADS
    if executor == "processes":
        return PROCESSES if check_threads(threads) > 1 else THREADS
    raise ChatTemplateError(f"executor must be one of {list(EXECUTOR_NAMES)}, not {executor!r}")


def executor_name(executor: str, processes: bool | None) -> str:
    """``executor``, or what the deprecated ``processes`` flag of ``render_batch`` and
    ``render_columns`` names when a caller still passes it (warning once per call)."""
    if processes is None:
        return executor
    warnings.warn(
        "processes=True/False is deprecated; pass executor='processes' or 'threads'",
        DeprecationWarning,
        stacklevel=3,
    )
    if executor != "threads" and bool(processes) != (executor == "processes"):
        raise ChatTemplateError(
            f"processes={processes!r} contradicts executor={executor!r}; pass executor alone"
        )
    return "processes" if processes else "threads"
