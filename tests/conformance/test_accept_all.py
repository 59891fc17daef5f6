"""Accept everything, apply once: every agent still reads its folder right, and a second pass converges.

For each agent's crowded folder (``crowded.py``: sections, notes several others refer to,
merges whose link rewrites meet in the same note and line), one pass is accepted whole and
applied in one ``apply``. Every proposal applies; the agent's own reading rule (the oracles)
finds no retired note in sight, no reference or entry that stopped landing, the index loaded
whole; every entry a proposal added sits under the heading its reviewed diff showed; and a
second pass over the applied store proposes nothing (nothing undone, nothing repeated).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from . import crowded, fixtures, oracles
from .harness import Session, assert_clean_end, config_of


@dataclass(frozen=True)
class Crowd:
    preset: str
    folder: Callable[[], fixtures.Folder]
    oracle: Callable[[], oracles.Oracle]
    settings: dict | None = None
    kinds: tuple[tuple[str, int], ...] = ()  # at least this many proposals of each kind


CROWDS = {
    "claude-code": Crowd("claude-code", crowded.claude_code, oracles.ClaudeCode, kinds=(("merge", 3), ("supersede", 1), ("soft-expire", 1), ("reindex", 1))),
    "serena": Crowd("serena", crowded.serena, oracles.Serena, kinds=(("merge", 3), ("supersede", 1), ("soft-expire", 1))),
    "deepcode": Crowd("deepcode", crowded.deepcode, oracles.DeepCode, kinds=(("merge", 2), ("supersede", 1), ("soft-expire", 1), ("reindex", 1))),
    "generic": Crowd("generic", crowded.generic, lambda: oracles.Generic("index.md"), {"index_path": "index.md"}, kinds=(("merge", 2), ("supersede", 1), ("reindex", 1))),
}


@pytest.fixture
def crowd_of(make_store, make_app, clock) -> Callable[[str], Session]:  # noqa: ANN001
    """Factory: an agent's crowded folder as a configured store, its oracle watching."""

    def make(name: str) -> Session:
        crowd = CROWDS[name]
        folder = crowd.folder()
        root = make_store(folder.notes, name=folder.notes_at)
        make_store(folder.around, name=folder.notes_at.rsplit("/", 1)[0])
        config = config_of(name, root, crowd.preset, crowd.settings)
        return Session(make_app(config), config.store(name), clock, crowd.oracle())

    return make


@pytest.mark.parametrize("agent", CROWDS)
def test_every_proposal_of_a_crowded_pass_applies_in_one_apply(crowd_of, agent: str):
    """Accepting a whole pass of the crowded folder, one apply applies every proposal, and the pass had the kinds the folder plants."""
    done = crowded.everything(crowd_of(agent))
    assert done.states == {p.id: "applied" for p in done.proposals}
    found = Counter(p.kind for p in done.proposals)
    assert all(found[kind] >= n for kind, n in CROWDS[agent].kinds), found


@pytest.mark.parametrize("agent", CROWDS)
def test_the_agent_reads_its_folder_right_after_everything_applied_at_once(crowd_of, agent: str):
    """After the one apply the agent's reading rule holds: nothing retired in sight, every reference and entry landing on a live note, the index loaded whole, every added entry under the heading its diff showed."""
    s = crowd_of(agent)
    done = crowded.everything(s)
    assert done.problems == []
    assert_clean_end(s)


@pytest.mark.parametrize("agent", CROWDS)
def test_a_second_pass_over_the_applied_folder_proposes_nothing(crowd_of, agent: str):
    """A pass over the folder as the one apply left it proposes nothing: nothing undone, nothing repeated."""
    done = crowded.everything(crowd_of(agent))
    assert [(p.kind, p.title) for p in done.second] == []


def test_claude_code_entries_land_in_their_types_sections(crowd_of):
    """In Claude Code's MEMORY.md each entry the reindex added sits under the heading of its note's type, after the entries other applies left in that section."""
    s = crowd_of("claude-code")
    crowded.everything(s)
    text = (s.root / "MEMORY.md").read_text()
    sections = {heading: body for heading, body in (part.split("\n", 1) for part in text.split("\n## ")[1:])}
    assert "- [naming](feedback_naming.md)" in sections["Feedback"].strip().split("\n")[-1]
    assert "(project_backfill_2025.md)" in sections["Project"].strip().split("\n")[-1]
    assert "(reference_dashboards.md)" in sections["Reference"].strip().split("\n")[-1]
    assert "sprint" not in sections["Project"] and "_copy" not in text and "_again" not in text
