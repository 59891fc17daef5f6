"""Rendering a call's prompt from the Jinja2 templates in ``prompts/`` (or a store's own).

Templates are files a user can read and change, so they are rendered with
``StrictUndefined`` (a misspelt variable is an error, not an empty string) and without
autoescaping (this is not HTML). Note text is made safe here, before it reaches any
template, so a custom template cannot forget it: the only markup a note could use to
break out of its data block - ``<note`` and ``</note`` - is escaped as ``&lt;note``;
``unescape_data`` reverses that for quotes and merged text coming back.

Each call records the templates' name and hash (BLAKE3 of both sources), so a pass can
say exactly which prompt produced a proposal.
"""

from __future__ import annotations

import datetime as dt
import html
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import jinja2

from daemon.core.errors import ConfigError
from daemon.core.hashing import hash_text
from daemon.core.view import StoreView
from daemon.planners.llm.packing import Batch

SYSTEM = "system.j2"
USER = "user.j2"
_OPEN_TAG = re.compile(r"<(?=\s*/?\s*note\b)", re.IGNORECASE)
_ESCAPED_TAG = re.compile(r"&lt;(?=\s*/?\s*note\b)", re.IGNORECASE)


def default_prompt_dir() -> Path:
    """The shipped templates: the checkout's top-level ``prompts/`` (editable installs and
    tests), else where a wheel installs them (``<prefix>/share/dreamd/prompts``)."""
    checkout = Path(__file__).resolve().parents[3] / "prompts"
    if (checkout / "system.j2").is_file():
        return checkout
    return Path(sys.prefix) / "share" / "dreamd" / "prompts"


def escape_data(text: str) -> str:
    """Note text that cannot open or close a ``<note>`` block."""
    return _OPEN_TAG.sub("&lt;", text)


def unescape_data(text: str) -> str:
    return _ESCAPED_TAG.sub("<", text)


@dataclass(frozen=True)
class PromptNote:
    id: str
    path: str  # attribute-escaped
    text: str  # redacted and data-escaped
    pinned: bool


@dataclass(frozen=True)
class PromptGroup:
    ids: tuple[str, ...]
    reasons: tuple[str, ...]  # fixed wording from candidates: never note text


@dataclass(frozen=True)
class PromptBatch:
    """What the templates see, plus ``ids`` (prompt id -> note path) to read the reply."""

    notes: tuple[PromptNote, ...]
    groups: tuple[PromptGroup, ...]
    today: str
    ids: Mapping[str, str]
    reply_tokens: int = 0  # the reply's room, told to the model (0: not said)


@dataclass(frozen=True)
class Rendered:
    system: str
    user: str
    template_name: str
    template_hash: str


WHOLE = "the whole store: any of its notes may belong together"


def prompt_batch(batch: Batch, texts: Mapping[str, str], view: StoreView, now: dt.datetime, reply_tokens: int = 0, whole: bool = False) -> PromptBatch:
    """Give each note of the call a short id (n1, n2, ... in order) and escape it. A call
    holding the whole store says so in a first group line of every note (``WHOLE``): a small
    model reads the groups as what to examine, and with only the hint groups it looked no
    further than them (it proposed nothing for a clear duplicate pair a hint did not name)."""
    ids = {path: f"n{i}" for i, path in enumerate(batch.paths, 1)}
    notes = tuple(
        PromptNote(ids[p], html.escape(p, quote=True), escape_data(texts[p].rstrip("\n")), view.notes[p].pinned) for p in batch.paths
    )
    groups = tuple(PromptGroup(tuple(ids[p] for p in g.paths), g.reasons) for g in batch.hints)
    if whole:
        groups = (PromptGroup(tuple(ids[p] for p in batch.paths), (WHOLE,)), *groups)
    return PromptBatch(notes, groups, now.date().isoformat(), {i: p for p, i in ids.items()}, reply_tokens)


@dataclass(frozen=True)
class Templates:
    """Both template sources of one folder, loaded and compiled once per pass."""

    folder: Path
    system: jinja2.Template
    user: jinja2.Template
    name: str
    hash: str

    def render(self, batch: PromptBatch) -> Rendered:
        values = {"notes": batch.notes, "groups": batch.groups, "today": batch.today, "reply_tokens": batch.reply_tokens}
        parts = []
        for label, template in ((SYSTEM, self.system), (USER, self.user)):
            try:
                parts.append(template.render(values))
            except jinja2.UndefinedError as exc:
                raise ConfigError(f"prompt template {self.folder / label}: {exc.message}", hint="variables: notes, groups, today, reply_tokens") from None
            except jinja2.TemplateError as exc:
                raise ConfigError(f"prompt template {self.folder / label} failed: {exc}") from None
        return Rendered(parts[0], parts[1], self.name, self.hash)


def load_templates(prompt_dir: str | Path | None = None) -> Templates:
    """The templates of ``prompt_dir`` (default: the shipped ones); ConfigError when the
    folder or a template is missing or does not compile."""
    folder = Path(prompt_dir).expanduser() if prompt_dir else default_prompt_dir()
    if not folder.is_dir():
        raise ConfigError(f"prompt folder {folder} does not exist", hint=f"it must hold {SYSTEM} and {USER}")
    sources = {}
    for label in (SYSTEM, USER):
        try:
            sources[label] = (folder / label).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"prompt template {folder / label} cannot be read: {exc.__class__.__name__}", hint=f"a prompt folder holds {SYSTEM} and {USER}") from None
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)
    compiled = {}
    for label, source in sources.items():
        try:
            compiled[label] = env.from_string(source)
        except jinja2.TemplateSyntaxError as exc:
            raise ConfigError(f"prompt template {folder / label}: line {exc.lineno}: {exc.message}") from None
    digest = hash_text(f"{SYSTEM}\0{sources[SYSTEM]}\0{USER}\0{sources[USER]}")
    return Templates(folder, compiled[SYSTEM], compiled[USER], f"{folder.name}/{SYSTEM}+{USER}", digest)


def render(batch: PromptBatch, prompt_dir: str | Path | None = None) -> Rendered:
    """Both parts of one call's prompt, with the templates' name and hash."""
    return load_templates(prompt_dir).render(batch)
