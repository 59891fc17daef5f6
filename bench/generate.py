"""Deterministic synthetic memory stores for benchmarks (``deepcode`` preset layout).

``generate_store(root, n, seed)`` writes a flat folder of ``n`` markdown notes plus a
``MEMORY.md`` index of links. Text is English-like: Zipf-weighted words from a fixed
vocabulary (common English words, then syllable-built words), in sentences, paragraphs
and bullet lists; note sizes are log-normal with a median of about 2 KB. Planted:

- ~2% exact duplicates (same body, whitespace and case varied, other frontmatter),
- ~3% near duplicates (2-4 words replaced, sometimes a sentence appended),
- a few notes whose ``ttl_days`` ran out before ``NOW`` (use it as the pass clock; every
  other ``ttl_days`` ends after it),
- a few notes missing from the index and a few index entries pointing nowhere.

The same (n, seed) always gives the same bytes and the same mtimes.
"""

from __future__ import annotations

import datetime as dt
import os
import random
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path

NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.timezone.utc)
MEDIAN_BYTES = 2048
TYPES = ("project", "reference", "feedback", "user")

_ENGLISH = """
the of and to a in is for that with on as it be by this are from at or an not you we
use run build test server client database config file folder path cache queue job task
error log user team release branch commit merge review deploy staging production api
endpoint request response token session schema migration index query table column key
value worker thread process memory disk network port host service container image
script command flag option default setting version update fix bug issue note plan
sprint deadline owner check lint format style module package library import export
should must never always only before after when then because if unless while until
new old fast slow large small first last next local remote shared private public
""".split()
_ONSETS = "b c d f g h j k l m n p r s t v w z br ch cl dr fl gr pl pr sh st th tr".split()
_VOWELS = "a e i o u ai ea ee ie oo ou".split()
_CODAS = ["", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ng", "ck"]


def vocabulary(size: int = 4000, seed: int = 7) -> list[str]:
    """``size`` distinct words: the English list first (most frequent), then made-up ones."""
    rng = random.Random(seed)
    words = list(dict.fromkeys(_ENGLISH))
    seen = set(words)
    while len(words) < size:
        word = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(rng.randint(1, 3)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


class TextMaker:
    """Sentences, paragraphs and note bodies drawn from a Zipf-weighted vocabulary."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.words = vocabulary()
        self.cum = list(accumulate(1.0 / (rank + 1) ** 1.05 for rank in range(len(self.words))))

    def words_(self, k: int) -> list[str]:
        return self.rng.choices(self.words, cum_weights=self.cum, k=k)

    def sentence(self) -> str:
        words = self.words_(self.rng.randint(6, 18))
        return " ".join(words).capitalize() + self.rng.choice(".....?!")

    def title(self) -> str:
        return " ".join(self.words_(self.rng.randint(2, 5))).capitalize()

    def body(self, title: str, target: int) -> str:
        parts, size = [f"# {title}\n"], 0
        while size < target:
            if self.rng.random() < 0.2:
                block = "\n".join(f"- {self.sentence()}" for _ in range(self.rng.randint(2, 5)))
            else:
                block = " ".join(self.sentence() for _ in range(self.rng.randint(2, 6)))
            parts.append(block + "\n")
            size += len(block) + 2
        return "\n".join(parts)


@dataclass
class GeneratedStore:
    """What was written, so a benchmark can check the planner found the planted cases."""

    root: Path
    notes: list[str] = field(default_factory=list)
    exact: list[str] = field(default_factory=list)
    near: list[str] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)
    unlisted: list[str] = field(default_factory=list)
    dangling: list[str] = field(default_factory=list)
    total_bytes: int = 0


def _frontmatter(name: str, description: str, kind: str, updated: dt.date | None, ttl: int | None) -> str:
    lines = ["---", f"name: {name}", f"description: {description}", f"type: {kind}"]
    if updated is not None:
        lines.append(f"updated_at: {updated.isoformat()}")
    if ttl is not None:
        lines.append(f"ttl_days: {ttl}")
    return "\n".join(lines) + "\n---\n\n"


def _vary_layout(rng: random.Random, body: str) -> str:
    """The same text once case and whitespace are folded: an exact duplicate."""
    out = []
    for line in body.split("\n"):
        line = line.replace(" ", "  ", 1) if rng.random() < 0.3 else line
        line = line.upper() if rng.random() < 0.05 else line.lower() if rng.random() < 0.1 else line
        out.append(line + (" " if rng.random() < 0.2 else ""))
    return "\n".join(out) + "\n"


def _edit_words(rng: random.Random, maker: TextMaker, body: str) -> str:
    """The same text with a few words replaced and maybe a sentence added: a near duplicate."""
    lines = body.split("\n")
    for _ in range(rng.randint(2, 4)):
        row = rng.choice([i for i, line in enumerate(lines) if len(line.split()) > 3])
        words = lines[row].split(" ")
        words[rng.randrange(1, len(words))] = maker.words_(1)[0]
        lines[row] = " ".join(words)
    if rng.random() < 0.5:
        lines.append(maker.sentence() + "\n")
    return "\n".join(lines)


def _date(rng: random.Random, start: dt.date, days: int) -> dt.date:
    return start + dt.timedelta(days=rng.randrange(days))


def generate_store(root: Path, n: int, seed: int = 42, exact_rate: float = 0.02, near_rate: float = 0.03) -> GeneratedStore:
    """Write ``n`` notes and ``MEMORY.md`` into ``root`` (created; must be empty)."""
    rng = random.Random(seed)
    maker = TextMaker(rng)
    root.mkdir(parents=True, exist_ok=True)
    n_exact, n_near = round(n * exact_rate), round(n * near_rate)
    n_orig = n - n_exact - n_near
    sources = rng.sample(range(n_orig), n_exact + n_near)
    others = sorted(set(range(n_orig)) - set(sources))
    expired = set(rng.sample(others, min(len(others), max(3, n // 2000))))
    out = GeneratedStore(root)
    entries: list[tuple[str, str, str]] = []  # (file, name, description)
    bodies: list[str] = []

    def write(title: str, body: str, expire: bool = False) -> str:
        path = f"{'-'.join(title.lower().split()[:4])}-{len(out.notes):05d}.md"
        description = " ".join(maker.words_(rng.randint(4, 10)))
        updated = _date(rng, dt.date(2025, 6, 1), 360) if rng.random() < 0.6 else None
        ttl = rng.choice((400, 730)) if updated and rng.random() < 0.15 else None
        if expire:
            updated, ttl = _date(rng, dt.date(2025, 1, 1), 60), 30
        data = (_frontmatter(title, description, rng.choice(TYPES), updated, ttl) + body).encode("utf-8")
        (root / path).write_bytes(data)
        stamp = NOW.timestamp() - rng.randrange(400 * 86400)
        os.utime(root / path, ns=(int(stamp * 1e9), int(stamp * 1e9)))
        out.notes.append(path)
        out.total_bytes += len(data)
        entries.append((path, title, description))
        return path

    for i in range(n_orig):
        title = maker.title()
        target = min(12000, max(300, int(rng.lognormvariate(0, 0.45) * MEDIAN_BYTES)))
        bodies.append(maker.body(title, target - 200))  # ~200 bytes of frontmatter
        path = write(title, bodies[-1], expire=i in expired)
        if i in expired:
            out.expired.append(path)
    for k, src in enumerate(sources):
        if k < n_exact:
            out.exact.append(write(f"{entries[src][1]} copy", _vary_layout(rng, bodies[src])))
        else:
            out.near.append(write(f"{entries[src][1]} revised", _edit_words(rng, maker, bodies[src])))

    unlisted = set(rng.sample(range(len(entries)), max(2, n // 2000)))
    out.unlisted = [entries[i][0] for i in sorted(unlisted)]
    out.dangling = [f"removed-note-{i}.md" for i in range(3)]
    lines = ["# Project memory", ""]
    lines += [f"- [{name}]({path}) — {desc}" for i, (path, name, desc) in enumerate(entries) if i not in unlisted]
    lines += [f"- [Removed note {i}]({path}) — gone" for i, path in enumerate(out.dangling)]
    index = ("\n".join(lines) + "\n").encode("utf-8")
    (root / "MEMORY.md").write_bytes(index)
    out.total_bytes += len(index)
    return out


if __name__ == "__main__":
    import argparse
    import statistics

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    store = generate_store(args.root, args.notes, args.seed)
    sizes = [(store.root / p).stat().st_size for p in store.notes]
    print(f"{len(store.notes)} notes, {store.total_bytes / 1e6:.1f} MB, median {statistics.median(sizes):.0f} B; "
          f"{len(store.exact)} exact, {len(store.near)} near, {len(store.expired)} expired, "
          f"{len(store.unlisted)} unlisted, {len(store.dangling)} dangling")  # fmt: skip
