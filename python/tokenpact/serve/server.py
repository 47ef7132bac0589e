"""The playground's HTTP server: uvicorn's h11 protocol with a bounded request head.

uvicorn bounds how long an idle keep-alive connection stays open (``timeout_keep_alive``)
and how many connections get an answer (``limit_concurrency``), but not how long a
request's head (request line and headers) may take to arrive: a client that sends a
header line now and then (slowloris) holds its connection, and with it one of the
connection slots, forever. :func:`server_config` closes that gap:

* **head**: a connection must deliver a complete request head within ``header_timeout_s``
  seconds of being accepted, and each later request on it within as long of the previous
  response's end; otherwise the server closes the connection (no response: the request
  was never read). The timer stops once the head is parsed; the body has its own bound
  (``ServeLimits.body_timeout_s``, 408);
* **head size**: a head larger than ``MAX_HEAD_BYTES`` is refused with 400 (h11's
  incomplete-event limit);
* **idle**: a keep-alive connection with no new request is closed after
  ``KEEP_ALIVE_S`` seconds;
* **connections**: beyond ``MAX_CONNECTIONS`` open connections, requests get 503.

>>> config = server_config(app, header_timeout_s=10.0)   # doctest: +SKIP
>>> uvicorn.Server(config).run(sockets=[sock])           # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from ..errors import ConfigError

__all__ = [
    "GRACEFUL_SHUTDOWN_S",
    "KEEP_ALIVE_S",
    "MAX_CONNECTIONS",
    "MAX_HEAD_BYTES",
    "header_timeout_protocol",
    "server_config",
]

# Open connections the server handles at once; more are answered 503.
MAX_CONNECTIONS = 64
# Seconds a SIGTERM waits for requests in flight before closing their connections.
GRACEFUL_SHUTDOWN_S = 3
# Seconds an idle keep-alive connection stays open.
KEEP_ALIVE_S = 5
# Bytes a request head (request line and headers) may take; larger is 400.
MAX_HEAD_BYTES = 16 * 1024


class _HeadTimeoutH11(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request head does not arrive
    within ``header_timeout_s`` (set by :func:`header_timeout_protocol`)."""

    header_timeout_s: float = 10.0
    _head_timer: asyncio.TimerHandle | None = None

    def _arm_head_timer(self) -> None:
        self._disarm_head_timer()
        self._head_timer = self.loop.call_later(self.header_timeout_s, self._head_timed_out)

    def _disarm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            # No request was read, so there is nothing to answer: close, as uvicorn's
            # keep-alive timeout does.
            self.transport.close()

    def _head_read(self) -> bool:
        # h11 leaves IDLE for the peer when it has parsed a whole request head.
        return self.conn.their_state is not h11.IDLE

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._head_read():
            self._disarm_head_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # The next request on this connection gets its own bound (a pipelined one may
        # already be parsed).
        if not self.transport.is_closing() and not self._head_read():
            self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        super().connection_lost(exc)


def header_timeout_protocol(header_timeout_s: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol class with the request-head bound ``header_timeout_s``."""
    if not header_timeout_s > 0:
        raise ConfigError(f"the header timeout must be > 0 seconds, not {header_timeout_s!r}")
    return type(
        "HeadTimeoutH11Protocol", (_HeadTimeoutH11,), {"header_timeout_s": header_timeout_s}
    )


def server_config(app: Any, *, header_timeout_s: float, **options: Any) -> uvicorn.Config:
    """The uvicorn configuration of the playground serving ``app``: the bounds in the
    module docstring; ``options`` are passed to ``uvicorn.Config`` (``log_level``...)."""
    return uvicorn.Config(
        app,
        http=header_timeout_protocol(header_timeout_s),
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        # Bounded concurrency: connections beyond this many get 503 at once.
        limit_concurrency=MAX_CONNECTIONS,
        timeout_keep_alive=KEEP_ALIVE_S,
        # SIGTERM stops the server even while a client holds a connection open.
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
        **options,
    )
