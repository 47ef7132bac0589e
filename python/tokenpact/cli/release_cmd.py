"""``tokenpact release seal|check|promote|rollback|caches``: release a tokenizer only
together with the template, dataset, checkpoint and cache namespace bound to it, and
retire the caches the old identity built.

Exit codes: 0 every check passed, 1 a check failed or an input could not be read, 2 usage.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..contract import Report
from ._common import TokenpactGroup, echo_rows, fail

_PATH = click.Path(path_type=Path)


@click.group("release", cls=TokenpactGroup)
def release_group() -> None:
    """Release bundles: mechanical admission, atomic promotion, whole-bundle rollback."""


@release_group.command("seal")
@click.option("--name", required=True)
@click.option("--tokenizer", required=True, type=_PATH, help="Artifact directory (tok.save).")
@click.option(
    "--dataset",
    required=True,
    type=_PATH,
    help="Encoded dataset (its directory or dataset.json) or a dataset declaration JSON.",
)
@click.option("--checkpoint", required=True, type=_PATH, help="Checkpoint directory.")
@click.option("--template", type=_PATH, default=None, help="Template declaration JSON.")
@click.option("--canary", type=_PATH, default=None, help="JSONL of {slice, text}.")
@click.option(
    "--max-token-ratio",
    multiple=True,
    metavar="SLICE=RATIO",
    help="Canary limit of tokens new/old per slice ('default=1.0').",
)
@click.option("--previous", type=_PATH, default=None, help="Bundle this one replaces.")
@click.option("--out", "-o", required=True, type=_PATH, help="Bundle file to write.")
def seal_cmd(
    name: str,
    tokenizer: Path,
    dataset: Path,
    checkpoint: Path,
    template: Path | None,
    canary: Path | None,
    max_token_ratio: tuple[str, ...],
    previous: Path | None,
    out: Path,
) -> None:
    """Write a bundle naming the current hashes of every component."""
    from ..migrate.release import seal_release

    limits: dict[str, float] = {}
    for item in max_token_ratio:
        key, _, value = item.partition("=")
        try:
            limits[key] = float(value)
        except ValueError:
            raise click.BadParameter(f"{item!r} is not SLICE=RATIO") from None
    bundle = seal_release(
        out,
        name=name,
        tokenizer=tokenizer,
        dataset=dataset,
        checkpoint=checkpoint,
        template=template,
        canary=canary,
        max_token_ratio=limits or None,
        previous=previous,
    )
    echo_rows(
        [
            ("bundle", str(out)),
            ("transition", bundle["transition"] or "none (no previous release)"),
            ("cache namespace", bundle["cache_namespace"]),
            ("retires", _retires(bundle.get("cache_invalidation"))),
        ]
    )


def _retires(record: dict | None) -> str:
    if record is None:
        return "nothing (no previous release, or the cache namespace did not change)"
    return f"cache namespace {record['stale']['cache_namespace']} and its datasets"


def _emit(report: Report, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    else:
        click.echo(report.format(verbose=True))
    if not report.ok:
        raise SystemExit(1)


@release_group.command("check")
@click.argument("bundle", type=_PATH)
@click.option(
    "--pointer",
    type=_PATH,
    default=None,
    help="Pointer file of the promoted release to compare with.",
)
@click.option("--previous", type=_PATH, default=None, help="Or the previous bundle itself.")
@click.option("--json", "as_json", is_flag=True)
def check_cmd(bundle: Path, pointer: Path | None, previous: Path | None, as_json: bool) -> None:
    """Run every admission check; all must pass (exit 1 otherwise)."""
    from ..migrate.release import check_release, current_bundle

    if pointer is not None and previous is None:
        previous = current_bundle(pointer)
    _emit(check_release(bundle, previous=previous), as_json)


@release_group.command("promote")
@click.argument("bundle", type=_PATH)
@click.option("--pointer", required=True, type=_PATH, help="Pointer file (e.g. current.json).")
@click.option("--json", "as_json", is_flag=True)
def promote_cmd(bundle: Path, pointer: Path, as_json: bool) -> None:
    """Check the bundle and, only if everything passes, switch the pointer atomically."""
    from ..migrate.release import invalidations, promote

    before = len(invalidations(pointer)) if pointer.exists() else 0
    report = promote(bundle, pointer=pointer)
    _emit(report, as_json)
    click.echo(f"promoted {bundle}")
    for entry in invalidations(pointer)[before:]:
        click.echo(f"retired cache namespace {entry['cache_namespace']} (discard its caches)")


@release_group.command("rollback")
@click.option("--pointer", required=True, type=_PATH)
def rollback_cmd(pointer: Path) -> None:
    """Switch back to the previous bundle: every component together."""
    from ..migrate.release import invalidations, rollback

    before = len(invalidations(pointer))
    bundle = rollback(pointer=pointer)
    if bundle is None:
        fail("nothing was rolled back")
    rows = [("current", bundle["name"]), ("cache namespace", bundle["cache_namespace"])]
    for entry in invalidations(pointer)[before:]:
        namespace = entry["cache_namespace"] or "unknown (the candidate bundle is unreadable)"
        rows.append(("invalidate", f"{namespace} (the rolled-back {entry['bundle']})"))
    echo_rows(rows)


@release_group.command("caches")
@click.argument("bundle", type=_PATH)
@click.option(
    "--root",
    "roots",
    multiple=True,
    type=_PATH,
    help="Directory to search for what the step makes stale (repeatable).",
)
@click.option("--json", "as_json", is_flag=True)
def caches_cmd(bundle: Path, roots: tuple[Path, ...], as_json: bool) -> None:
    """The cache-invalidation step a bundle records: the namespace, tokenizer and
    template identity it retires, the datasets to re-encode, and (with --root) the
    stale datasets and cache files or directories found there."""
    from ..migrate.caches import find_stale
    from ..migrate.release import load_bundle

    record = load_bundle(bundle).get("cache_invalidation")
    found = find_stale(record, roots)
    if as_json:
        click.echo(json.dumps({"cache_invalidation": record, "found": found}, indent=2))
        return
    if record is None:
        click.echo("nothing to invalidate: no previous release, or the namespace is unchanged")
        return
    stale = record["stale"]
    rows = [
        ("reason", str(record["reason"])),
        ("stale namespace", stale["cache_namespace"]),
        ("stale tokenizer", stale["tokenizer_semantic_hash"]),
        ("stale template", stale["template_hash"]),
        ("cache kinds", ", ".join(record["caches"])),
        *(("re-encode", d["path"]) for d in record["datasets"]),
        *(("stale dataset", p) for p in found["datasets"]),
        *(("stale cache", p) for p in found["caches"]),
    ]
    echo_rows(rows)
