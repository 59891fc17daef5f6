"""Dexto databases built the way Dexto builds them, and read the way Dexto reads them, for tests.

The table is created with the DDL of packages/storage/src/database/sqlite-store.ts
(truffle-ai/dexto@ea2b1863), in WAL mode; each memory is made as MemoryManager.create makes
it (keys in MemorySchema's order, optional ones left out) and serialised by Node's own
``JSON.stringify``, then written with Dexto's ``INSERT OR REPLACE``. What the agent then reads is judged by
JavaScript run by Node: ``MemorySchema`` and the prompt's ``## User Memories`` block restated
(``dexto_accepts``, ``PROMPT_JS``), so JavaScript's own string lengths, JSON and sort decide.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

DDL = """
CREATE TABLE IF NOT EXISTS kv_store (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    created_at INTEGER DEFAULT (strftime('%s', 'now')),
    updated_at INTEGER DEFAULT (strftime('%s', 'now'))
);
CREATE TABLE IF NOT EXISTS list_store (
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    sequence INTEGER,
    created_at INTEGER DEFAULT (strftime('%s', 'now')),
    PRIMARY KEY (key, sequence)
);
CREATE INDEX IF NOT EXISTS idx_kv_store_key ON kv_store(key);
CREATE INDEX IF NOT EXISTS idx_list_store_key ON list_store(key);
CREATE INDEX IF NOT EXISTS idx_list_store_sequence ON list_store(key, sequence);
"""

# As MemoryManager.create: {id, content, createdAt, updatedAt, tags, metadata}; zod then puts
# metadata's source and pinned first. JSON.stringify leaves undefined fields out.
_NODE = r"""
const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const out = input.map((m) => {
  let metadata = m.metadata;
  if (metadata !== undefined) {
    const { source, pinned, ...rest } = metadata;
    metadata = { source, pinned, ...rest };
  }
  return JSON.stringify({ id: m.id, content: m.content, createdAt: m.createdAt, updatedAt: m.updatedAt, tags: m.tags, metadata });
});
process.stdout.write(JSON.stringify(out));
"""


def memory(ident: str, content: str, at: int, *, tags: list[str] | None = None, metadata: dict[str, Any] | None = None, updated: int | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"id": ident, "content": content, "createdAt": at, "updatedAt": updated or at}
    if tags is not None:
        found["tags"] = tags
    if metadata is not None:
        found["metadata"] = metadata
    return found


def stringify(memories: list[dict[str, Any]]) -> list[str]:
    """Each memory as Dexto stores it: Node's JSON.stringify."""
    done = subprocess.run(["node", "-e", _NODE], input=json.dumps(memories), capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def create(path: Path, memories: list[dict[str, Any]], *, others: dict[str, str] | None = None) -> Path:
    """A Dexto database at ``path`` holding ``memories`` (and other keys, as Dexto keeps them)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executescript(DDL)
    put(conn, memories)
    for key, value in (others or {}).items():
        conn.execute("INSERT OR REPLACE INTO kv_store (key, value, updated_at) VALUES (?, ?, ?)", (key, value, 1))
    conn.close()
    return path


def put(conn: sqlite3.Connection, memories: list[dict[str, Any]]) -> None:
    """Dexto's ``set``: INSERT OR REPLACE of each memory's JSON, updated_at in ms."""
    for m, value in zip(memories, stringify(memories)):
        conn.execute("INSERT OR REPLACE INTO kv_store (key, value, updated_at) VALUES (?, ?, ?)", (f"memory:item:{m['id']}", value, m["updatedAt"]))


def values(path: Path, prefix: str = "") -> dict[str, str]:
    """Every row of kv_store whose key starts with ``prefix``: key -> exact value (with
    ``memory:item:``, what Dexto's ``list(prefix)`` reads: ``key LIKE prefix%``, sorted)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return dict(conn.execute("SELECT key, value FROM kv_store WHERE key LIKE ? ORDER BY key", (prefix + "%",)))
    finally:
        conn.close()


# MemorySchema restated in JavaScript: strict top level, lengths as JavaScript counts them.
VALIDATE_JS = r"""
const rows = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const ok = (m) => {
  const keys = ['id', 'content', 'createdAt', 'updatedAt', 'tags', 'metadata'];
  if (typeof m !== 'object' || m === null || Array.isArray(m)) return false;
  if (Object.keys(m).some((k) => !keys.includes(k))) return false;
  if (typeof m.id !== 'string' || m.id.length < 1) return false;
  if (typeof m.content !== 'string' || m.content.length < 1 || m.content.length > 10000) return false;
  for (const k of ['createdAt', 'updatedAt']) if (!Number.isSafeInteger(m[k]) || m[k] <= 0) return false;
  if ('tags' in m && !(Array.isArray(m.tags) && m.tags.length <= 10 && m.tags.every((t) => typeof t === 'string' && t.length >= 1 && t.length <= 50))) return false;
  if ('metadata' in m) {
    const md = m.metadata;
    if (typeof md !== 'object' || md === null || Array.isArray(md)) return false;
    if ('source' in md && !['user', 'system'].includes(md.source)) return false;
    if ('pinned' in md && typeof md.pinned !== 'boolean') return false;
  }
  return true;
};
process.stdout.write(JSON.stringify(rows.map((v) => ok(JSON.parse(v)))));
"""

# MemoryContributor's block restated in JavaScript: sort by updatedAt (newest first) over
# sorted keys, keep the first `limit`, `- content [Tags: a, b]`.
PROMPT_JS = r"""
const { rows, limit } = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const keys = Object.keys(rows).sort();
const memories = keys.map((k) => JSON.parse(rows[k]));
memories.sort((a, b) => b.updatedAt - a.updatedAt);
const shown = memories.slice(0, limit);
const lines = shown.map((m) => `- ${m.content}` + (m.tags && m.tags.length > 0 ? ` [Tags: ${m.tags.join(', ')}]` : ''));
process.stdout.write(shown.length ? `## User Memories\n${lines.join('\n')}` : '');
"""


def node(script: str, data: object) -> object:
    done = subprocess.run(["node", "-e", script], input=json.dumps(data), capture_output=True, text=True, check=True)
    return done.stdout if script is PROMPT_JS else json.loads(done.stdout)


def dexto_accepts(values: list[str]) -> list[bool]:
    """Whether Dexto's MemorySchema (restated in JavaScript) accepts each stored value."""
    return node(VALIDATE_JS, values)  # type: ignore[return-value]
