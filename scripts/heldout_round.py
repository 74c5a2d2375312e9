"""The held-out rounds' tooling (issue 26): check a thread is uncited, build a round from its collectors' files, score
it once, and compare two commits' classifications of every fixture line. The process it serves is written in each
round's criteria (tests/fixtures/logs/heldout/ROUNDnn-SELECTION.md) and pending/README.md; the collectors' and the
scope reviewer's briefs are scripts/heldout_prompts.md. Kept in the tree because /tmp does not survive a session.

    python scripts/heldout_round.py cited [--work DIR] [--me X] URL ...   CITED or FREE per thread (collectors run it)
    python scripts/heldout_round.py repeats --round N --me X               rows of DIR/out-X.txt the build would drop
    python scripts/heldout_round.py build ROUND [--work DIR] [--write]     DIR/out-*.txt -> pending/roundNN-*.log
    python scripts/heldout_round.py score ROUND [SCOPE_TSV] [-v]           in scope, all lines, /after as '~'
    python scripts/heldout_round.py dump OUT.json [--repo DIR]             every fixture line's classification
    python scripts/heldout_round.py compare BEFORE.json AFTER.json         lines that changed, better or worse

A collector's file holds blocks of "THREAD<TAB>url<TAB>owner/repo #N<TAB>context" followed by
"label<TAB>emitter<TAB>line" rows; DIR defaults to /tmp/roundNN.
"""

from __future__ import annotations

import argparse
import glob
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "fixtures" / "logs"
HELD = LOGS / "heldout"
PENDING = HELD / "pending"
CATEGORIES = {
    "collective-timeout", "comm-error", "network", "rendezvous", "gpu-fault", "oom", "crash", "divergence",
    "version-mismatch", "config",
}  # fmt: skip
# Repositories that moved or are stored under another name (the criteria's list).
ALIASES = [
    {"microsoft/deepspeed", "deepspeedai/deepspeed"},
    {"radeonopencompute/rocm", "rocm/rocm", "rocm/legacy-rocm-build"},
    {"hiyouga/llama-factory", "hiyouga/llamafactory"},
    {"ggerganov/llama.cpp", "ggml-org/llama.cpp"},
    {"jmorganca/ollama", "ollama/ollama"},
    {"openai/triton", "triton-lang/triton"},
    {"comfyanonymous/comfyui", "comfy-org/comfyui"},  # added during round 34 (a collector noticed it)
]
ROCM_EMITTER = re.compile(
    r"rocm|hip|clr|rocr|hsa|amdgpu|amdkfd|kfd|rccl|miopen|rocblas|hipblas|composable|\bck\b|comgr|rocminfo"
    r"|rocm-smi|amd-smi|hcc|tensile|rocfft|rocsolver|migraphx",
    re.I,
)


def _repos(owner_repo: str) -> set[str]:
    name = owner_repo.lower()
    found = {name}
    for group in ALIASES:
        if name in group:
            found |= group
    owner, _, repo = name.partition("/")
    if owner in ("rocmsoftwareplatform", "rocm", "radeonopencompute"):
        found |= {f"rocmsoftwareplatform/{repo}", f"rocm/{repo}", f"radeonopencompute/{repo}"}
    return found


def thread_patterns(url: str) -> list[str]:
    """PCRE patterns that find a thread anywhere it could be cited: its address under every alias of its repository
    (issues, pull or discussions), or "owner/repo #N"."""
    match = re.match(r"https?://(?:www\.)?github\.com/([^/]+/[^/]+)/(?:issues|pull|discussions)/(\d+)", url)
    if not match:
        return [re.escape(re.sub(r"^https?://(www\.)?", "", url.rstrip("/"))) + r"(?![\w/-])"]
    number = match.group(2)
    patterns = []
    for repo in _repos(match.group(1)):
        patterns.append(re.escape(f"github.com/{repo}/") + r"(issues|pull|discussions)/" + number + r"(?!\d)")
        patterns.append(r"(?<![\w.-])" + re.escape(repo) + r" #" + number + r"(?!\d)")
    return patterns


def cited_in_tree(url: str) -> bool:
    return any(
        subprocess.run(["git", "-C", str(ROOT), "grep", "-q", "-i", "-P", p, "--", "."]).returncode == 0
        for p in thread_patterns(url)
    )


