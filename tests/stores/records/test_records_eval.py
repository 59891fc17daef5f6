"""``dreamd eval`` on record stores: a labeled Dexto database is scored like a folder, records named by key."""

from __future__ import annotations

import json

import dexto_db
from conftest import BUILD, STANDARD, T
from test_records_service import NEAR

LABELS = """preset = "dexto"
now = "2026-01-10T09:00:00Z"
keep = ["memory:item:uNiQuE000002"]
[[merge]]
notes = ["memory:item:Ab3dE_fG-hIj", "memory:item:Zz9yX8wV7uT6"]
survivor = "memory:item:Ab3dE_fG-hIj"
[[merge]]
notes = ["memory:item:nearAAAAAAAA", "memory:item:nearBBBBBBBB"]
"""


def _corpus(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    memories = STANDARD + [dexto_db.memory("nearAAAAAAAA", NEAR, T + 10_000), dexto_db.memory("nearBBBBBBBB", NEAR + "\nHotfixes skip the freeze.", T + 12_000)]
    db = dexto_db.create(corpus / "agent.db", memories)
    (corpus / "agent.db.labels.toml").write_text(LABELS)
    return corpus, db


def test_a_labeled_dexto_database_is_scored_and_left_untouched(cli, tmp_path):
    """Both labeled merges found by the detectors, the survivor people kept, nothing destructive; the database's bytes unchanged."""
    corpus, db = _corpus(tmp_path)
    before = (db.read_bytes(), dexto_db.values(db))
    done = cli("eval", str(corpus), "--json")
    assert done.code == 0, done.err
    out = json.loads(done.out)
    (store,) = out["stores"]
    assert (store["store"], store["preset"], store["proposals"]) == ("agent.db", "dexto", 2)
    assert store["score"]["kinds"]["merge"] == {"tp": 2, "fp": 0, "fn": 0, "precision": 1.0, "recall": 1.0, "destructive": 0}
    assert store["score"]["survivor"] == {"agree": 1, "labeled": 1} and out["destructive"] == 0
    assert (db.read_bytes(), dexto_db.values(db)) == before
    assert not (corpus / "agent.db-journal").exists()


def test_a_label_naming_a_record_that_is_not_there_is_one_config_line(cli, tmp_path):
    """A key the database does not hold, or a Dexto labels file with no database beside it: exit 2, one line."""
    corpus, db = _corpus(tmp_path)
    labels = corpus / "agent.db.labels.toml"
    labels.write_text(LABELS.replace("nearBBBBBBBB", "goneBBBBBBBB"))
    done = cli("eval", str(corpus))
    assert (done.code, done.err.count("\n")) == (2, 1)
    assert "names 'memory:item:goneBBBBBBBB', which is not a record of agent.db (records are named by key, memory:item:<id>)" in done.err
    labels.rename(corpus / "other.db.labels.toml")
    done = cli("eval", str(corpus))
    assert done.code == 2 and "no record database other.db beside it" in done.err


def test_an_unlabeled_dexto_folder_counts_the_proposals_of_each_database(cli, tmp_path):
    """``CORPUS/dexto/*.db``: each database is a store of the dexto preset, counted and sampled."""
    folder = tmp_path / "corpus" / "dexto"
    folder.mkdir(parents=True)
    dexto_db.create(folder / "one.db", STANDARD)
    dexto_db.create(folder / "two.db", [dexto_db.memory("onlyAAAAAAAA", BUILD, T)])
    out = json.loads(cli("eval", str(tmp_path / "corpus"), "--json").out)
    assert [(s["store"], s["preset"], s["proposals"]) for s in out["stores"]] == [("dexto/one.db", "dexto", 1), ("dexto/two.db", "dexto", 0)]
    assert out["counts"] == {"merge": {"pending": 1}}
