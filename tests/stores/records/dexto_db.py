"""Dexto databases built the way Dexto builds them, for tests.

The table is created with the DDL of packages/storage/src/database/sqlite-store.ts
(truffle-ai/dexto@ea2b1863), in WAL mode; each memory is made as MemoryManager.create makes
it (keys in MemorySchema's order, optional ones left out) and serialised by Node's own
``JSON.stringify``, then written with Dexto's ``INSERT OR REPLACE``.
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


def values(path: Path) -> dict[str, str]:
    """Every row of kv_store: key -> exact value."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return dict(conn.execute("SELECT key, value FROM kv_store ORDER BY key"))
    finally:
        conn.close()
