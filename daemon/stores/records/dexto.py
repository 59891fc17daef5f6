"""What Dexto does with its memories, read from its source: the one place for its rules.

Source: github.com/truffle-ai/dexto at ea2b1863 (2026-08-18, "chore: version packages
(#908)"; @dexto/core and @dexto/storage 1.10.x, zod ^4.3.6, better-sqlite3 ^11.10.0).

Where the database is
    packages/agent-management/src/config/config-enrichment.ts: ``getDextoPath('database',
    `${agentId}.db`)``, i.e. ``~/.dexto/database/<agentId>.db`` (``<project>/.dexto/...``
    inside a Dexto project).

How it is written
    packages/storage/src/database/sqlite-store.ts: ``journal_mode = WAL``; table
    ``kv_store(key TEXT PRIMARY KEY, value TEXT NOT NULL, created_at INTEGER DEFAULT
    (strftime('%s','now')), updated_at INTEGER DEFAULT (strftime('%s','now')))`` beside a
    ``list_store`` table; ``set`` is ``INSERT OR REPLACE INTO kv_store (key, value, updated_at)
    VALUES (?, ?, Date.now())`` with ``value = JSON.stringify(value)``; ``get`` is
    ``JSON.parse`` with no validation; ``list(prefix)`` is ``key LIKE prefix%`` (sorted);
    ``delete`` removes the key from both tables. The connection waits ``timeout: 5000`` ms
    for a lock, then fails with "database is locked".
    packages/core/src/storage/stores/backend.ts: memories live under ``memory:item:<id>``
    (``DatabaseBackedMemoryStore``), with no cache: every read goes to the database.

What a memory is
    packages/core/src/memory/schemas.ts (``MemorySchema``, ``.strict()``): ``id`` a non-empty
    string; ``content`` 1-10,000 characters (JavaScript lengths: UTF-16 code units);
    ``createdAt``/``updatedAt`` positive integers (zod 4: safe integers), Unix ms; ``tags``
    optional, at most 10 strings of 1-50 characters; ``metadata`` optional and open
    (``.passthrough()``) with ``source`` in {user, system} and ``pinned`` a boolean.
    packages/core/src/memory/manager.ts: ``create`` makes the id with ``nanoid(12)`` and
    stores ``MemorySchema.parse(memory)``; ``update`` reads, overwrites content/tags/
    updatedAt (metadata merged) and stores ``MemorySchema.parse`` of that, with no check of
    what another process wrote meanwhile. zod 4 builds a parsed object in its shape's key
    order, then the passthrough keys in input order (zod/v4 core ``$ZodObject``: the shape's
    keys, then ``handleCatchall``'s ``for (const key in input)``), so a stored value's keys run
    ``id, content, createdAt, updatedAt, tags, metadata`` (undefined ones left out by
    ``JSON.stringify``) and metadata's run ``source, pinned``, then the others as given.

What the agent reads
    packages/core/src/systemPrompt/contributors.ts (``MemoryContributor``): ``## User
    Memories`` then one ``- <content>`` line per memory, `` [Tags: a, b]`` appended when it
    has tags (``includeTags``, default true); ``MemoryManager.list`` keeps only pinned ones if
    ``pinnedOnly``, sorts by ``updatedAt`` newest first (a stable sort over keys in order),
    then keeps the first ``limit``; pinned ones get no other priority. agents/default-agent.yml
    and agents/coding-agent.yml set ``limit: 10``. If listing throws (one value that is not
    JSON), the block is empty.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from daemon.core.reader import Listing, ReaderModel

SOURCE = "truffle-ai/dexto@ea2b18633502326d95624e05623dce6c4285caae"
DEFAULT_PATH_HINT = "~/.dexto/database/<agentId>.db"
TABLE = "kv_store"
KEY_PREFIX = "memory:item:"
COLUMNS = ("key", "value", "created_at", "updated_at")  # key TEXT PRIMARY KEY, value TEXT NOT NULL
WRITER_WAIT_S = 5.0  # how long Dexto waits for another writer's lock before its write fails
PROMPT_LIMIT = 10  # memories the bundled agents put in their prompt
PROMPT_HEADER = "## User Memories"

FIELDS = ("id", "content", "createdAt", "updatedAt", "tags", "metadata")  # .strict(), in shape order
METADATA_FIRST = ("source", "pinned")  # shape keys of the metadata object, before passthrough ones
SOURCES = ("user", "system")
MAX_CONTENT = 10_000
MAX_TAGS = 10
MAX_TAG = 50
MAX_SAFE_INTEGER = 2**53 - 1

READER = ReaderModel(
    agent="Dexto",
    listing=Listing(recursive=False, dot_dirs=False, suffixes=None),
    links=(),
    frontmatter=True,  # a rendering's header is the record's fields and metadata: never in the prompt
    one_text=True,  # content is one prompt item as written: a merge keeps one content, provenance goes in metadata.merged_from
    name_prefix=KEY_PREFIX,  # metadata.merged_from holds record ids
    sources=(
        f"{SOURCE} packages/core/src/storage/stores/backend.ts (memory:item:<id>)",
        f"{SOURCE} packages/core/src/systemPrompt/contributors.ts (MemoryContributor)",
    ),
)


def js_length(text: str) -> int:
    """A string's length as JavaScript counts it: UTF-16 code units."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def serialise(record: Mapping[str, Any]) -> str:
    """The value Dexto stores for ``record``: ``JSON.stringify`` of ``MemorySchema.parse``."""
    ordered = {key: record[key] for key in FIELDS if key in record}
    metadata = ordered.get("metadata")
    if isinstance(metadata, Mapping):
        first = {key: metadata[key] for key in METADATA_FIRST if key in metadata}
        ordered["metadata"] = first | {k: v for k, v in metadata.items() if k not in first}
    return json.dumps(ordered, ensure_ascii=False, separators=(",", ":"))


