"""Tiny deterministic SVG charts for the audit report (no JS, no network, no fonts).

Every number is written with fixed precision, so the same data gives the same bytes.
Data marks carry ``class="mark"`` and ``data-series``/``data-value`` attributes: the
browser test counts them to prove a chart has data.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4d7c0f", "#be185d")
WIDTH, HEIGHT = 760, 320
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 30, 70


def _f(x: float) -> str:
    return f"{x:.2f}"


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * exp:
            return step * exp
    return 10 * exp  # pragma: no cover


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1e6:
        return f"{v / 1e6:.3g}M"
    if abs(v) >= 1e3:
        return f"{v / 1e3:.3g}k"
    return f"{v:.3g}"


def _frame(title: str, y_label: str, body: list[str], height: int = HEIGHT) -> str:
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" role="img" aria-label="{escape(title)}">'
        f'<text x="{WIDTH / 2:.0f}" y="18" text-anchor="middle" class="title">'
        f"{escape(title)}</text>"
        f'<text x="14" y="{height / 2:.0f}" transform="rotate(-90 14 {height / 2:.0f})" '
        f'text-anchor="middle" class="axis">{escape(y_label)}</text>'
    )
    return head + "".join(body) + "</svg>"


def _legend(names: Sequence[str], y: float) -> list[str]:
    out = []
    x = LEFT
    for k, name in enumerate(names):
        color = PALETTE[k % len(PALETTE)]
        out.append(f'<rect x="{x}" y="{_f(y)}" width="12" height="12" fill="{color}"/>')
        out.append(f'<text x="{x + 16}" y="{_f(y + 10)}" class="legend">{escape(name)}</text>')
        x += 24 + 7 * len(name)
    return out


def _y_axis(y_max: float, plot_h: float, *, ticks: int = 4) -> list[str]:
    out = []
    for k in range(ticks + 1):
        v = y_max * k / ticks
        y = TOP + plot_h - plot_h * k / ticks
        out.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{_f(y)}" y2="{_f(y)}" class="grid"/>'
        )
        out.append(
            f'<text x="{LEFT - 6}" y="{_f(y + 4)}" text-anchor="end" class="tick">{_fmt(v)}</text>'
        )
    return out


def _log_axis(decades: int, plot_h: float) -> list[str]:
    """Grid lines and labels at 0, 10, 100, ... on a log10(1 + v) axis."""
    out = []
    for k in range(decades + 1):
        y = TOP + plot_h - plot_h * k / decades
        out.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{_f(y)}" y2="{_f(y)}" class="grid"/>'
        )
        label = "0" if k == 0 else _fmt(10.0**k)
        out.append(
            f'<text x="{LEFT - 6}" y="{_f(y + 4)}" text-anchor="end" class="tick">{label}</text>'
        )
    return out


def bar_chart(
    categories: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    *,
    title: str,
    y_label: str,
    y_log: bool = False,
) -> str:
    """Grouped vertical bars: one group per category, one bar per series. ``y_log``:
    heights on a log10(1 + v) scale, ticks at powers of ten (counts spanning several
    orders of magnitude)."""
    plot_h = HEIGHT - TOP - BOTTOM
    plot_w = WIDTH - LEFT - RIGHT
    values = [v for vs in series.values() for v in vs if v is not None]
    scale = (lambda v: math.log10(1 + max(v, 0.0))) if y_log else (lambda v: v)
    if y_log:
        decades = max(1, math.ceil(scale(max(values, default=1.0))))
        y_max = float(decades)
        body = _log_axis(decades, plot_h)
    else:
        y_max = _nice_max(max(values, default=0.0))
        body = _y_axis(y_max, plot_h)
    n_series = max(len(series), 1)
    group_w = plot_w / max(len(categories), 1)
    bar_w = group_w * 0.8 / n_series
    for c, category in enumerate(categories):
        gx = LEFT + c * group_w
        label_x = gx + group_w / 2
        body.append(
            f'<text x="{_f(label_x)}" y="{TOP + plot_h + 14}" text-anchor="end" '
            f'transform="rotate(-30 {_f(label_x)} {TOP + plot_h + 14})" class="tick">'
            f"{escape(category)}</text>"
        )
        for k, (name, vs) in enumerate(series.items()):
            v = vs[c]
            if v is None:
                continue
            h = plot_h * scale(v) / y_max
            x = gx + group_w * 0.1 + k * bar_w
            body.append(
                f'<rect class="mark" data-series="{escape(name)}" data-value="{v:.4f}" '
                f'x="{_f(x)}" y="{_f(TOP + plot_h - h)}" width="{_f(bar_w)}" height="{_f(h)}" '
                f'fill="{PALETTE[k % len(PALETTE)]}"><title>{escape(name)} {escape(category)}: '
                f"{v:.3f}</title></rect>"
            )
    body += _legend(list(series), HEIGHT - 18)
    return _frame(title, y_label, body)


def line_chart(
    series: Mapping[str, Sequence[tuple[float, float]]],
    *,
    title: str,
    x_label: str,
    y_label: str,
    x_log: bool = False,
    y_min: float | None = None,
) -> str:
    """Lines with point markers; ``x_log`` puts x on a log10 scale (x must be > 0)."""
    plot_h = HEIGHT - TOP - BOTTOM
    plot_w = WIDTH - LEFT - RIGHT
    points = [p for ps in series.values() for p in ps]
    tx = (lambda x: math.log10(max(x, 1e-9))) if x_log else (lambda x: x)
    xs = [tx(x) for x, _ in points] or [0.0, 1.0]
    x_lo, x_hi = min(xs), max(xs)
    if x_hi == x_lo:
        x_hi = x_lo + 1
    ys = [y for _, y in points] or [1.0]
    lo = min(ys) if y_min is None else y_min
    y_max = _nice_max(max(ys)) if lo >= 0 else max(ys)
    span = (y_max - lo) or 1.0
    body = []
    for k in range(5):
        v = lo + span * k / 4
        y = TOP + plot_h - plot_h * k / 4
        body.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{_f(y)}" y2="{_f(y)}" class="grid"/>'
        )
        body.append(
            f'<text x="{LEFT - 6}" y="{_f(y + 4)}" text-anchor="end" class="tick">{_fmt(v)}</text>'
        )
    for k in range(5):
        xv = x_lo + (x_hi - x_lo) * k / 4
        x = LEFT + plot_w * k / 4
        label = _fmt(10**xv) if x_log else _fmt(xv)
        body.append(
            f'<text x="{_f(x)}" y="{TOP + plot_h + 16}" text-anchor="middle" class="tick">'
            f"{label}</text>"
        )
    body.append(
        f'<text x="{LEFT + plot_w / 2:.0f}" y="{TOP + plot_h + 34}" text-anchor="middle" '
        f'class="axis">{escape(x_label)}</text>'
    )

    def px(x: float, y: float) -> tuple[float, float]:
        return (
            LEFT + plot_w * (tx(x) - x_lo) / (x_hi - x_lo),
            TOP + plot_h - plot_h * (y - lo) / span,
        )

    for k, (name, ps) in enumerate(series.items()):
        color = PALETTE[k % len(PALETTE)]
        coords = [px(x, y) for x, y in ps]
        if len(coords) > 1:
            d = "M" + " L".join(f"{_f(a)},{_f(b)}" for a, b in coords)
            body.append(f'<path d="{d}" fill="none" stroke="{color}" stroke-width="2"/>')
        step = max(1, len(coords) // 40)
        for (x, y), (a, b) in list(zip(ps, coords, strict=True))[::step]:
            body.append(
                f'<circle class="mark" data-series="{escape(name)}" data-value="{y:.4f}" '
                f'cx="{_f(a)}" cy="{_f(b)}" r="3" fill="{color}"><title>{escape(name)}: '
                f"{_fmt(x)} -&gt; {y:.4g}</title></circle>"
            )
    body += _legend(list(series), HEIGHT - 18)
    return _frame(title, y_label, body)


def range_chart(
    categories: Sequence[str],
    series: Mapping[str, Sequence[tuple[float, float] | None]],
    *,
    title: str,
    x_label: str,
    reference_line: float | None = 1.0,
) -> str:
    """Horizontal bars to the median with a whisker to p95, one row per category."""
    row_h = 12 * max(len(series), 1) + 6
    height = TOP + BOTTOM + row_h * max(len(categories), 1)
    plot_w = WIDTH - LEFT - RIGHT - 40
    values = [hi for vs in series.values() for v in vs if v is not None for hi in v]
    x_max = _nice_max(max(values, default=1.0))
    body = []
    for k in range(5):
        tick = x_max * k / 4
        x = LEFT + 40 + plot_w * k / 4
        body.append(
            f'<line x1="{_f(x)}" x2="{_f(x)}" y1="{TOP}" y2="{height - BOTTOM}" class="grid"/>'
        )
        body.append(
            f'<text x="{_f(x)}" y="{height - BOTTOM + 14}" text-anchor="middle" '
            f'class="tick">{_fmt(tick)}</text>'
        )
    if reference_line is not None:
        x = LEFT + 40 + plot_w * reference_line / x_max
        body.append(
            f'<line x1="{_f(x)}" x2="{_f(x)}" y1="{TOP}" y2="{height - BOTTOM}" class="ref"/>'
        )
    body.append(
        f'<text x="{LEFT + 40 + plot_w / 2:.0f}" y="{height - BOTTOM + 32}" text-anchor="middle" '
        f'class="axis">{escape(x_label)}</text>'
    )
    for c, category in enumerate(categories):
        y0 = TOP + c * row_h
        body.append(
            f'<text x="{LEFT + 34}" y="{_f(y0 + row_h / 2 + 4)}" text-anchor="end" '
            f'class="tick">{escape(category)}</text>'
        )
        for k, (name, vs) in enumerate(series.items()):
            pair = vs[c]
            if pair is None:
                continue
            median, p95 = float(pair[0]), float(pair[1])
            y = y0 + 3 + k * 12
            color = PALETTE[k % len(PALETTE)]
            w = plot_w * median / x_max
            body.append(
                f'<rect class="mark" data-series="{escape(name)}" data-value="{median:.4f}" '
                f'x="{LEFT + 40}" y="{_f(y)}" width="{_f(w)}" height="9" fill="{color}">'
                f"<title>{escape(name)} {escape(category)}: median {median:.3f}, "
                f"p95 {p95:.3f}</title></rect>"
            )
            x1, x2 = LEFT + 40 + w, LEFT + 40 + plot_w * p95 / x_max
            body.append(
                f'<line x1="{_f(x1)}" x2="{_f(x2)}" y1="{_f(y + 4.5)}" y2="{_f(y + 4.5)}" '
                f'stroke="{color}"/>'
            )
    body += _legend(list(series), height - 18)
    return _frame(title, "", body, height=height)
