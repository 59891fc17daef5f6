"""Repoints the agent itself follows, split into one proposal per referring note.

A link to a note that exists under another name (folder, case, ``_``/``-``/space, ``.md``) is
repointed, and the agent's own rule (the oracles, written apart from dreamd's reader models)
resolves the rewritten link to that note. A relink over many referring notes is one proposal
per note: each diff its own, no proposal writing more than ``MAX_FILES``; accepted all at once
they apply cleanly and leave nothing dangling; a rejected one stays rejected.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.planners.detectors.dangling import MAX_FILES
from daemon.service.apply.applying import apply
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide, decide_all, list_proposals

from . import oracles
from .harness import Session, assert_right, config_of

FM = "---\nname: {name}\ndescription: {name} notes\nmetadata:\n  type: project\n---\n"

# preset, oracle, files, the dangling reference as the oracle names it before
CASES = {
    "claude-code [[name]], _ for -": ("claude-code", oracles.ClaudeCode, {"scraper.md": FM.format(name="scraper") + "Fields are in [[project-bga-player-metadata]].\n", "project_bga_player_metadata.md": "Elo, games, country.\n"}, ("scraper.md", "wiki", "project-bga-player-metadata")),
    "claude-code [[name]], case": ("claude-code", oracles.ClaudeCode, {"scraper.md": FM.format(name="scraper") + "Deploy with [[Deploy-Steps]].\n", "ops/deploy_steps.md": FM.format(name="deploy-steps") + "Promote.\n"}, ("scraper.md", "wiki", "Deploy-Steps")),
    "cline markdown, moved folder": ("cline", oracles.Cline, {"activeContext.md": "# Active\nHosting is in [hosting](hosting.md).\n", "infra/hosting.md": "# Hosting\nOne VM behind Caddy.\n"}, ("activeContext.md", "markdown", "hosting.md")),
    "serena mem:, - for _": ("serena", oracles.Serena, {"core.md": "Read `mem:auth-login` first.\n", "auth_login.md": "Login posts to /session.\n"}, ("core.md", "mem", "auth-login")),
    "serena mem:, moved folder": ("serena", oracles.Serena, {"core.md": "Read `mem:login` first.\n", "auth/login.md": "Login posts to /session.\n"}, ("core.md", "mem", "login")),
    "deepcode markdown, case": ("deepcode", oracles.DeepCode, {"architecture.md": "Ports are in [ports](Ports.md).\n", "ports.md": "api 8080.\n"}, ("architecture.md", "markdown", "Ports.md")),
}


def _session(make_store, make_app, clock, preset: str, oracle: oracles.Oracle, files: dict[str, str], allowed: frozenset[str] = frozenset()) -> Session:  # noqa: ANN001, PLR0913
    root = make_store(files, name="store/notes")
    config = config_of("store", root, preset)
    return Session(make_app(config), config.store("store"), clock, oracle, allowed)


@pytest.mark.parametrize("case", CASES)
def test_a_repointed_link_resolves_by_the_agents_own_rule(make_store, make_app, clock, case: str):
    """The one relink proposal, applied, leaves the agent's oracle resolving the reference that dangled to the note that was meant."""
    preset, oracle, files, dangling = CASES[case]
    s = _session(make_store, make_app, clock, preset, oracle(), files)
    assert s.baseline.dangling == {dangling}
    (relink,) = [p for p in s.pending_after_pass() if p.kind == "relink"]
    assert "unlink" not in relink.title.lower() and relink.reads["holds"] == []
    step = s.take(relink, then_revert=False)
    assert step.state == "applied" and step.problems == []
    assert s.reading().dangling == frozenset()
    (target,) = [r for r in s.reading().refs if (r.source, r.syntax) == dangling[:2]]
    assert target.resolves and target.target == next(p for p in files if p != dangling[0])


def _forty(root_files: dict[str, str]) -> dict[str, str]:
    for i in range(40):
        root_files[f"topic_{i:02d}.md"] = FM.format(name=f"topic-{i:02d}") + f"Topic {i}. Deploys: [steps](deploy_steps.md), see also [[Deploy-Steps]].\n"
    return root_files


def _index(files: dict[str, str]) -> str:
    lines = [f"- [{p}]({p}) — notes" for p in sorted(files) if p != "ops/deploy_steps.md"]
    return "# Memory\n\n## Project\n\n" + "\n".join([*lines, "- [Deploy steps](deploy_steps.md) — how a release is promoted"]) + "\n"


def _forty_store() -> dict[str, str]:
    files = _forty({"ops/deploy_steps.md": FM.format(name="deploy-steps") + "Promote the build from staging.\n"})
    files["MEMORY.md"] = _index(files)
    return files


