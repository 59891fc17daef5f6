"""Dexto's rules as dreamd restates them (daemon.stores.records.dexto), checked against Node.

Each oracle here is JavaScript run by Node, so JavaScript's own string lengths, JSON and
sort decide; the facts come from truffle-ai/dexto@ea2b1863 as the module cites them.
"""

from __future__ import annotations

import json

import pytest

import dexto_db
from dexto_db import PROMPT_JS, dexto_accepts, node
from daemon.stores.records import dexto

TRICKY = [
    dexto_db.memory("a1", 'quotes " and \\ backslash, tab\t, newline\n, bell\x07 and nul\x00', 1),
    dexto_db.memory("a2", "emoji 🎉👩‍💻, CJK 漢字, RTL שלום, line sep \u2028 para \u2029", 2, tags=["ünï", "🎉"]),
    dexto_db.memory("a3", "metadata order", 3, metadata={"team": "ops", "pinned": False, "source": "user", "n": 1.5, "nested": {"b": [1, None, True]}}),
]

def test_serialise_is_what_json_stringify_writes_for_tricky_memories():
    """Quotes, control characters, emoji, non-BMP text, U+2028 and metadata order serialise exactly as Node's JSON.stringify does."""
    assert [dexto.serialise(m) for m in TRICKY] == dexto_db.stringify(TRICKY)


def test_serialise_puts_source_and_pinned_first_in_metadata_as_zod_does():
    """Metadata keys run source, pinned, then the others in their order (zod's shape, then passthrough)."""
    (value,) = dexto_db.stringify([TRICKY[2]])
    assert value == '{"id":"a3","content":"metadata order","createdAt":3,"updatedAt":3,"metadata":{"source":"user","pinned":false,"team":"ops","n":1.5,"nested":{"b":[1,null,true]}}}'
    assert dexto.serialise(json.loads(value)) == value


BREAKS = [
    ({"id": "x", "content": "c", "createdAt": 1, "updatedAt": 1, "extra": 1}, ["unknown top-level key 'extra'"]),
    ({"id": "", "content": "c", "createdAt": 1, "updatedAt": 1}, ["id must be a non-empty string"]),
    ({"id": "x", "content": "", "createdAt": 1, "updatedAt": 1}, ["content must be 1-10,000 characters"]),
    ({"id": "x", "content": "🎉" * 5_001, "createdAt": 1, "updatedAt": 1}, ["content must be 1-10,000 characters"]),
    ({"id": "x", "content": "c", "createdAt": 0, "updatedAt": 1.5}, ["createdAt must be a positive integer (ms)", "updatedAt must be a positive integer (ms)"]),
    ({"id": "x", "content": "c", "createdAt": 2**53, "updatedAt": True}, ["createdAt must be a positive integer (ms)", "updatedAt must be a positive integer (ms)"]),
    ({"id": "x", "content": "c", "createdAt": 1, "updatedAt": 1, "tags": ["t"] * 11}, ["tags must be at most 10 strings of 1-50 characters"]),
    ({"id": "x", "content": "c", "createdAt": 1, "updatedAt": 1, "tags": ["🎉" * 26]}, ["tags must be at most 10 strings of 1-50 characters"]),
    ({"id": "x", "content": "c", "createdAt": 1, "updatedAt": 1, "tags": None}, ["tags must be at most 10 strings of 1-50 characters"]),
    ({"id": "x", "content": "c", "createdAt": 1, "updatedAt": 1, "metadata": {"source": "agent"}}, ["metadata.source must be one of user, system"]),
    ({"id": "x", "content": "c", "createdAt": 1, "updatedAt": 1, "metadata": {"pinned": "yes"}}, ["metadata.pinned must be true or false"]),
    ({"id": "x", "content": "c", "createdAt": 1, "updatedAt": 1, "metadata": []}, ["metadata must be an object"]),
]


@pytest.mark.parametrize(("record", "expected"), BREAKS, ids=[str(i) for i in range(len(BREAKS))])
def test_rule_breaks_names_each_rule_dexto_would_refuse_and_javascript_agrees(record, expected):
    """Every rule break dreamd names is one the JavaScript restatement of MemorySchema refuses too."""
    assert dexto.rule_breaks(record) == expected
    assert dexto_accepts([json.dumps(record)]) == [False]


def test_rule_breaks_is_empty_for_memories_at_the_limits():
    """Content of exactly 10,000 UTF-16 units, 10 tags of 50, any metadata extras: accepted by both."""
    records = [
        {"id": "x", "content": "🎉" * 5_000, "createdAt": 1, "updatedAt": 2**53 - 1, "tags": ["t" * 50] * 10, "metadata": {"source": "system", "pinned": True, "any": {"thing": 1}}},
        {"id": "y", "content": "c", "createdAt": 1, "updatedAt": 1, "metadata": {}},
    ]
    assert [dexto.rule_breaks(r) for r in records] == [[], []]
    assert dexto_accepts([json.dumps(r) for r in records]) == [True, True]


def test_js_length_counts_utf16_code_units():
    """A non-BMP character counts two, as JavaScript's String.length does."""
    assert (dexto.js_length("a🎉é"), dexto.js_length("")) == (4, 0)


def test_prompt_block_is_what_the_memory_contributor_writes():
    """The 10 newest memories, newest first, ties in key order, tags appended: as the JavaScript restatement renders them."""
    memories = [dexto_db.memory(f"m{i:02d}", f"memory {i}", 100 + i % 7, tags=["t", "u"] if i % 3 == 0 else None) for i in range(14)]
    rows = dict(zip((f"memory:item:{m['id']}" for m in memories), dexto_db.stringify(memories)))
    block = dexto.prompt_block({k: json.loads(v) for k, v in rows.items()})
    assert block == node(PROMPT_JS, {"rows": rows, "limit": 10})
    assert block.splitlines()[:3] == ["## User Memories", "- memory 6 [Tags: t, u]", "- memory 13"]


def test_prompt_block_is_empty_without_memories_and_pinned_only_keeps_pinned():
    """No memory gives no block at all; pinnedOnly shows only pinned memories."""
    records = {"memory:item:a": {"content": "a", "updatedAt": 2, "metadata": {"pinned": True}}, "memory:item:b": {"content": "b", "updatedAt": 3}}
    assert dexto.prompt_block({}) == ""
    assert dexto.prompt_block(records, pinned_only=True) == "## User Memories\n- a"
