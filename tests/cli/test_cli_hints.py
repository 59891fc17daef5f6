"""Advice in error lines names a command that works in the state the error leaves."""

from __future__ import annotations

import json
import re
import shlex

NOTE = "---\nname: build\n---\n\nBuild with make all; the binary lands in out/.\n"


def test_the_advice_after_a_stale_apply_proposes_the_change_again(tmp_path, make_store, cli):
    """An accepted merge whose note changed goes stale; the ``dreamd pass …`` the error suggests makes a new pending proposal of it."""
    root = make_store({"a.md": NOTE, "b.md": NOTE, "c.md": NOTE}, name="odd name")
    first = json.loads(cli("pass", "--store", str(root), "--preset", "generic", "--json").out)["proposals"][0]
    cli("accept", str(first["id"]))
    (root / "c.md").write_text(NOTE + "And a line of its own.\n")
    failed = cli("apply")
    advice = re.fullmatch(r"error\[stale\]: 1 proposal\(s\) went stale and were not applied: #1 \((.*) proposes the change again if it is still wanted\)\n", failed.err)
    assert failed.code == 6 and advice is not None, failed.err
    argv = shlex.split(advice.group(1))
    assert argv == ["dreamd", "pass", str(root)]
    again = json.loads(cli(*argv[1:], "--json").out)["proposals"]
    assert [(p["kind"], p["state"], p["paths"]) for p in again] == [("merge", "pending", ["a.md", "b.md"])]
