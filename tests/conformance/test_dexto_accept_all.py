"""Dexto: everything one pass proposes, accepted together and applied in one apply, is what the
agent reads right, and a later pass converges.

The database is built as Dexto builds it (Node's ``JSON.stringify``, ``INSERT OR REPLACE``)
and read as Dexto reads it: every ``memory:item:%`` row ``JSON.parse``d and checked against
``MemorySchema``, and the prompt's ``## User Memories`` block, all in JavaScript
(``tests/stores/records/dexto_db.py``, restating truffle-ai/dexto@ea2b1863). It holds more
memories than the prompt shows, exact copies with other tags, near copies of which one says
more, near copies that each say something the other does not, and a pinned memory with a
tagged copy: one pass proposes several merges at once.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from daemon.config import adhoc_store
from daemon.service.apply.applying import apply
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide, list_proposals

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stores" / "records"))  # Dexto's database, built and read as Dexto does
import dexto_db  # noqa: E402

T = 1_733_000_000_000  # ms, as Dexto's Date.now() writes it
BUILD = "The build runs with make build and the tests with make test; both need Node 20 and pnpm 9 installed first."
RELEASE = (
    "Releases are cut from main every second Tuesday by the on-call engineer, who tags the commit, writes the "
    "changelog entry, announces the freeze in the team channel and watches the dashboards for an hour."
)
DEPLOY = (
    "Deploys go out through the release job, which builds the image once, pushes it to the registry, updates the "
    "Helm values of every environment in turn and waits for the health checks before moving on."
)
KEYS = "The payment provider's API keys live in 1Password under Shop / Payments, never in the repository."
OTHERS = [
    "Customers mostly order on mobile, so every page is checked on a small screen first.",
    "Map prices are in pence in the database and formatted only in the templates.",
    "The search index is rebuilt nightly at 02:00 UTC by the indexer job.",
    "Support tickets come in through the help desk and are answered within one working day.",
    "The staging database is a nightly copy of production with customer emails scrambled.",
    "Image uploads are resized to three widths by the worker before they reach the CDN.",
]


def _memories() -> list[dict]:
    m = dexto_db.memory
    return [
        m("buildAAAAAAA", BUILD, T, tags=["build"], metadata={"source": "user"}),
        m("buildBBBBBBB", BUILD, T + 1_000, tags=["ci"], metadata={"source": "user"}),
        m("releaseAAAAA", RELEASE, T + 2_000, tags=["release"]),
        m("releaseBBBBB", RELEASE + " Hotfixes skip the freeze.", T + 3_000, tags=["release", "process"], metadata={"source": "system"}),
        m("deployAAAAAA", DEPLOY + " Staging goes first.", T + 4_000, tags=["deploy"]),
        m("deployBBBBBB", DEPLOY + " Rollbacks use helm rollback.", T + 5_000, tags=["deploy", "infra"]),
        m("keysPINNED01", KEYS, T + 6_000, metadata={"source": "user", "pinned": True}),
        m("keysCOPY0001", KEYS, T + 7_000, tags=["secrets"]),
        *(m(f"other{i:07d}", text, T + 10_000 + i * 1_000) for i, text in enumerate(OTHERS)),
    ]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    folder = tmp_path / ".dexto" / "database"
    folder.mkdir(parents=True)
    return dexto_db.create(folder / "coding-agent.db", _memories(), others={"prompt:custom:x": '{"name":"x"}'})


def _listed(db: Path) -> dict[str, str]:
    """What Dexto's ``list('memory:item:')`` reads."""
    return dexto_db.values(db, "memory:item:")


def _sentences(text: str) -> set[str]:
    return {s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()}


def _accept_all(app, db: Path, clock) -> list:  # noqa: ANN001
    """One pass, every pending proposal accepted and applied in one apply; the proposals and their results."""
    clock.advance(minutes=1)
    run_pass(app, adhoc_store(db, "dexto"))
    todo = list_proposals(app, str(db), ["pending"])
    for proposal in todo:
        decide(app, proposal.id, "accept")
    clock.advance(seconds=1)
    return list(zip(todo, apply(app, [p.id for p in todo]) if todo else [], strict=True))


def test_a_whole_pass_applied_at_once_leaves_every_record_one_dexto_reads(db: Path, make_app, clock):
    """After accept-all of a pass's merges, every memory row passes MemorySchema in JavaScript and the prompt block shows each fact once: no item repeats another, none glues two memories, and every memory fits the prompt."""
    before = {json.loads(v)["content"] for v in _listed(db).values()}
    done = _accept_all(make_app(), db, clock)
    assert len(done) >= 4 and {r.state for _, r in done} == {"applied"}
    rows = _listed(db)
    assert dexto_db.dexto_accepts(list(rows.values())) == [True] * len(rows)
    block = dexto_db.node(dexto_db.PROMPT_JS, {"rows": rows, "limit": 10})
    items = [re.sub(r" \[Tags: [^\]]*\]$", "", line[2:]) for line in block.splitlines()[1:]]
    assert len(items) == len(rows) <= 10 and len(set(items)) == len(items)
    assert set(items) <= before  # each kept content is one memory's own, whole


def test_no_tag_metadata_or_sentence_leaves_unless_a_proposal_said_so(db: Path, make_app, clock):
    """Every tag, source and sentence of the database before is on a memory after, but those an applied merge's rationale names as dropped (and that merge is lossy)."""
    before = [json.loads(v) for v in _listed(db).values()]
    done = _accept_all(make_app(), db, clock)
    said = " ".join(p.rationale for p, r in done if r.state == "applied" and p.lossy)
    after = [json.loads(v) for v in _listed(db).values()]
    tags = {t for m in after for t in m.get("tags", ())}
    sources = {(m.get("metadata") or {}).get("source") for m in after}
    sentences = set().union(*(_sentences(m["content"]) for m in after))
    lost_tags = {t for m in before for t in m.get("tags", ()) if t not in tags}
    lost_sentences = {s for m in before for s in _sentences(m["content"]) if s not in sentences}
    assert all(f"tag {t!r}" in said for t in lost_tags)
    assert all(f"“{s}”" in said for s in lost_sentences) and lost_sentences == {"Staging goes first."}
    assert {(m.get("metadata") or {}).get("source") for m in before} <= sources
    assert lost_tags == {"secrets"}  # a pinned memory takes nothing from its copy


def test_a_second_pass_after_accept_all_proposes_nothing(db: Path, make_app, clock):
    """The pass after accept-all proposes no merge again and none that undoes one (every proposal of the first applied), and its findings are gone: every memory is in the prompt."""
    app = make_app()
    assert run_pass(app, adhoc_store(db, "dexto"), dry_run=True).findings[0]["kind"] == "over-prompt-limit"
    _accept_all(app, db, clock)
    assert _accept_all(app, db, clock) == []
    assert run_pass(app, adhoc_store(db, "dexto"), dry_run=True).findings == []