def test_forty_referring_notes_give_forty_proposals_that_apply_together_and_leave_nothing_dangling(make_store, make_app, clock):
    """A moved note linked from 40 notes: one relink per note (each writing at most MAX_FILES), one reindex of MEMORY.md; all accepted at once, all apply, the agent's rule resolves every link and entry, and the next pass has nothing left."""
    s = _session(make_store, make_app, clock, "claude-code", oracles.ClaudeCode(), _forty_store())
    assert len(s.baseline.dangling) == 40 and s.baseline.unresolved_entries == {"deploy_steps.md"}  # the oracle follows [[name]] only
    pending = s.pending_after_pass()
    relinks = [p for p in pending if p.kind == "relink"]
    (reindex,) = [p for p in pending if p.kind == "reindex"]
    assert len(relinks) == 40 and {p.title for p in relinks} == {f"Repoint 2 references in topic_{i:02d}.md" for i in range(40)}
    for p in pending:
        written = [path for path in p.result if p.result[path] != p.base.get(path)]
        assert len(written) <= MAX_FILES, (p.title, written)
    assert "repoint 1 entry" in reindex.title
    decide_all(s.app, [p.id for p in pending], "accept")
    results = apply(s.app, store_name=s.store.name)
    assert sorted({r.state for r in results}) == ["applied"] and len(results) == len(pending)
    end = s.reading()
    assert end.dangling == frozenset() and end.unresolved_entries == frozenset()
    assert len([r for r in end.refs if r.resolves and r.target == "ops/deploy_steps.md"]) == 40
    assert all("[steps](ops/deploy_steps.md), see also [[deploy-steps]]." in (s.root / f"topic_{i:02d}.md").read_text() for i in range(40))
    assert "- [Deploy steps](ops/deploy_steps.md) — how a release is promoted\n" in (s.root / "MEMORY.md").read_text()
    clock.advance(minutes=1)
    assert [p for p in list_proposals(s.app, s.store.name, ["pending"]) if p.kind in ("relink", "reindex")] == []
    assert [o for o in run_pass(s.app, s.store).outcomes if o.planned.draft.kind in ("relink", "reindex")] == []


def test_each_split_proposal_applied_alone_keeps_what_the_agent_reads_right(make_store, make_app, clock):
    """Every relink and reindex of the 40-note store, applied then reverted one at a time, is judged right by the oracle (the moved note's index entry dangled before)."""
    s = _session(make_store, make_app, clock, "claude-code", oracles.ClaudeCode(), _forty_store(), frozenset({"deploy_steps.md"}))
    assert_right(s.isolate("relink", rounds=1) + s.isolate("reindex", rounds=1))


def test_a_rejected_split_proposal_does_not_come_back(make_store, make_app, clock):
    """Rejecting the relink of one note suppresses that change in later passes; the others stay pending, each once."""
    s = _session(make_store, make_app, clock, "claude-code", oracles.ClaudeCode(), _forty_store())
    relinks = [p for p in s.pending_after_pass() if p.kind == "relink"]
    rejected = next(p for p in relinks if p.title.endswith("topic_07.md"))
    decide(s.app, rejected.id, "reject", "topic 7 keeps its old link")
    with open(Path(s.root) / "topic_12.md", "a") as f:  # another referring note changes: only its own proposal is new
        f.write("More about topic 12.\n")
    clock.advance(days=1)
    outcomes = {o.planned.draft.title: o.state for o in run_pass(s.app, s.store).outcomes if o.planned.draft.kind == "relink"}
    assert outcomes["Repoint 2 references in topic_07.md"] == "suppressed"
    assert outcomes["Repoint 2 references in topic_12.md"] == "pending"
    assert {state for title, state in outcomes.items() if not title.endswith(("topic_07.md", "topic_12.md"))} == {"duplicate"}
    pending = [p for p in list_proposals(s.app, s.store.name, ["pending"]) if p.kind == "relink"]
    assert len(pending) == 39 and not any(p.title.endswith("topic_07.md") for p in pending)


def test_duplicates_memory_md_lists_as_wiki_links_merge_together_and_leave_one_entry_each(make_store, make_app, clock):
    """MEMORY.md lists four notes as ``[[name]]``, two pairs of exact copies, the copies spelled
    unlike their files: no entry is added for them; both merges, accepted at once, apply, each
    taking its copy's line out; the agent's rule then reads no dangling reference, and the
    next pass proposes nothing more for the index."""
    body = {"alpha": "Alpha runs make deploy, then checks the dashboard and the logs every time.\n", "beta": "Beta owns the queue and retries a failed job three times before it alerts.\n"}
    files = {f"{name}.md": FM.format(name=name) + body[name.split("-")[0]] for name in ("alpha", "alpha-copy", "beta", "beta-copy")}
    files["MEMORY.md"] = "- [[alpha]] — deploys\n- [[alpha_copy]] — deploys, again\n- [[beta]] — the queue\n- [[Beta-Copy]] — the queue, again\n"
    s = _session(make_store, make_app, clock, "claude-code", oracles.ClaudeCode(), files)
    pending = s.pending_after_pass()
    assert sorted(p.kind for p in pending) == ["merge", "merge"]  # no reindex: the [[name]] entries list all four
    decide_all(s.app, [p.id for p in pending], "accept")
    assert [r.state for r in apply(s.app, store_name=s.store.name)] == ["applied", "applied"]
    assert (s.root / "MEMORY.md").read_text() == "- [[alpha]] — deploys\n- [[beta]] — the queue\n"
    assert s.reading().dangling == frozenset()
    clock.advance(minutes=1)
    assert [o for o in run_pass(s.app, s.store).outcomes if o.planned.draft.kind == "reindex"] == []
