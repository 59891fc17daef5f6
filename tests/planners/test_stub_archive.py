"""An empty note, archived and restored for real: the removal of an empty file survives the diff round trip."""

from __future__ import annotations

FACT = "The staging database is reset every Monday.\n"


def test_empty_note_is_archived_and_reverted_byte_for_byte(tmp_path, make_store, cli):
    """Serena archives retired notes beside the folder: the empty note moves there marked, and revert brings back its zero bytes."""
    store = make_store({"scratch.md": "", "staging.md": FACT}, name="memories")
    db = f"sqlite:///{tmp_path / 'state.db'}"
    assert cli("--db", db, "pass", "--store", str(store), "--preset", "serena").code == 0
    assert cli("--db", db, "accept", "1").code == 0
    assert cli("--db", db, "apply", "1").code == 0
    archived = tmp_path / "memories.dreamd-archive" / "scratch.md"
    assert not (store / "scratch.md").exists()
    assert archived.read_text().startswith("---\nstatus: expired\nexpired_at: ")
    assert archived.read_text().endswith("expired_reason: empty note\n---\n")
    assert cli("--db", db, "revert", "1").code == 0
    assert (store / "scratch.md").read_bytes() == b"" and not archived.exists()
    assert (store / "staging.md").read_text() == FACT
