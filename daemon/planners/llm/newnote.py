"""A topical merge into a new note: where it may go, and the bytes it starts with.

People fold ``tech_stack`` and ``code_style_conventions`` into a development guide that
neither note was. The model names the new note's path and title; dreamd checks the path
(a plain, unused markdown file the agent reads, outside the archive) and writes the note:
the frontmatter keys the merged notes use to name and describe themselves (``name``,
``title``, ``description``, a shared ``type``), then the merged body under the title.
"""

from __future__ import annotations

from collections.abc import Sequence

from daemon.core import frontmatter
from daemon.core.hashing import hash_bytes
from daemon.core.notes import Note
from daemon.core.validate import unsafe_path_reason
from daemon.core.view import StoreView

MAX_TITLE = 120


def path_problem(view: StoreView, path: str) -> str | None:
    """Why a new note cannot be written at ``path`` (None: it can)."""
    unsafe = unsafe_path_reason(path)
    if unsafe:
        return unsafe
    if not path.endswith(".md"):
        return f"new_path {path!r} is not a markdown file (.md)"
    if path in view.notes or path in view.other_files or path in view.archived:
        return f"new_path {path!r} exists already"
    if path.startswith(view.archive_dir + "/") or not view.reader.sees(path) or view.is_protected(path) or view.is_index(path):
        return f"new_path {path!r} is not where this store's agent reads its notes"
    return None


def clean_title(title: str | None) -> str:
    """The title on one line, bounded; empty when the model gave none."""
    flat = " ".join((title or "").split()).lstrip("# ").strip()
    return flat[:MAX_TITLE]


def new_note_data(title: str, body: str, merged: Sequence[Note]) -> bytes:
    """The new note: naming keys as the merged notes write them, then the body under a
    ``# title`` heading (unless the body starts with a heading of its own)."""
    text = body.replace("\r\n", "\n").strip("\n") + "\n"
    if not text.lstrip().startswith("#"):
        text = f"# {title}\n\n{text}"
    data = text.encode("utf-8")
    keys = _keys(title, data, merged)
    return frontmatter.set_keys(data, keys) if keys else data


def _keys(title: str, data: bytes, merged: Sequence[Note]) -> dict[str, object]:
    used = set().union(*(n.meta.keys() for n in merged)) if merged else set()
    keys: dict[str, object] = {key: title for key in ("name", "title") if key in used}
    if "description" in used:
        keys["description"] = Note("new.md", data, hash_bytes(data)).description or title
    types = {n.type for n in merged}
    if len(types) == 1 and None not in types:
        keys["type"] = types.pop()
    return keys
