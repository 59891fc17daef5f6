"""Bounded work on hostile notes: a dry-run pass, as a whole process, over a store of notes
built to make pattern matching, frontmatter parsing and evidence quoting blow up.

    .venv/bin/python bench/bench_hostile.py [--size 900000] [--runs 3]

Each note is one pattern repeated to ``--size`` bytes (just under the 1 MB per-file cap a
scan reads), behind a small frontmatter; the index lists 30,000 entries, most of them
dangling. Prints, per preset, the median wall time and the peak RSS of the pass.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DREAMD = Path(sys.executable).with_name("dreamd")
PRESETS = ("generic", "deepcode", "claude-code", "serena", "cline")
PATTERNS = {  # the unit each note repeats: each once made a step quadratic or worse
    "brackets": "[", "link-openers": "[a](", "wiki-openers": "[[", "titled-links": '[a](b.md "',
    "mem-prefixes": "`mem:", "task-openers": "[TASK", "task-ids": "[TASK1]", "status-fields": "**Status:",
    "list-markers": "- ", "fences": "```\n", "headings": "# h\n", "hashes": "#", "stars": "*",
    "backticks": "`", "parentheses": "(", "pins": "pinned:", "bold-fields": "**a**", "words": "word ",
}  # fmt: skip


def write_store(root: Path, size: int) -> None:
    root.mkdir()
    for name, unit in PATTERNS.items():
        (root / f"{name}.md").write_text("---\nname: x\n---\n" + unit * (size // len(unit)))
    (root / "frontmatter.md").write_text("---\n" + "key: value\n" * 12_000 + "---\nbody\n")
    (root / "MEMORY.md").write_text("".join(f"- [n{i}](n{i}.md) — a hook\n" for i in range(30_000)))


def timed(args: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KB) of one whole-process run."""
    started = time.perf_counter()
    child = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(args)} failed")
    return elapsed, usage.ru_maxrss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=900_000)
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        write_store(store, options.size)
        total = sum(p.stat().st_size for p in store.iterdir())
        print(f"{len(list(store.iterdir()))} hostile notes, {total / 1e6:.1f} MB")
        for preset in PRESETS:
            args = [str(DREAMD), "--db", f"sqlite:///{tmp}/{preset}.db", "pass", "--dry-run", "--store", str(store), "--preset", preset]
            runs = [timed(args) for _ in range(options.runs)]
            print(f"{preset:12} {statistics.median(t for t, _ in runs):6.2f} s  peak RSS {max(r for _, r in runs) / 1024:.0f} MB")


if __name__ == "__main__":
    main()
