"""``report.html``: one self-contained page (inline CSS and SVG, no script, no network).

Drawn only from :func:`tokenpact.audit.run.stable_view` of the report, so the same
inputs give a byte-identical file; throughput and timings stay in ``report.json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from .svg import bar_chart, line_chart, range_chart

CHARTS = ("compression", "length-cdf", "premium", "sweep", "exposure")
MAX_LANGUAGES = 40

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1000px;
color:#111;background:#fff}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px;margin:8px 0;display:block;max-width:100%;
overflow-x:auto}
td,th{border:1px solid #ddd;padding:3px 7px;text-align:right}th{background:#f3f4f6}
td:first-child,th:first-child{text-align:left}
.pass{color:#166534;font-weight:600}.fail{color:#b91c1c;font-weight:600}
figure{margin:12px 0}figcaption{font-size:12px;color:#555;max-width:760px}
svg .title{font-size:14px;font-weight:600}svg .tick,svg .legend{font-size:11px}
svg .axis{font-size:12px}svg .grid{stroke:#e5e7eb}svg .ref{stroke:#111;stroke-dasharray:4 3}
.decision{font-size:16px;padding:10px;border:2px solid #166534;background:#f0fdf4}
code{font-size:12px}
"""


def _num(v: Any, digits: int = 3) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    if isinstance(v, int):
        return f"{v:,}"
    return escape(str(v))


def _table(headers: list[str], rows: list[list[str]], cls: str = "") -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _figure(chart: str, svgs: list[str], caption: str) -> str:
    return (
        f'<figure class="chart" data-chart="{chart}">{"".join(svgs)}'
        f"<figcaption>{caption}</figcaption></figure>"
    )


def _summary(report: Mapping[str, Any]) -> str:
    rows = []
    for name, t in report["tokenizers"].items():
        m = t["metrics"]["overall"]
        r = t["reconstruction"]
        o = t["offsets"]
        rows.append(
            [
                escape(name),
                escape(t["semantics"]),
                _num(t["vocab_size"]),
                f"<code>{escape(t['semantic_hash'][:19])}</code>",
                _num(m["tokens"]),
                _num(m["bytes_per_token"]),
                _num(m["graphemes_per_token"]),
                _num(m["fertility"]),
                _num(m["single_byte_fraction"]),
                _num(m["unk_rate"], 5),
                _num(m["byte_fallback_rate"], 5),
                f"{m['p50']}/{m['p95']}/{m['max']}",
                _num(m["truncated"]),
                _num(m["attention_pairs"] / 1e9, 2),
                f"{r['exact']}/{r['records']}",
                _num(o["accuracy_exact"]),
                _num(t["normalization_collisions"]["colliding_groups"]),
            ]
        )
    headers = [
        "tokenizer",
        "semantics",
        "V",
        "semantic hash",
        "tokens",
        "bytes/tok",
        "graphemes/tok",
        "fertility",
        "1-byte frac",
        "UNK rate",
        "byte-fallback",
        "p50/p95/max",
        f"> C={report['context_length']}",
        "sum n² (G)",
        "exact round trip",
        "offset acc.",
        "norm. collisions",
    ]
    return _table(headers, rows)


def _compression(report: Mapping[str, Any]) -> str:
    slices = report["corpus"]["slices"]
    series = {
        name: [t["metrics"]["slices"][s]["bytes_per_token"] for s in slices]
        for name, t in report["tokenizers"].items()
    }
    chart = bar_chart(
        slices,
        series,
        title="Compression by slice (ratio of totals)",
        y_label="UTF-8 bytes per token",
    )
    ref = report["reference"]
    rows = []
    for s in slices:
        row = [escape(s)]
        for t in report["tokenizers"].values():
            block = t["metrics"]["slices"][s]
            amp = block.get("amplification")
            row.append(
                f"{_num(block['bytes_per_token'])} B/tok, fert. {_num(block['fertility'], 2)}"
                + (
                    ""
                    if amp is None
                    else f", A={_num(amp['ratio_of_totals'])} "
                    f"(macro {_num(amp['macro_mean_ratio'])})"
                )
            )
        rows.append(row)
    table = _table(["slice", *report["tokenizers"]], rows)
    caption = (
        f"Bytes per token per slice. A = token amplification against <b>{escape(ref)}</b> "
        "on the same records: ratio of totals, macro = mean of per-record ratios."
    )
    return _figure("compression", [chart], caption) + table