def rule_breaks(record: Any) -> list[str]:
    """Every way ``record`` fails ``MemorySchema`` (empty when Dexto would accept it)."""
    if not isinstance(record, dict):
        return ["the value is not a JSON object"]
    found = [f"unknown top-level key {key!r}" for key in record if key not in FIELDS]
    ident = record.get("id")
    if not isinstance(ident, str) or not ident:
        found.append("id must be a non-empty string")
    content = record.get("content")
    if not isinstance(content, str) or not 1 <= js_length(content) <= MAX_CONTENT:
        found.append(f"content must be 1-{MAX_CONTENT:,} characters")
    for key in ("createdAt", "updatedAt"):
        value = record.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_SAFE_INTEGER:
            found.append(f"{key} must be a positive integer (ms)")
    if "tags" in record:
        tags = record["tags"]
        if not isinstance(tags, list) or len(tags) > MAX_TAGS or not all(isinstance(t, str) and 1 <= js_length(t) <= MAX_TAG for t in tags):
            found.append(f"tags must be at most {MAX_TAGS} strings of 1-{MAX_TAG} characters")
    if "metadata" in record:
        found += _metadata_breaks(record["metadata"])
    return found


def _metadata_breaks(metadata: Any) -> list[str]:
    if not isinstance(metadata, dict):
        return ["metadata must be an object"]
    found = []
    if "source" in metadata and metadata["source"] not in SOURCES:
        found.append(f"metadata.source must be one of {', '.join(SOURCES)}")
    if "pinned" in metadata and not isinstance(metadata["pinned"], bool):
        found.append("metadata.pinned must be true or false")
    return found


def is_pinned(record: Mapping[str, Any]) -> bool:
    metadata = record.get("metadata")
    return isinstance(metadata, Mapping) and metadata.get("pinned") is True


def prompt_order(records: Mapping[str, Mapping[str, Any]], limit: int | None = PROMPT_LIMIT, pinned_only: bool = False) -> list[str]:
    """Keys of the memories the agent's prompt shows, in its order."""
    keys = sorted(k for k, r in records.items() if not pinned_only or is_pinned(r))  # list(): sorted keys
    keys.sort(key=lambda k: records[k]["updatedAt"], reverse=True)  # stable, as Array.prototype.sort
    return keys if limit is None else keys[:limit]


def prompt_block(records: Mapping[str, Mapping[str, Any]], limit: int | None = PROMPT_LIMIT, pinned_only: bool = False, include_tags: bool = True) -> str:
    """The ``## User Memories`` block as MemoryContributor writes it ('' when none)."""
    keys = prompt_order(records, limit, pinned_only)
    if not keys:
        return ""
    return "\n".join([PROMPT_HEADER, *(_line(records[k], include_tags) for k in keys)])


def _line(record: Mapping[str, Any], include_tags: bool) -> str:
    tags: Iterable[str] = record.get("tags") or ()
    line = f"- {record['content']}"
    return f"{line} [Tags: {', '.join(tags)}]" if include_tags and tags else line
