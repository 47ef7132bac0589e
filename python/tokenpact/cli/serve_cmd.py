"""``tokenpact serve``: the local web playground (needs the ``serve`` extra)."""

from __future__ import annotations

import ipaddress

import click

from ..errors import ConfigError


def parse_tokenizer_option(values: tuple[str, ...]) -> list[tuple[str, str]]:
    """``NAME=PATH`` pairs; a bare PATH is named after its file or directory."""
    from pathlib import Path

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
def serve(tokenizers: tuple[str, ...], dirs: tuple[str, ...], host: str, port: int) -> None:
    """Run the local web playground: token pieces, side-by-side diffs, chat templates.

    The server reads only the tokenizers named here, never writes a file, and binds to
    the loopback interface unless --host says otherwise.
    """
    try:
        import uvicorn

        from ..serve import TokenizerRegistry, create_app
    except ImportError as exc:
        raise ConfigError(
            f"tokenpact serve needs Starlette and uvicorn ({exc.name} is missing):"
            " pip install 'tokenpact[serve]'"
        ) from None
    registry = TokenizerRegistry(parse_tokenizer_option(tokenizers), dirs=dirs)
    if not len(registry):
        raise ConfigError("no tokenizers to serve: pass --tokenizer NAME=PATH or --dir DIR")
    if not is_loopback(host):
        click.echo(
            f"warning: binding to {host}, not a loopback address: anyone who can reach this"
            " machine can use the playground and read the tokenizers it serves",
            err=True,
        )
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"tokenpact playground on http://{shown}:{port}/ ({', '.join(registry.names)})")
    uvicorn.run(create_app(registry), host=host, port=port, log_level="warning")
