"""`rlaunch report RUN --html FILE`: one self-contained HTML page about a run, for people who would rather look.

Inline CSS and SVG only: no script, no font, no image, nothing fetched, so the page opens offline, from a mail
attachment or a CI artifact, and a strict Content-Security-Policy (`default-src 'none'`) allows all of it.
Every string from the run (log lines, host names, causes) goes through html.escape.
"""

from __future__ import annotations

import datetime
import json
from html import escape
from pathlib import Path
from typing import Any

from launcher import attempts as attempt_records
from launcher import goodput, ledger, records

COLORS = {  # the goodput parts, also the timeline's phases
    "productive_s": "#2e7d32",
    "startup_s": "#90a4ae",
    "detect_s": "#c62828",
    "teardown_s": "#ef6c00",
    "restart_s": "#6a1b9a",
}
ATTEMPT_COLORS = ("#1565c0", "#00897b", "#7b1fa2", "#5d4037", "#c2185b", "#455a64")
CONTEXT_LINES = 4
MAX_LOG_LINES = 40


def write(run_id: str | None, target: Path) -> str:
    record = records.RunRecord.open(run_id)
    records.write_atomic(target, render(record))
    return record.run_id


def gather(record: records.RunRecord) -> dict[str, Any]:
    state = record.read_state()
    events = attempt_records.read_events(record)
    progress = attempt_records.read_progress(record.root)
    outcomes = []
    for path in record.outcome_paths():
        try:
            outcomes.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    gp = attempt_records.goodput_of(record)
    return {
        "run_id": record.run_id,
        "state": state,
        "events": events,
        "attempts": goodput.attempts_from(events, progress),
        "outcomes": outcomes,
        "goodput": gp,
        "ledger": [e for e in ledger.read() if e.get("run_id") == record.run_id],
        "logs": record.log_paths(),
    }


