"""``tokenpact data clean``: run the cleaning steps over corpus files.

Registered on the ``data`` group by :mod:`.data_cmds` (one line), so ``tokenpact data
clean IN... OUT`` sits next to ``data dedup`` and ``data split``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..contract.corpus_sidecar import DEFAULT_INLINE_LIMIT
from ..errors import ConfigError, InvalidInputError
from ._common import progress_option, resolve_progress


def _step_list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    steps = [s.strip() for s in text.split(",") if s.strip()]
    if not steps:
        raise click.BadParameter("name at least one step", param_hint="--steps")
    return steps


def register(group: click.Group, reader_options: Any, engine_options: Any, read: Any) -> None:
    """Add the ``clean`` command to ``group`` (the ``data`` group's shared options)."""

    @group.command("clean")
    @reader_options
    @click.argument("out_path", type=click.Path(path_type=Path))
    @click.option(
        "--steps",
        default=None,
        help="Comma-separated steps in order: extract, repair, langid, quality, pii, "
        "decontam (default: those in --config, else extract,langid,quality,pii).",
    )
    @click.option(
        "--config",
        "config_path",
        type=click.Path(path_type=Path),
        default=None,
        help='JSON file: {"<step>": {<options>}}, e.g. {"langid": {"keep": ["en"]}}.',
    )
    @click.option(
        "--eval-set",
        "eval_sets",
        multiple=True,
        type=click.Path(path_type=Path),
        help="Benchmark/test file to decontaminate against (repeatable; adds decontam).",
    )
    @click.option(
        "--rejected",
        "rejected_path",
        type=click.Path(path_type=Path),
        default=None,
        help="Write rejected samples (JSON Lines: step, rules, text) here for review.",
    )
    @click.option(
        "--report",
        "report_path",
        type=click.Path(path_type=Path),
        default=None,
        help="Write the per-step report (counts, reasons, rule thresholds) as JSON.",
    )
    @click.option(
        "--manifest",
        "manifest_path",
        type=click.Path(path_type=Path),
        default=None,
        help="Write the corpus manifest (kept documents, step records) here.",
    )
    @click.option(
        "--manifest-inline-limit",
        "inline_limit",
        type=click.IntRange(min=0),
        default=DEFAULT_INLINE_LIMIT,
        show_default=True,
        help="Past this many document records (kept and dropped), the manifest keeps them "
        "in a sidecar beside it (NAME.documents.jsonl, named with its SHA-256 in the "
        "manifest); tokenpact hash reads both and checks the sidecar.",
    )
    @click.option("--revision", default="cleaned", show_default=True, help="Manifest revision.")
    @click.option(
        "--preset",
        type=click.Choice(["web", "prose", "technical", "code", "short"]),
        default="web",
        show_default=True,
        help="Thresholds that fit the content (web pages, prose, man pages and technical "
        "docs, source code, short texts); --config options win.",
    )
    @click.option(
        "--max-drop",
        type=click.FloatRange(0.0, 1.0),
        default=0.5,
        show_default=True,
        help="Exit 1 (outputs still written) when one step drops more than this share of a "
        "source's documents.",
    )
    @click.option("--allow-drop", is_flag=True, help="Accept any drop share (exit 0).")
    @engine_options
    @progress_option
    def clean_cmd(
        inputs: tuple[Path, ...],
        out_path: Path,
        steps: str | None,
        config_path: Path | None,
        eval_sets: tuple[Path, ...],
        rejected_path: Path | None,
        report_path: Path | None,
        manifest_path: Path | None,
        inline_limit: int,
        revision: str,
        preset: str,
        max_drop: float,
        allow_drop: bool,
        engine: str,
        address: str | None,
        progress: bool | None,
        **reader: Any,
    ) -> None:
        """Clean corpus files (extraction, repair, language ID, quality, personal data,
        decontamination); write kept documents as JSON Lines to OUT.

        \b
        Example:
          tokenpact data clean pages.jsonl kept.jsonl --steps extract,langid,quality,pii \\
            --rejected rejected.jsonl --manifest corpus.json
        """
        from ..data.cleaning import DEFAULT_STEPS, CleaningPipeline
        from ..data.cleaning.pipeline import STEP_ORDER
        from ..data.cleaning.presets import preset_config
        from ..data.corpus_manifest import read_json

        names = _step_list(steps)
        config: dict[str, Any] = {}
        if config_path is not None:
            config = read_json(config_path)
            if not isinstance(config, dict):
                raise ConfigError(f"{config_path} must hold a JSON object of step options")
        if names is None:
            names = [s for s in STEP_ORDER if s in config] or list(DEFAULT_STEPS)
        if eval_sets:
            decontam = dict(config.get("decontam") or {})
            decontam["eval_sets"] = [*decontam.get("eval_sets", []), *map(str, eval_sets)]
            config["decontam"] = decontam
            if "decontam" not in names:
                names.append("decontam")
        pipeline = CleaningPipeline.from_config(preset_config(preset, names, config), steps=names)
        show = resolve_progress(progress)
        try:
            docs = read(inputs, reader, show)
        except UnicodeDecodeError as exc:
            raise InvalidInputError(
                f"an input file is not UTF-8 text ({exc.reason} at byte {exc.start}); convert "
                "it (e.g. iconv -f latin1 -t utf-8) before cleaning"
            ) from None
        ray_options = {"address": address} if engine == "ray" and address else None
        result = pipeline.run(docs, engine=engine, ray_options=ray_options, progress=show)
        fields = {
            "text_field": reader["text_field"],
            "id_field": reader["id_field"] or None,
            "source_field": reader["source_field"],
            "group_field": reader["group_field"],
        }
        result.write(out_path, rejected_path=rejected_path, report_path=report_path, names=fields)
        if manifest_path is not None:
            from ..contract.corpus_sidecar import write_corpus_manifest

            manifest = result.corpus_manifest(revision=revision)
            document = manifest.to_json()
            written = write_corpus_manifest(manifest_path, document, inline_limit=inline_limit)
            if len(written) > 1:
                click.echo(f"document records of {manifest_path} -> {written[1]}")
        click.echo(result.to_markdown())
        kept = sum(1 for d in result.documents if d.kept)
        click.echo(f"{kept} of {len(result.documents)} documents kept -> {out_path}")
        heavy = [] if allow_drop else result.drops(max_drop)
        for row in heavy:
            click.echo(
                f"warning: {row['step']} dropped {row['dropped']} of {row['documents']} "
                f"documents ({row['share']:.0%}) of source {row['source']!r}",
                err=True,
            )
        if heavy:
            click.echo(
                f"error: a step dropped more than {max_drop:.0%} of a source; choose the "
                "--preset that fits the content (prose, technical, code, short), adjust "
                "--config, or pass --allow-drop",
                err=True,
            )
            raise SystemExit(1)