def cmd_cited(args: argparse.Namespace) -> None:
    """Prints only the verdict, never the matching text (collectors work blind)."""
    others = [
        f for f in glob.glob(f"{args.work}/out-*.txt") if not (args.me and f.endswith(f"out-{args.me}.txt"))
    ]
    for url in args.urls:
        taken = cited_in_tree(url) or any(
            re.search(p, Path(f).read_text(encoding="utf-8", errors="replace"), re.I)
            for f in others
            for p in thread_patterns(url)
        )
        print(("CITED" if taken else "FREE") + "\t" + url)


def _label_ok(label: str) -> bool:
    if label in ("-", "~"):
        return True
    parts = label.split("/")
    return (
        len(parts) in (2, 3)
        and all(c in CATEGORIES for c in parts[0].split("|"))
        and parts[1] in ("fatal", "warning")
        and (len(parts) == 2 or parts[2] == "after")
    )


def _known_lines() -> set[str]:
    known = set()
    for path in [*LOGS.glob("*.log"), *HELD.glob("*.log"), *PENDING.glob("*.log")]:
        for raw in path.read_text(encoding="utf-8").splitlines():
            if raw.strip() and not raw.startswith("#") and "\t" in raw:
                known.add(raw.partition("\t")[2])
    return known


def _out_rows(path: str | Path) -> Iterator[tuple[int, list[str]]]:
    """A collector's file as (line number, fields): a "THREAD" header split at every tab, a row split in three at most
    (label, emitter, the line as posted). Blank lines and Markdown fences are skipped. The build and the collectors'
    repeats check read the files through this one place, so they agree on what a row's line is."""
    for number, raw in enumerate(Path(path).read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if raw.strip() and not raw.startswith("```"):
            yield number, raw.split("\t") if raw.startswith("THREAD\t") else raw.split("\t", 2)


def cmd_repeats(args: argparse.Namespace) -> None:
    """A collector's own file: the row numbers whose line repeats a fixture or an earlier round word for word (the build
    drops them), so the collector can take another line instead (round 39: round 37 dropped 74 of its 223 collected
    failure lines so). Prints numbers only, never a fixture's text or label: collectors work blind."""
    known = _known_lines()
    repeats = [
        str(number)
        for number, fields in _out_rows(f"{args.work}/out-{args.me}.txt")
        if fields[0] != "THREAD" and len(fields) == 3 and fields[2] in known
    ]
    print(f"{len(repeats)} repeated rows" + (": " + " ".join(repeats) if repeats else ""))


def cmd_build(args: argparse.Namespace) -> None:
    """Threads already cited, a thread taken twice and word-for-word repeats of any fixture or earlier round are
    dropped; each line goes to the file of its first-written category (healthy-side lines to -healthy); the emitter
    column goes to DIR/emitters.tsv for the blind scope reviewer."""
    threads: list[tuple[str, str, str, list[tuple[str, str, str]]]] = []
    bad = []
    for out in sorted(glob.glob(f"{args.work}/out-*.txt")):
        current: list[tuple[str, str, str]] | None = None
        for number, fields in _out_rows(out):
            if fields[0] == "THREAD":
                current = []
                name = fields[2].strip() if len(fields) > 2 else ""
                threads.append((fields[1].strip(), name, " ".join(fields[3:]).strip(), current))
                continue
            if current is None or len(fields) != 3 or not _label_ok(fields[0].strip()):
                # where and what kind of fault, never the line: the rule writer runs the build before the lines are
                # committed and must not read them (turn 23: three rows' text was printed that way)
                label = fields[0].strip() if len(fields) == 3 else ""
                why = (
                    "no THREAD line above"
                    if current is None
                    else f"label {label!r}"
                    if label
                    else "not 3 fields"
                )
                bad.append(f"{out}:{number}: {why}")
                continue
            current.append((fields[0].strip(), fields[1].strip(), fields[2]))
    known, seen_urls, seen_lines = _known_lines(), set(), set()
    stats: Counter[str] = Counter()
    files: dict[str, list[tuple[str, str, str] | str]] = {}
    for url, name, context, rows in threads:
        key = url.lower().rstrip("/")
        if not url.startswith("https://") or key in seen_urls or cited_in_tree(url):
            stats["threads dropped (no https, twice or cited)"] += 1
            print("dropped:", url)
            continue
        seen_urls.add(key)
        kept = []
        for label, emitter, line in rows:
            if line in known or line in seen_lines:
                stats["healthy-side repeats" if label in ("-", "~") else "failure repeats"] += 1
                continue
            seen_lines.add(line)
            kept.append((label, emitter, line))
        if not kept:
            stats["threads left empty"] += 1
            continue
        stats["threads"] += 1
        by_file: dict[str, list[tuple[str, str, str]]] = {}
        for row in kept:
            category = "healthy" if row[0] in ("-", "~") else row[0].split("/")[0].split("|")[0]
            by_file.setdefault(category, []).append(row)
        for category, group in by_file.items():
            files.setdefault(category, []).append(f"# {name} {url} {context}".replace("\t", " "))
            files[category].extend(group)
    emitters = []
    for category, body in sorted(files.items()):
        name = f"round{args.round}-{category}.log"
        text = [
            f"# source: held-out round {args.round}, {category}: real lines from public issue threads cited below, "
            "selected by the criteria",
            f"# in heldout/ROUND{args.round}-SELECTION.md (committed before any round-{args.round} line was collected), "
            "collected with",
            "# launcher/health/ at the newest commit touching it before these lines were committed, and scored once at "
            "first sight before any rule change (docs/health-rules.md,",
            f"# round {args.round}). Lines copied as posted; labels written before scoring. Pending: see "
            "pending/README.md.",
        ]
        for item in body:
            if isinstance(item, str):
                text.append(item)
                continue
            label, emitter, line = item
            text.append(f"{label}\t{line}")
            emitters.append(f"{name}\t{len(text)}\t{label}\t{emitter}\t{line}")
            stats["failure lines" if label not in ("-", "~") else "healthy-side lines"] += 1
            stats["/after"] += label.endswith("/after")
        if args.write:
            (PENDING / name).write_text("\n".join(text) + "\n", encoding="utf-8")
    if args.write:
        Path(f"{args.work}/emitters.tsv").write_text("\n".join(emitters) + "\n", encoding="utf-8")
    print(dict(stats))
    print(f"rows not understood: {len(bad)}")
    for row in bad[:40]:
        print("  " + row)


def _classify(line: str) -> tuple[str, str, str] | None:
    from launcher.health.classify import parse_rank_prefix
    from launcher.health.rules import classify

    match = classify(parse_rank_prefix(line)[1])
    return None if match is None else (match.category, match.severity, match.rule)


def cmd_score(args: argparse.Namespace) -> None:
    """heldout_score's logic (tests/test_health_rules.py): per first-written category, lines, flagged, right (any
    written category; `unclassified` never), strictly right; healthy-side (`-`, `~`) lines made fatal."""
    sys.path.insert(0, str(ROOT))
    scope: dict[tuple[str, int], tuple[str, str]] = {}
    if args.scope:
        for raw in Path(args.scope).read_text(encoding="utf-8").splitlines():
            fields = raw.split("\t")
            if len(fields) >= 3:
                scope[(fields[0], int(fields[1]))] = (
                    fields[2].strip().upper(),
                    fields[3] if len(fields) > 3 else "",
                )

    def run(only_in: bool, after_as_healthy: bool) -> None:
        per: dict[str, list[int]] = {}
        fatal, misses, healthy, rocm = [], [], 0, 0
        for path in sorted(PENDING.glob(f"round{args.round}-*.log")):
            for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if not raw.strip() or raw.startswith("#"):
                    continue
                verdict, emitter = scope.get((path.name, number), ("IN", ""))
                if only_in and verdict != "IN":
                    continue
                expect, _, line = raw.partition("\t")
                got = _classify(line)
                if after_as_healthy and expect.endswith("/after"):
                    expect = "~"
                if expect in ("-", "~"):
                    healthy += 1
                    if got is not None and got[1] == "fatal":
                        fatal.append(f"{path.name}:{number} [{expect}] {got[2]} {line}")
                    continue
                rocm += bool(ROCM_EMITTER.search(emitter))
                accepted = expect.split("/")[0].split("|")
                counts = per.setdefault(accepted[0], [0, 0, 0, 0])
                counts[0] += 1
                counts[1] += got is not None
                counts[2] += got is not None and got[0] in accepted
                counts[3] += got is not None and got[0] == accepted[0]
                if got is None or got[0] not in accepted:
                    shown = f"{got[0]}/{got[1]} {got[2]}" if got else "UNFLAGGED"
                    misses.append(f"{path.name}:{number} [{expect}] -> {shown} | {line[:200]}")
        n, flagged, right, strict = (sum(v[i] for v in per.values()) for i in range(4))
        pct = (lambda a: f"{100 * a / n:.1f}") if n else (lambda a: "-")
        title = ("in scope" if only_in else "all lines") + (", /after as ~" if after_as_healthy else "")
        print(
            f"== {title}: {flagged}/{n} flagged ({pct(flagged)} %), {right} right ({pct(right)} %; strictly "
            f"{strict}, {pct(strict)} %), {len(fatal)} of {healthy} healthy-side fatal; ROCm emitters {rocm}/{n}"
        )
        if only_in and not after_as_healthy:
            print("| category | lines | flagged | right |\n|---|---:|---:|---:|")
            for category in sorted(per):
                print(f"| {category} | {per[category][0]} | {per[category][1]} | {per[category][2]} |")
            print(*(f"FATAL {f}" for f in fatal), sep="\n")
            if args.verbose:
                print(*(f"MISS {m}" for m in misses), sep="\n")

    run(True, False)
    if scope:
        run(False, False)
        run(True, True)


def cmd_dump(args: argparse.Namespace) -> None:
    repo = Path(args.repo).resolve()
    sys.path.insert(0, str(repo))
    from launcher.health.classify import parse_rank_prefix
    from launcher.health.rules import classify

    out = {}
    for path in sorted((repo / "tests" / "fixtures" / "logs").rglob("*.log")):
        for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not raw.strip() or raw.startswith("#") or "\t" not in raw:
                continue
            expect, _, line = raw.partition("\t")
            match = classify(parse_rank_prefix(line)[1])
            got = f"{match.category}/{match.severity}/{match.rule}" if match else "-"
            out[f"{path.relative_to(repo)}:{number}"] = [expect, got, line[:160]]
    Path(args.out).write_text(json.dumps(out), encoding="utf-8")


def _right(expect: str, got: str) -> bool:
    if expect in ("-", "~"):
        return got == "-" or got.split("/")[1] != "fatal"
    return got != "-" and got.split("/")[0] in expect.split("/")[0].split("|")


def cmd_compare(args: argparse.Namespace) -> None:
    before = json.loads(Path(args.before).read_text(encoding="utf-8"))
    after = json.loads(Path(args.after).read_text(encoding="utf-8"))
    better = worse = 0
    for key, (expect, got, line) in after.items():
        if key not in before or before[key][1] == got:
            continue
        step = _right(expect, got) - _right(expect, before[key][1])
        better += step > 0
        worse += step < 0
        print(
            "+" if step > 0 else "-" if step < 0 else "=",
            key,
            expect,
            before[key][1],
            "->",
            got,
            "|",
            line[:110],
        )
    print("better", better, "worse", worse)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    cited = sub.add_parser("cited")
    cited.add_argument("--work", default=None)
    cited.add_argument("--me", default=None)
    cited.add_argument("--round", type=int, default=None)
    cited.add_argument("urls", nargs="+")
    repeats = sub.add_parser("repeats")
    repeats.add_argument("--work", default=None)
    repeats.add_argument("--me", required=True)
    repeats.add_argument("--round", type=int, default=None)
    build = sub.add_parser("build")
    build.add_argument("round", type=int)
    build.add_argument("--work", default=None)
    build.add_argument("--write", action="store_true")
    score = sub.add_parser("score")
    score.add_argument("round", type=int)
    score.add_argument("scope", nargs="?")
    score.add_argument("-v", "--verbose", action="store_true")
    dump = sub.add_parser("dump")
    dump.add_argument("out")
    dump.add_argument("--repo", default=str(ROOT))
    compare = sub.add_parser("compare")
    compare.add_argument("before")
    compare.add_argument("after")
    args = parser.parse_args()
    if args.command in ("cited", "repeats", "build") and args.work is None:
        args.work = f"/tmp/round{args.round}" if args.round else "."
    {
        "cited": cmd_cited,
        "repeats": cmd_repeats,
        "build": cmd_build,
        "score": cmd_score,
        "dump": cmd_dump,
        "compare": cmd_compare,
    }[args.command](args)


if __name__ == "__main__":
    main()