def _builtin_slices(report: Mapping[str, Any]) -> str:
    """Bytes per token on the slices computed from the text (code, numbers, ...)."""
    names = report["corpus"].get("builtin_slices") or {}
    if not names:
        return "<p>Built-in slices were turned off for this run.</p>"
    rows = []
    for name, values in names.items():
        for value in values:
            row = [escape(name), escape(value)]
            for t in report["tokenizers"].values():
                block = t["builtin_slices"][name][value]
                row.append(f"{_num(block['bytes_per_token'])} B/tok ({block['records']:,} rec.)")
            rows.append(row)
    caption = (
        "<p>Slices computed from the text itself, without a record field: code, numbers, "
        "URLs, emoji, mixed scripts, length and quality-score bands (docs/AUDIT.md).</p>"
    )
    return caption + _table(["slice", "value", *report["tokenizers"]], rows)


def _cdf(report: Mapping[str, Any]) -> str:
    series = {
        name: [(max(float(x), 1.0), float(y)) for x, y in t["length_cdf"]]
        for name, t in report["tokenizers"].items()
    }
    chart = line_chart(
        series,
        title="Sequence-length CDF",
        x_label="tokens per record (log)",
        y_label="fraction of records",
        x_log=True,
        y_min=0.0,
    )
    return _figure("length-cdf", [chart], "Fraction of records with at most x tokens.")


def _premium(report: Mapping[str, Any]) -> str:
    per = {n: t.get("premium") for n, t in report["tokenizers"].items() if t.get("premium")}
    if not per:
        return _figure("premium", [], "No parallel corpus was given (--parallel FILE).")
    first = next(iter(per.values()))
    langs = sorted(first["languages"], key=lambda lang: -first["languages"][lang]["items"])
    langs = sorted(
        langs[:MAX_LANGUAGES], key=lambda lang: (first["languages"][lang]["median"], lang)
    )
    series = {
        name: [
            (p["languages"][lang]["median"], p["languages"][lang]["p95"])
            if lang in p["languages"]
            else None
            for lang in langs
        ]
        for name, p in per.items()
    }
    chart = range_chart(
        langs,
        series,
        title=f"Token premium relative to {first['reference']}",
        x_label="tokens / reference tokens (bar: median, whisker: p95)",
    )
    rows = [
        [escape(lang)]
        + [
            (
                f"{_num(p['languages'][lang]['median'], 2)} / "
                f"{_num(p['languages'][lang]['p95'], 2)} / {_num(p['languages'][lang]['max'], 1)}"
            )
            if lang in p["languages"]
            else "-"
            for p in per.values()
        ]
        for lang in langs
    ]
    table = _table(["language (median / p95 / max)", *per], rows)
    caption = (
        f"Per-item premium over {first['items']:,} parallel items; the {len(langs)} "
        "languages with most items, sorted by median."
    )
    return _figure("premium", [chart], caption) + table


def _sweep(report: Mapping[str, Any]) -> str:
    sweep = (report.get("selection") or {}).get("sweep")
    if not sweep:
        return _figure("sweep", [], "No vocabulary sweep was run (--sweep-sizes).")
    pts = sweep["points"]
    tokens = line_chart(
        {"validation tokens": [(p["vocab_size"], p["validation_tokens"]) for p in pts]},
        title="Vocabulary sweep: validation tokens vs V",
        x_label="vocabulary size V",
        y_label="validation tokens",
    )
    params = line_chart(
        {"vocabulary parameters": [(p["vocab_size"], p["vocab_params"]) for p in pts]},
        title="Vocabulary parameters vs V",
        x_label="vocabulary size V",
        y_label="parameters",
        y_min=0.0,
    )
    rows = [
        [
            _num(p["vocab_size"]),
            _num(p["validation_tokens"]),
            _num(p["bytes_per_token"]),
            _num(p["vocab_params"]),
            _num(p["logits_flops"] / 1e9, 2),
            _num(p["attention_pairs"]),
            escape(str(p["stop_reason"])),
        ]
        for p in pts
    ]
    table = _table(
        [
            "V",
            "validation tokens",
            "bytes/tok",
            "vocab params",
            "F_logits (GFLOP)",
            "sum n²",
            "stop",
        ],
        rows,
    )
    caption = (
        f"Nested byte-level BPE candidates trained on {sweep['fit_records']:,} fit records "
        f"({sweep['fit_bytes']:,} bytes, pattern {escape(sweep['pattern'])}); each larger "
        "vocabulary extends the smaller one's merges with IDs preserved (checked)."
    )
    return _figure("sweep", [tokens, params], caption) + table


