"""Note names with a newline, a tab or a quote: git C-quotes them in diff headers,
and such notes are merged, applied and reverted like any other (they used to be refused with
"diff check failed"). Their names show escaped on one line. (A backslash stays refused in a
store path, by design: on Windows it is a folder separator.)"""

from __future__ import annotations

import subprocess

import pytest

from daemon.config import adhoc_store
from daemon.service.apply.applying import apply, revert
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide, get_proposal

BODY = "---\nname: {}\n---\nThe deploy script runs on port 8080 every night at two.\n"
ODD = ['say "hi".md', "tab\there.md", "new\nline.md"]


@pytest.mark.parametrize("preset", ["deepcode", "generic"])
def test_notes_with_odd_names_are_merged_applied_and_reverted(make_store, make_app, read_tree, preset):
    root = make_store({"plain.md": BODY.format("plain"), **{name: BODY.format(i) for i, name in enumerate(ODD)}})
    before = read_tree(root)
    app = make_app()
    (merge,) = [o for o in run_pass(app, adhoc_store(root, preset)).outcomes if o.planned.draft.kind == "merge"]
    assert merge.state == "pending", merge.note
    assert set(merge.planned.draft.retire) == set(ODD)
    view = get_proposal(app, merge.id)
    assert '"a/say \\"hi\\".md"' in view.diff and '"a/new\\nline.md"' in view.diff  # git's own quoting
    checked = subprocess.run(["git", "apply", "--check", "-"], cwd=root, input=view.diff.encode(), capture_output=True)
    assert checked.returncode == 0, checked.stderr.decode()
    decide(app, merge.id, "accept")
    assert [r.state for r in apply(app, [merge.id])] == ["applied"]
    assert read_tree(root) != before
    assert revert(app, merge.id).state == "reverted"
    assert read_tree(root) == before


def test_odd_names_show_on_one_line(make_store, cli, db_url):
    root = make_store({"plain.md": BODY.format("plain"), "new\nline.md": BODY.format("odd")})
    shown = cli("--db", db_url, "pass", "--store", str(root), "--preset", "deepcode")
    assert shown.code == 0, shown.err
    why = next(line for line in shown.out.splitlines() if line.startswith("  why: "))
    assert "new\\nline.md" in why
    assert not any(line.startswith("line.md") for line in shown.out.splitlines())
    listed = cli("--db", db_url, "proposals")
    assert len(listed.out.strip().splitlines()) == 1
