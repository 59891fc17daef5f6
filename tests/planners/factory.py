"""Small builders for planner tests: notes from text, views, contexts, random corpora."""

from __future__ import annotations

import datetime as dt
import random
import textwrap

from daemon.core.hashing import hash_bytes
from daemon.core.index import IndexSpec
from daemon.core.notes import Note
from daemon.core.view import StoreView
from daemon.planners.base import DetectorSettings, PlanContext

NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.timezone.utc)

BUILD_NOTES = """\
# Build setup
The project builds with make and a pinned compiler from the toolchain folder.
Run make test before pushing because the CI job only checks formatting and lint.
Integration tests need a local postgres on port 5433 with the fixtures loaded.
The release script tags the commit, builds wheels for linux and mac, and uploads them.
Never bump the schema version by hand; the migration tool writes it for you.
Logs from the nightly job go to the shared bucket under the ops prefix.
If the docs build fails, clear the sphinx cache folder and run it again.
"""


def note(path: str, text: str = "", *, mtime: dt.datetime | None = None) -> Note:
    """A note whose file content is ``text`` (dedented), optionally with an mtime."""
    data = textwrap.dedent(text).lstrip("\n").encode("utf-8")
    mtime_ns = int(mtime.timestamp()) * 1_000_000_000 if mtime else 0
    return Note(path, data, hash_bytes(data), mtime_ns)


def view(
    *notes: Note, index: IndexSpec | None = None, scope: str | None = None, protected: tuple[str, ...] = ()
) -> StoreView:
    if scope is not None and index is not None:
        index = index._replace(lists=scope)
    return StoreView(notes={n.path: n for n in notes}, index=index, protected=protected)


def memory_index(*lines: str) -> tuple[Note, IndexSpec]:
    """A MEMORY.md (links format) holding ``lines``."""
    return note("MEMORY.md", "# Memory\n" + "".join(f"{line}\n" for line in lines)), IndexSpec("MEMORY.md", "links")


def context(
    store: StoreView,
    *,
    now: dt.datetime = NOW,
    tombstoned: dict[str, str] | None = None,
    settings: DetectorSettings | None = None,
) -> PlanContext:
    return PlanContext(store, now, tombstoned or {}, settings or DetectorSettings())


_SYLLABLES = ("ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "va", "de", "xu", "fe", "bi", "go", "ha", "je")


def prose(rng: random.Random, words: int, per_line: int = 12) -> str:
    """Pseudo-words from a ~4,000-word vocabulary, wrapped into lines."""
    vocab = ["".join(rng.choice(_SYLLABLES) for _ in range(3)) for _ in range(words)]
    lines = [" ".join(vocab[i : i + per_line]) for i in range(0, words, per_line)]
    return "\n".join(lines) + "\n"


def generate_notes(n: int, dup_rate: float, seed: int) -> list[Note]:
    """``n`` notes of random prose; a ``dup_rate`` share are near copies of an earlier
    note with one line appended (so near-duplicate pairs exist at a known rate)."""
    rng = random.Random(seed)
    notes: list[Note] = []
    for i in range(n):
        if notes and rng.random() < dup_rate:
            text = notes[rng.randrange(len(notes))].data.decode() + "one more remark about the same topic\n"
        else:
            text = prose(rng, rng.randint(150, 300))
        notes.append(note(f"notes/n{i:05d}.md", text))
    return notes