def render(record: records.RunRecord) -> str:
    data = gather(record)
    state = data["state"]
    started = float(state.get("started_at") or 0)
    title = f"rlaunch run {data['run_id']}"
    sections = [
        _header(data),
        _section("Goodput", _goodput_bar(data["goodput"])),
        _section("Attempts per node", _timeline(data["attempts"], data["events"], started, data["goodput"])),
        _section("Loss across restarts", _loss_chart(data["attempts"])),
        _section("Root cause", _root_causes(data)),
        _section("Node ledger entries from this run", _ledger_table(data["ledger"])),
    ]
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<style>
body{{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#212121;padding:0 16px}}
h1{{font-size:22px;margin:0 0 4px}} h2{{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}}
table{{border-collapse:collapse}} td,th{{padding:3px 10px;text-align:left;border-bottom:1px solid #eee}}
pre{{background:#fafafa;border:1px solid #e0e0e0;padding:8px;overflow-x:auto;font-size:12px}}
.hit{{background:#ffebee;display:block}} .muted{{color:#757575}} .ok{{color:#2e7d32}} .bad{{color:#c62828}}
.legend span{{display:inline-block;margin-right:14px}} .sw{{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:-1px}}
svg text{{font:11px system-ui,sans-serif;fill:#424242}}
</style></head>
<body>
{"".join(sections)}
</body></html>
"""


def _section(title: str, body: str) -> str:
    return f"<h2>{escape(title)}</h2>\n{body}\n"


def _when(t: float | None) -> str:
    if not t:
        return "?"
    return datetime.datetime.fromtimestamp(float(t), datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _header(data: dict[str, Any]) -> str:
    st = data["state"]
    state = str(st.get("state", "?"))
    css = (
        "ok"
        if state == "succeeded"
        else "bad"
        if state in ("failed", "stop-failed", "abandoned")
        else "muted"
    )
    rows = [
        ("cluster", st.get("cluster", "")),
        ("started", _when(st.get("started_at"))),
        ("ended", _when(st.get("ended_at")) if st.get("ended_at") else "still running"),
        ("attempts", str(len(data["attempts"]))),
        ("summary", st.get("summary") or st.get("reason") or ""),
    ]
    rows += [
        ("replaced", f"{r['spare']} replaced {r['node']} (attempt {r['attempt']}: {r['cause']})")
        for r in st.get("replaced", [])
    ]
    body = "".join(f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>" for k, v in rows)
    return (
        f"<h1>rlaunch run {escape(data['run_id'])} · <span class='{css}'>{escape(state)}</span></h1>\n"
        f"<table>{body}</table>\n"
    )


def _legend(items: list[tuple[str, str]]) -> str:
    return (
        "<p class='legend'>"
        + "".join(f"<span><i class='sw' style='background:{c}'></i>{escape(t)}</span>" for c, t in items)
        + "</p>"
    )


def _goodput_bar(gp: goodput.Goodput | None) -> str:
    if gp is None or gp.total_s <= 0:
        return "<p class='muted'>no timing recorded for this run</p>"
    width, x, rects = 1000.0, 0.0, []
    for part, color in COLORS.items():
        w = width * gp.parts[part] / gp.total_s
        if w > 0:
            rects.append(
                f"<rect x='{x:.1f}' y='0' width='{w:.1f}' height='28' fill='{color}'>"
                f"<title>{part[:-2]}: {gp.parts[part]:.1f} s</title></rect>"
            )
        x += w
    data = gp.to_json()
    legend = _legend(
        [(c, f"{p[:-2]} {gp.parts[p]:.1f} s ({gp.parts[p] / gp.total_s:.0%})") for p, c in COLORS.items()]
    )
    lost = f" · {gp.lost_steps} step(s) lost to rollback" if gp.lost_steps else ""
    return (
        f"<p><b>{data['ratio']:.0%}</b> of {data['total_s']:.1f} s spent on training progress that was kept{lost}</p>"
        f"<svg role='img' aria-label='goodput' width='100%' viewBox='0 0 1000 28' preserveAspectRatio='none' "
        f"height='28'>{''.join(rects)}</svg>{legend}"
    )


def _timeline(
    attempts: list[goodput.Attempt], events: list[dict[str, Any]], started: float, gp: goodput.Goodput | None
) -> str:
    if not attempts:
        return "<p class='muted'>no attempts recorded (a detached run, or a record from an older rlaunch)</p>"
    hosts: list[str] = []
    for a in attempts:
        hosts += [h for h in a.hosts if h not in hosts]
    end = max([a.end or a.start for a in attempts] + [started + (gp.total_s if gp else 0)])
    span = max(end - started, 1e-6)
    left, width, row = 90, 880, 34
    height = row * len(hosts) + 52

    def x(t: float) -> float:
        return left + width * (t - started) / span

    out = []
    for i, host in enumerate(hosts):
        y = 10 + i * row
        out.append(f"<text x='4' y='{y + 17}'>{escape(host)}</text>")
        out.append(f"<line x1='{left}' x2='{left + width}' y1='{y + 12}' y2='{y + 12}' stroke='#eeeeee'/>")
    for i in range(6):  # seconds since `up`, so the phases can be read off
        t = started + span * i / 5
        out.append(f"<line x1='{x(t):.1f}' x2='{x(t):.1f}' y1='6' y2='{height - 24}' stroke='#f0f0f0'/>")
        out.append(f"<text x='{x(t) - 10:.1f}' y='{height - 2}'>+{span * i / 5:.0f} s</text>")
    for a in attempts:
        color = ATTEMPT_COLORS[a.index % len(ATTEMPT_COLORS)]
        a_end = a.end or end
        first = a.progress[0][0] if a.progress else None
        for i, host in enumerate(hosts):
            if host not in a.hosts:
                continue
            y = 10 + i * row
            # start-up (light), training (solid), teardown (orange) for this node in this attempt
            out.append(
                f"<rect x='{x(a.start):.1f}' y='{y + 4}' width='{max(x(a_end) - x(a.start), 1):.1f}' height='16' "
                f"fill='{color}' fill-opacity='0.25'><title>attempt {a.index} on {escape(host)}</title></rect>"
            )
            if first is not None:
                stop = a.teardown_at or a_end
                out.append(
                    f"<rect x='{x(first):.1f}' y='{y + 4}' width='{max(x(stop) - x(first), 1):.1f}' height='16' "
                    f"fill='{color}'><title>attempt {a.index}: training</title></rect>"
                )
            if a.teardown_at:
                out.append(
                    f"<rect x='{x(a.teardown_at):.1f}' y='{y + 4}' width='{max(x(a_end) - x(a.teardown_at), 1):.1f}'"
                    f" height='16' fill='{COLORS['teardown_s']}'><title>teardown</title></rect>"
                )
        label_y = 10 + len(hosts) * row + 12
        out.append(f"<text x='{x(a.start):.1f}' y='{label_y}'>attempt {a.index}</text>")
    for e in events:
        if e.get("severity") != "fatal" or e.get("node") not in hosts:
            continue
        t = float(e.get("time") or 0)
        y = 10 + hosts.index(e["node"]) * row + 12
        text = f"{e.get('kind')} {e.get('category') or ''}: {str(e.get('text', ''))[:200]}"
        out.append(
            f"<path d='M{x(t):.1f} {y - 7} l6 7 l-6 7 l-6 -7 z' fill='#c62828' stroke='white'>"
            f"<title>{escape(text)}</title></path>"
        )
    legend = _legend(
        [("#1565c0", "attempt: start-up (light), training (solid)"), (COLORS["teardown_s"], "teardown"),
         ("#c62828", "fatal event (first failure and its cascade)")]
    )  # fmt: skip
    return (
        f"<svg role='img' aria-label='timeline' width='100%' viewBox='0 0 {left + width + 40} {height}'>"
        f"{''.join(out)}</svg>{legend}<p class='muted'>{span:.1f} s from `up` to the end</p>"
    )


def _loss_chart(attempts: list[goodput.Attempt]) -> str:
    points = goodput.loss_curve(attempts)
    finite = [(a, s, v) for a, s, v in points if v == v and abs(v) != float("inf")]
    if not finite:
        return "<p class='muted'>no loss values in the progress lines</p>"
    steps = [s for _, s, _ in finite]
    values = [v for _, _, v in finite]
    s0, s1 = min(steps), max(steps)
    v0, v1 = min(values), max(values)
    left, width, top, height = 60, 880, 10, 240

    def px(step: int) -> float:
        return left + width * (step - s0) / max(s1 - s0, 1)

    def py(v: float) -> float:
        # In halves: with losses near +-1e308 the full difference overflows to inf, and inf/inf put `nan` into
        # the SVG (issue 21); half of each difference always fits in a float.
        return top + height - height * ((v / 2 - v0 / 2) / max(v1 / 2 - v0 / 2, 1e-12))

    out = [
        f"<line x1='{left}' x2='{left}' y1='{top}' y2='{top + height}' stroke='#9e9e9e'/>",
        f"<line x1='{left}' x2='{left + width}' y1='{top + height}' y2='{top + height}' stroke='#9e9e9e'/>",
        f"<text x='4' y='{top + 10}'>{v1:.4g}</text><text x='4' y='{top + height}'>{v0:.4g}</text>",
        f"<text x='{left}' y='{top + height + 16}'>step {s0}</text>",
        f"<text x='{left + width - 50}' y='{top + height + 16}'>step {s1}</text>",
    ]
    legend = []
    for a in attempts:
        mine = [(s, v) for k, s, v in finite if k == a.index]
        if not mine:
            continue
        color = ATTEMPT_COLORS[a.index % len(ATTEMPT_COLORS)]
        path = " ".join(f"{px(s):.1f},{py(v):.1f}" for s, v in mine)
        out.append(f"<polyline points='{path}' fill='none' stroke='{color}' stroke-width='2'/>")
        out += [
            f"<circle cx='{px(s):.1f}' cy='{py(v):.1f}' r='2.5' fill='{color}'><title>attempt {a.index} step {s}: "
            f"{v:.6g}</title></circle>"
            for s, v in mine
        ]
        resumed = f", resumed from {a.resume_from}" if a.resume_from else ""
        legend.append((color, f"attempt {a.index}: steps {mine[0][0]}–{mine[-1][0]}{resumed}"))
    return (
        f"<svg role='img' aria-label='loss' width='100%' viewBox='0 0 {left + width + 10} {top + height + 24}'>"
        f"{''.join(out)}</svg>{_legend(legend)}"
    )


def _log_context(path: Path | None, text: str) -> str:
    if path is None or not text:
        return ""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    needle = text.strip()
    hit = next((i for i, line in enumerate(lines) if needle and needle in line), None)
    if hit is None:
        return ""
    lo, hi = max(0, hit - CONTEXT_LINES), min(len(lines), hit + CONTEXT_LINES + 1)
    body = "".join(
        f"<span class='hit'>{escape(lines[i])}</span>" if i == hit else escape(lines[i]) + "\n"
        for i in range(lo, hi)
    )
    return f"<p class='muted'>{escape(path.name)}, lines {lo + 1}–{hi}</p><pre>{body}</pre>"


def _root_causes(data: dict[str, Any]) -> str:
    failed = [o for o in data["outcomes"] if o.get("code") not in (0, None)]
    if not failed:
        return "<p class='ok'>no failure: every attempt that ended, ended well</p>"
    out = []
    for o in failed:
        root = o.get("root_cause") or {}
        node = root.get("node")
        where = f"{node}" + (f" rank {root['rank']}" if root.get("rank") is not None else "")
        cause = ledger.node_fault(root)
        out.append(
            f"<h3>attempt {o.get('attempt')}: {escape(root.get('category') or root.get('kind') or '?')} on "
            f"{escape(where)}</h3><p>{escape(o.get('summary', ''))}</p>"
            + (f"<p>counted against the node: <b>{escape(cause)}</b></p>" if cause else "")
        )
        t0 = root.get("time")
        lines = [
            e
            for e in data["events"]
            if e.get("severity") == "fatal" and t0 is not None and abs(float(e.get("time") or 0) - t0) < 30
        ][:MAX_LOG_LINES]
        if lines:
            rows = "".join(
                f"<tr><td>{float(e['time']) - t0:+.2f} s</td><td>{escape(str(e.get('node')))}</td>"
                f"<td>{escape(str(e.get('kind')))} {escape(str(e.get('category') or ''))}</td>"
                f"<td><code>{escape(str(e.get('text', ''))[:300])}</code></td></tr>"
                for e in lines
            )
            out.append(f"<table><tr><th>time</th><th>node</th><th>what</th><th>line</th></tr>{rows}</table>")
        out.append(_log_context(data["logs"].get(node or ""), str(root.get("text", ""))))
    return "".join(out)


def _ledger_table(entries: list[dict[str, Any]]) -> str:
    if not entries:
        return "<p class='muted'>none</p>"
    rows = "".join(
        "<tr>"
        + f"<td>{escape(str(e.get('kind')))}</td><td>{escape(str(e.get('host')))}</td><td>{_when(e.get('time'))}</td>"
        + (
            f"<td>{escape(str(e.get('cause')))}: <code>{escape(str(e.get('text', ''))[:200])}</code></td>"
            if e.get("kind") == "strike"
            else f"<td>{float(e.get('productive_s') or 0):.1f} s productive of {float(e.get('total_s') or 0):.1f} s</td>"
        )
        + "</tr>"
        for e in entries
    )
    return f"<table><tr><th>entry</th><th>node</th><th>time</th><th>detail</th></tr>{rows}</table>"
