"""A small, dependency-free SVG of two loss curves: the uninterrupted run and the resumed one, with the resume
step marked. Identical curves overlap exactly, so the resumed curve is dashed to stay visible on top."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from xml.sax.saxutils import escape

WIDTH, HEIGHT, MARGIN = 640, 360, 48
COLOURS = {"uninterrupted": "#1f77b4", "resumed": "#d62728", "marker": "#555555"}


def _scale(lo: float, hi: float, out_lo: float, out_hi: float):
    span = (hi - lo) or 1.0  # a flat curve still gets a drawable axis
    return lambda v: out_lo + (v - lo) / span * (out_hi - out_lo)


def _polyline(points: list[tuple[float, float]], colour: str, dashed: bool) -> str:
    coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    dash = ' stroke-dasharray="6 4"' if dashed else ""
    return f'<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} points="{coords}"/>'


def loss_svg(
    uninterrupted: Mapping[int, float],
    resumed: Mapping[int, float],
    resume_step: int | None = None,
    title: str = "loss: uninterrupted vs resumed",
) -> str:
    """Curves are step → loss mappings (checks.step_losses gives them). Non-finite losses are left out of the
    lines and counted in the legend, so a NaN run still renders."""
    finite = [v for curve in (uninterrupted, resumed) for v in curve.values() if math.isfinite(v)]
    steps = [s for curve in (uninterrupted, resumed) for s in curve]
    x = _scale(min(steps, default=0), max(steps, default=1), MARGIN, WIDTH - MARGIN)
    lo, hi = min(finite, default=0.0), max(finite, default=1.0)
    y = _scale(lo, hi, HEIGHT - MARGIN, MARGIN)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{MARGIN}" y="20" font-size="14">{escape(title)}</text>',
        f'<line x1="{MARGIN}" y1="{HEIGHT - MARGIN}" x2="{WIDTH - MARGIN}" y2="{HEIGHT - MARGIN}" stroke="black"/>',
        f'<line x1="{MARGIN}" y1="{MARGIN}" x2="{MARGIN}" y2="{HEIGHT - MARGIN}" stroke="black"/>',
        f'<text x="{MARGIN}" y="{HEIGHT - MARGIN + 16}">{min(steps, default=0)}</text>',
        f'<text x="{WIDTH - MARGIN}" y="{HEIGHT - MARGIN + 16}" text-anchor="end">step {max(steps, default=0)}</text>',
        f'<text x="{MARGIN - 4}" y="{HEIGHT - MARGIN}" text-anchor="end">{lo:.4g}</text>',
        f'<text x="{MARGIN - 4}" y="{MARGIN + 4}" text-anchor="end">{hi:.4g}</text>',
    ]
    if resume_step is not None and steps:
        rx = x(resume_step)
        parts.append(
            f'<line x1="{rx:.1f}" y1="{MARGIN}" x2="{rx:.1f}" y2="{HEIGHT - MARGIN}" '
            f'stroke="{COLOURS["marker"]}" stroke-dasharray="2 3"/>'
        )
        parts.append(f'<text x="{rx + 4:.1f}" y="{MARGIN + 12}">resumed from step {resume_step}</text>')
    for row, (label, curve, dashed) in enumerate(
        (("uninterrupted", uninterrupted, False), ("resumed", resumed, True))
    ):
        points = [(x(s), y(v)) for s, v in sorted(curve.items()) if math.isfinite(v)]
        if points:
            parts.append(_polyline(points, COLOURS[label], dashed))
        bad = sum(not math.isfinite(v) for v in curve.values())
        note = f" ({bad} non-finite)" if bad else ""
        ly = MARGIN + 28 + 16 * row
        parts.append(
            f'<text x="{WIDTH - MARGIN}" y="{ly}" text-anchor="end" fill="{COLOURS[label]}">'
            f"{label}{note}</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def write_loss_svg(
    path: Path,
    uninterrupted: Mapping[int, float],
    resumed: Mapping[int, float],
    resume_step: int | None = None,
) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(loss_svg(uninterrupted, resumed, resume_step))
    tmp.replace(path)
