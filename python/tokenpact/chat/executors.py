"""Where a batch of conversations renders: threads or forked processes, one interface.

:meth:`ChatTemplate.render_batch <tokenpact.chat.ChatTemplate.render_batch>` and
:meth:`~tokenpact.chat.ChatTemplate.render_columns` validate their options, then hand the
records to the executor that their one ``executor`` parameter names:

- ``"threads"`` (:class:`ThreadExecutor`): the calling thread prepares chunks of records
  while native worker threads render and encode them without the GIL (the pipeline of
  :mod:`tokenpact.chat.render_core`);
- ``"processes"`` (:class:`ProcessExecutor`): ``threads - 1`` forked worker processes
  beside the calling thread, each running the same core on one thread over whole
  chunks, Jinja included (:mod:`tokenpact.chat.process_render`; POSIX only). With one
  thread there is nothing to fork and it runs the thread executor.

Either way every record goes through the one render core; an executor only decides
where its chunks run.

Both give what rendering each record alone gives, in input order, and raise the error of
the first failing record with a note naming it.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .columns import RenderedColumns
from .conversation import Conversation
from .errors import ChatTemplateError
from .process_render import columns_in_processes, conversations_in_processes
from .render_core import Settings, check_threads, columns_here, conversations_here

if TYPE_CHECKING:
    from .hf_template import ChatTemplate

EXECUTOR_NAMES: tuple[str, ...] = ("threads", "processes")


class BatchExecutor(Protocol):
    """Runs the render core (:mod:`tokenpact.chat.render_core`) on a batch for one
    template; ``options`` are the template's render options (``render_options``'s)."""

    def conversations(
        self,
        template: ChatTemplate,
        conversations: Sequence[Any],
        threads: int | None,
        options: dict[str, Any],
        settings: Settings,
    ) -> list[Conversation]:
        """``[template.render(record, ...) for record in conversations]``."""
        ...

    def columns(
        self,
        template: ChatTemplate,
        conversations: Sequence[Any],
        threads: int | None,
        options: dict[str, Any],
        settings: Settings,
    ) -> RenderedColumns:
        """The same records as one :class:`~tokenpact.chat.RenderedColumns`."""
        ...


class ThreadExecutor:
    """The calling thread prepares, native worker threads render and encode
    (``threads - 1`` of them; none with one thread): the render core's pipeline."""

    name = "threads"

    def conversations(
        self,
        template: ChatTemplate,
        conversations: Sequence[Any],
        threads: int | None,
        options: dict[str, Any],
        settings: Settings,
    ) -> list[Conversation]:
        return conversations_here(template, conversations, threads, options, settings)

    def columns(
        self,
        template: ChatTemplate,
        conversations: Sequence[Any],
        threads: int | None,
        options: dict[str, Any],
        settings: Settings,
    ) -> RenderedColumns:
        return columns_here(template, conversations, threads, options, settings)


class ProcessExecutor:
    """``threads - 1`` forked worker processes and the calling thread run the render core
    on whole chunks: :mod:`tokenpact.chat.process_render`."""

    name = "processes"

    def conversations(
        self,
        template: ChatTemplate,
        conversations: Sequence[Any],
        threads: int | None,
        options: dict[str, Any],
        settings: Settings,
    ) -> list[Conversation]:
        return conversations_in_processes(template, conversations, threads, options, settings)

    def columns(
        self,
        template: ChatTemplate,
        conversations: Sequence[Any],
        threads: int | None,
        options: dict[str, Any],
        settings: Settings,
    ) -> RenderedColumns:
        found = columns_in_processes(template, conversations, threads, options, settings)
        if found is not None:
            return found
        # No records: the empty columns, laid out as the threads lay them out.
        return THREADS.columns(template, conversations, threads, options, settings)


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