def _exposure(report: Mapping[str, Any]) -> str:
    labels: list[str] = []
    series: dict[str, list[float | None]] = {}
    rows = []
    for name, t in report["tokenizers"].items():
        audit = t["vocab_audit"]
        exposure = audit.get("exposure")
        if exposure:
            labels = exposure["histogram"]["labels"]
            series[name] = [float(c) for c in exposure["histogram"]["counts"]]
        rows.append(
            [escape(name)]
            + [_num(audit["classes"][c]) for c in audit["classes"]]
            + [_num(audit["partial_utf8"]), escape(audit["proof"])]
        )
    chart = bar_chart(
        labels,
        series,
        title="Exposure: corpus occurrences per ID",
        y_label="number of IDs (log scale)",
        y_log=True,
    )
    first = next(iter(report["tokenizers"].values()))["vocab_audit"]
    table = _table(["tokenizer", *first["classes"], "partial UTF-8", "proof applies to"], rows)
    caption = (
        "How many IDs the audited corpus emits 0, 1-9, 10-99, ... times. Never-seen IDs "
        "are candidates for under-training, not proof of it. The table classifies "
        "every ID statically (see docs/AUDIT.md for what 'unreachable' proves)."
    )
    return _figure("exposure", [chart], caption) + table


def _decision(report: Mapping[str, Any]) -> str:
    sel = report.get("selection") or {}
    if not sel:
        return "<p>No selection was run.</p>"
    decision = sel["selection"]
    gates = sel["gates"]
    rows = []
    for c in decision["candidates"]:
        status = (
            '<span class="pass">pass</span>' if c["eligible"] else '<span class="fail">fail</span>'
        )
        amp = max(c["slice_amplification"].values(), default=None)
        rows.append(
            [
                escape(c["candidate_id"]),
                _num(c["vocab_size"]),
                _num(c["vocab_params"]),
                _num(c["validation_tokens"]),
                _num(c["reconstruction_failures"]),
                _num(c["underexposed_count"]),
                _num(amp),
                status,
                escape("; ".join(c["failures"])) or "-",
            ]
        )
    table = _table(
        [
            "candidate",
            "V",
            "vocab params",
            "validation tokens",
            "round-trip failures",
            "under-exposed rows",
            "max slice A",
            "gates",
            "failures",
        ],
        rows,
        "gates",
    )
    split = sel["split"]
    test = sel["test"]
    gate_text = ", ".join(f"{escape(k)}={escape(str(v))}" for k, v in gates.items())
    return (
        f"<p>Split by {escape(str(split['group_field'] or 'record id'))}: fit {split['fit']:,}, "
        f"validation {split['validation']:,}, test {split['test']:,} records. Model shape: "
        f"{escape(str(sel['shape']))}. Gates: {gate_text}. Amplification baseline: "
        f"{escape(sel['baseline'])}.</p>{table}" + _verdict(decision, test)
    )


def _verdict(decision: Mapping[str, Any], test: Mapping[str, Any] | None) -> str:
    if decision["winner"] is None or test is None:
        return (
            '<p class="decision fail" id="decision">No winner: no candidate passes every '
            f"gate. {escape(str(decision.get('error', '')))} The test split stays sealed. "
            f"Candidate set hash <code>{escape(decision['candidate_set_hash'])}</code>.</p>"
        )
    return (
        f'<p class="decision" id="decision">Winner: <b>{escape(decision["winner"])}</b> '
        f"(minimum {escape(decision['key'])} among candidates passing every gate). "
        f"Candidate set hash <code>{escape(decision['candidate_set_hash'])}</code>. "
        f"Test split evaluated once after the freeze: {test['positions']:,} positions over "
        f"{test['records']:,} records ({test['bytes']:,} bytes).</p>"
    )


def render_html(report: Mapping[str, Any]) -> str:
    """The report page for a :func:`stable_view` of a report."""
    corpus = report["corpus"]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">",
        f"<title>tokenpact audit: {escape(corpus['name'])}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>Tokenizer audit: {escape(corpus['name'])}</h1>",
        f"<p>{corpus['records']:,} records, {corpus['bytes']:,} UTF-8 bytes, slices by "
        f"<code>{escape(str(corpus['slice_field']))}</code>; words: "
        f"<code>{escape(corpus['word_counter'])}</code>; {escape(corpus['grapheme_clusters'])}; "
        f"percentiles: {escape(corpus['percentiles'])}. Context length C = "
        f"{report['context_length']:,}. Throughput figures are in report.json (left out here "
        "so that this page is deterministic).</p>",
        "<h2>Summary</h2>",
        _summary(report),
        "<h2>Compression by slice</h2>",
        _compression(report),
        "<h2>Built-in slices</h2>",
        _builtin_slices(report),
        "<h2>Sequence lengths</h2>",
        _cdf(report),
        "<h2>Token premium by language</h2>",
        _premium(report),
        "<h2>Vocabulary sweep</h2>",
        _sweep(report),
        "<h2>Vocabulary audit and exposure</h2>",
        _exposure(report),
        "<h2>Gates and decision</h2>",
        _decision(report),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"
