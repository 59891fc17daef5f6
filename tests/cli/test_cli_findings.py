"""A reference that could mean several notes is left for a person: the pass names it with its candidates."""

from __future__ import annotations

import json

FILES = {
    "MEMORY.md": "# Memory\n\n- [Login](login.md) — where login lives\n",
    "scraper.md": "---\nname: scraper\ndescription: s\n---\nLog in first: [[login]].\n",
    "auth/login.md": "Auth login.\n",
    "web/login.md": "Web login.\n",
}


def test_a_pass_names_each_ambiguous_reference_with_its_candidates(make_store, cli):
    """`pass` says, on stderr and under `findings`, which link and index entry could mean auth/login.md or web/login.md, and proposes neither a repoint nor an unlink of them."""
    store = make_store(FILES)
    done = cli("pass", "--dry-run", "--store", str(store), "--preset", "claude-code")
    assert done.code == 0, done.err
    assert (
        "finding [ambiguous-reference]: scraper.md line 5: 'login' lands on no live note and could mean auth/login.md or web/login.md: "
        "no repoint until a person says which\n"
    ) in done.err
    assert "finding [ambiguous-reference]: MEMORY.md lists login.md, which does not exist and could mean auth/login.md or web/login.md" in done.err
    report = json.loads(cli("pass", "--dry-run", "--store", str(store), "--preset", "claude-code", "--json").out)
    assert [f["paths"] for f in report["findings"]] == [["scraper.md", "auth/login.md", "web/login.md"], ["login.md", "auth/login.md", "web/login.md"]]
    assert [p for p in report["proposals"] if p["kind"] == "relink"] == []
    (reindex,) = [p for p in report["proposals"] if p["kind"] == "reindex"]
    assert "\n-- [Login](login.md)" not in reindex["diff"] and "\n - [Login](login.md) — where login lives\n" in reindex["diff"]  # the entry stays
