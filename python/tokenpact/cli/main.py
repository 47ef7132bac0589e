"""The ``tokenpact`` command group.

Commands load lazily: ``tokenpact --help`` and ``tokenpact <cmd>`` import only the
module of the command that runs, so a CLI call never pays for numpy, jinja2 or the
native core unless it uses them. ``COMMANDS`` is the one registry of subcommands;
``tests/unit/test_cli_lazy.py`` checks that each entry's help line equals the loaded
command's own.
"""

from __future__ import annotations

import atexit
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

import click

from ._common import TokenpactGroup

# name -> (module under tokenpact.cli, attribute, one-line help shown by --help: the
# command's own short help at 88 characters, checked by the test)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "quickstart": (
        "quickstart_cmd",
        "quickstart",
        "Train, save, reload and verify a tokenizer on the built-in corpus.",
    ),
    "train": (
        "train_cmd",
        "train",
        "Train a tokenizer on INPUT files and save it to --output.",
    ),
    "encode": (
        "encode_cmd",
        "encode",
        "Encode TEXT (or --file, or stdin) and print its token IDs.",
    ),
    "decode": (
        "decode_cmd",
        "decode",
        "Decode token IDS (or IDs read from stdin) and print the text.",
    ),
    "inspect": (
        "inspect_cmd",
        "inspect",
        "Show how TEXT (or --file, or stdin) is tokenized, token by token.",
    ),
    "convert": (
        "convert_cmd",
        "convert",
        "Load SOURCE (artifact dir, tokenizer.json, *.tiktoken, .model) and write TARGET.",
    ),
    "chat": ("chat_cmd", "chat", "Format conversations with trusted control tokens."),
    "hash": ("contract_cmds", "hash_cmd", "Print the identities of PATH."),
    "verify": (
        "contract_cmds",
        "verify_cmd",
        "Verify the saved tokenizer in DIRECTORY against its manifest and golden vectors, and...",
    ),
    "bind": (
        "contract_cmds",
        "bind_cmd",
        "Bind an existing CHECKPOINT directory to its tokenizer (and template).",
    ),
    "reconcile": (
        "contract_cmds",
        "reconcile_cmd",
        "Check a bundle (corpus, tokenizer, template, golden, dataset, checkpoint): every hash...",
    ),
    "doctor": (
        "doctor_cmd",
        "doctor",
        "Inspect tokenizers, chat templates, batch files (.npz/Parquet), safetensors...",
    ),
    "audit": (
        "audit_cmd",
        "audit",
        "Audit tokenizers on a corpus; write OUT/report.json and a self-contained report.html.",
    ),
    "migrate": (
        "migrate_cmd",
        "migrate_group",
        "Change a tokenizer that a checkpoint depends on, with evidence.",
    ),
    "release": (
        "release_cmd",
        "release_group",
        "Release bundles: mechanical admission, atomic promotion, whole-bundle rollback.",
    ),
    "stream": (
        "stream_cmd",
        "stream",
        "Show committed/provisional IDs while TEXT streams in, then the stop decision while...",
    ),
    "data": (
        "data_cmds",
        "data",
        "Corpus preparation: clean, deduplicate and split document collections.",
    ),
    "encode-dataset": (
        "data_cmds",
        "encode_dataset_cmd",
        "Encode corpus files into shards bound to the tokenizer (dataset.json + shards).",
    ),
    "serve": (
        "serve_cmd",
        "serve",
        "Run the local web playground: token pieces, side-by-side diffs, chat templates.",
    ),
}


def load_command(name: str) -> click.Command:
    """Import and return the click command registered as ``name``."""
    module_name, attribute, _ = COMMANDS[name]
    module = importlib.import_module(f"{__package__}.{module_name}")
    command: click.Command = getattr(module, attribute)
    return command


class LazyTokenpactGroup(TokenpactGroup):
    """Lists commands from ``COMMANDS`` and imports one only when it is invoked."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        if cmd_name not in COMMANDS:
            return None
        command = load_command(cmd_name)
        self.commands[cmd_name] = command
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # --help prints the registry's help lines without importing every command.
        rows = [(name, COMMANDS[name][2]) for name in sorted(COMMANDS)]
        rows += [
            (name, command.get_short_help_str(limit=88))
            for name, command in sorted(self.commands.items())
            if name not in COMMANDS
        ]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _version() -> str:
    from .. import __version__

    return str(__version__)


def _print_version(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
    if not value or ctx.resilient_parsing:
        return
    click.echo(f"tokenpact, version {_version()}")
    ctx.exit()


@click.group(
    "tokenpact",
    cls=LazyTokenpactGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
@click.option(
    "--no-verify",
    is_flag=True,
    help="Load saved tokenizers without checking manifest.json and golden.json "
    "(an artifact without them is refused otherwise).",
)
@click.pass_context
def cli(ctx: click.Context, no_verify: bool) -> None:
    """tokenpact: tokenizers as versioned contracts.

    Exit codes: 0 success, 1 a tokenpact error (message on stderr; a missing or unreadable
    file is one too), 2 a usage error. Start with `tokenpact quickstart`.
    """
    ctx.ensure_object(dict)["verify"] = not no_verify


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point (``tokenpact``)."""
    try:
        cli.main(args=list(argv) if argv is not None else None, prog_name="tokenpact")
    except SystemExit as exc:
        if "pyarrow" not in sys.modules:
            raise
        _exit_past_pyarrow(exc.code)


def _exit_past_pyarrow(code: object) -> None:
    """End a command that used pyarrow without the interpreter's final teardown.

    pyarrow's thread pools can still be alive when the interpreter destroys its C++
    state, and about 1% of short processes that read Parquet then abort with
    "terminate called without an active exception" (apache/arrow#34314) after their
    work is done. The Python exit handlers still run and the output is flushed; only the
    teardown that can abort is skipped (docs/SECURITY.md, "Known upstream issues").
    """
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): printed, status 1 (what the interpreter does)
        print(code, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe or stream: nothing more can be delivered
    os._exit(status if 0 <= status <= 255 else 1)
