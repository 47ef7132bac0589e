"""``tokenpact serve``: the local web playground (needs the ``serve`` extra)."""

from __future__ import annotations

import ipaddress
import re
import socket
from pathlib import Path
from typing import Any

import click

from ..errors import ConfigError


def parse_tokenizer_option(values: tuple[str, ...]) -> list[tuple[str, str]]:
    """``NAME=PATH`` pairs; a bare PATH is named after its file or directory."""
    pairs = []
    for value in values:
        name, sep, path = value.partition("=")
        if not sep:
            path = value
            candidate = Path(value)
            name = candidate.name if candidate.is_dir() else candidate.stem
        if not name or not path:
            raise click.BadParameter(f"{value!r}: expected NAME=PATH", param_hint="--tokenizer")
        pairs.append((name, path))
    return pairs


def _found_here(registry_class: Any) -> Any:
    """The tokenizers of the current directory: itself when it is a tokenizer directory,
    else every tokenizer directly inside it."""
    from ..serve.registry import _is_tokenizer

    here = Path.cwd()
    if _is_tokenizer(here):
        name = re.sub(r"[^A-Za-z0-9._-]", "-", here.name)[:64].lstrip("._-") or "tokenizer"
        return registry_class([(name, str(here))])
    return registry_class(dirs=[here])


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@click.command("serve")
@click.option(
    "--tokenizer",
    "-t",
    "tokenizers",
    multiple=True,
    metavar="NAME=PATH",
    help="A tokenizer the playground may load (repeatable): an artifact directory, a HF"
    " directory or tokenizer.json, a *.tiktoken or a .model file.",
)
@click.option(
    "--dir",
    "dirs",
    multiple=True,
    type=click.Path(exists=True, file_okay=False),
    help="Offer every tokenizer directory or file directly inside DIR (repeatable).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--body-timeout",
    default=10.0,
    show_default=True,
    type=click.FloatRange(0.1, 600),
    help="Seconds a request body may take to arrive; slower requests get 408.",
)
@click.option(
    "--header-timeout",
    default=10.0,
    show_default=True,
    type=click.FloatRange(0.1, 600),
    help="Seconds a request's head (request line and headers) may take to arrive after"
    " the connection opens or the previous response ends; the server then closes the"
    " connection.",
)
@click.pass_context
def serve(
    ctx: click.Context,
    tokenizers: tuple[str, ...],
    dirs: tuple[str, ...],
    host: str,
    port: int,
    body_timeout: float,
    header_timeout: float,
) -> None:
    """Run the local web playground: token pieces, side-by-side diffs, chat templates.

    The server reads only the tokenizers named here (never through a link leading out
    of a --dir entry), never writes a file, and binds to the loopback interface unless
    --host says otherwise. Exit codes: 0 stopped by Ctrl-C, 1 a tokenpact error (the
    address cannot be bound, no tokenizers), 2 usage; SIGTERM shuts down (requests in
    flight get a few seconds) and ends the process by that signal. With no --tokenizer and no
    --dir it serves what it finds in the current directory: the directory itself when
    it is a tokenizer, else the tokenizers directly inside it.
    """
    try:
        import uvicorn

        from ..serve import ServeLimits, TokenizerRegistry, create_app
        from ..serve.server import server_config
    except ImportError as exc:
        raise ConfigError(
            f"tokenpact serve needs Starlette and uvicorn ({exc.name} is missing):"
            " pip install 'tokenpact[serve]'"
        ) from None
    if not tokenizers and not dirs:
        registry = _found_here(TokenizerRegistry)
        if not len(registry):
            raise click.UsageError(
                f"no tokenizers found in the current directory ({Path.cwd()}); pass "
                "--tokenizer NAME=PATH or --dir DIR, or make one first: "
                "tokenpact quickstart --output my-tok",
                ctx,
            )
    else:
        registry = TokenizerRegistry(parse_tokenizer_option(tokenizers), dirs=dirs)
    if not len(registry):
        raise ConfigError("no tokenizers to serve: pass --tokenizer NAME=PATH or --dir DIR")
    if not is_loopback(host):
        click.echo(
            f"warning: binding to {host}, not a loopback address: anyone who can reach this"
            " machine can use the playground and read the tokenizers it serves",
            err=True,
        )
    sock = bind_socket(host, port)
    shown = f"[{host}]" if ":" in host else host
    port = sock.getsockname()[1]
    click.echo(f"tokenpact playground on http://{shown}:{port}/ ({', '.join(registry.names)})")
    # Bounded: request heads (--header-timeout), bodies (--body-timeout), idle
    # keep-alive connections and open connections (tokenpact.serve.server).
    config = server_config(
        create_app(registry, limits=ServeLimits(body_timeout_s=body_timeout)),
        header_timeout_s=header_timeout,
        log_level="warning",
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


def bind_socket(host: str, port: int) -> socket.socket:
    """Listen on ``host:port`` (port 0: any free port); ConfigError (exit 1) when the
    address cannot be bound, instead of uvicorn's exit 3."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc} (is another server "
            "using the port? pass --port)"
        ) from None
    sock.set_inheritable(True)
    return sock
