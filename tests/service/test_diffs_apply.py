"""Every stored diff is a real patch: ``git apply`` turns the base files into the result files.

The store mixes every proposal kind with awkward notes: CRLF line endings, no final newline,
no frontmatter, a comment in frontmatter, and non-ASCII names with spaces. It is run in
archive mode (deepcode) and in-place mode (generic, with a MEMORY.md index).
"""

from __future__ import annotations

import os
import subprocess

import pytest

from daemon.config import parse_config
from daemon.core.hashing import hash_bytes
from daemon.db import repo
from daemon.service.recorded import proposal_bytes
from daemon.service.passes.run import run_pass
from daemon.service.proposals import list_proposals

CANARY = (
    "Deploys go through the staging cluster first and need a green canary for thirty minutes{nl}"
    "before promotion to production traffic is allowed by the release captain on duty, who also{nl}"
    "signs the change record and informs the support rotation in the shared channel.{nl}"
)
VARIED = {
    "MEMORY.md": (
        "# Memory index\n\n- [Café notes](caf%C3%A9%20notes.md) — opening hours\n- [Deploy](deploy.md) — how deploys work\n"
        "- [Plan v1](plan-v1.md) — first plan\n- [Gone](gone.md) — a note that was deleted by hand\n"
    ),
    "café notes.md": "---\nname: Café notes\ndescription: opening hours\n---\nThe café on the corner opens at nine and closes at six.\n",
    "résumé copy.md": "the café on the corner opens at nine   and closes at six.",  # no frontmatter, no final newline
    "deploy.md": "---\r\nname: Deploy\r\n---\r\n" + CANARY.format(nl="\r\n"),  # CRLF survivor of a near-duplicate merge
    "deploy-notes.md": CANARY.format(nl="\n") + "Rollbacks reuse it.\n",
    "日本語メモ.md": "---\nname: 日本語メモ\nupdated_at: 2025-01-01\nttl_days: 3\n# a comment that must survive\nowners: [kenji]\n---\n週次の状況: ステージングの移行中。\n",
    "windows.md": "---\r\nname: Windows box\r\nexpires: 2025-02-01\r\n---\r\nThe build agent runs on a Windows box until February.\r\n",
    "plan-v1.md": "---\nname: Plan v1\nsuperseded_by: plan-v2.md\n---\nShip in March.\n",
    "plan-v2.md": "---\nname: Plan v2\nsupersedes: plan-v1.md\n---\nShip in May.\n",
}
MODES = {"archive": ("deepcode", {}), "in-place": ("generic", {"index_path": "MEMORY.md"})}


def _materialise(folder, files):
    folder.mkdir(parents=True)
    for path, data in files.items():
        if data is not None:
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_bytes(data)


def _tree(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_every_stored_diff_applies_with_git_apply_and_yields_the_result(mode, make_store, make_app, tmp_path):
    """For each proposal of a pass, ``git apply`` of its diff on a folder of its base files gives exactly its result files."""
    preset, settings = MODES[mode]
    root = make_store(VARIED)
    config = parse_config({"stores": [{"name": "varied", "path": str(root), "preset": preset, "settings": settings}]})
    app = make_app(config)
    report = run_pass(app, config.stores["varied"])
    assert sorted(o.state for o in report.outcomes) == ["pending"] * 6
    proposals = list_proposals(app)
    assert sorted(p.kind for p in proposals) == ["merge", "merge", "reindex", "soft-expire", "soft-expire", "supersede"]
    with app.engine().connect() as conn:
        blobs = repo.get_blobs(conn, [h for p in proposals for h in p.base.values() if h])
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    for proposal in proposals:
        folder = tmp_path / f"apply-{mode}-{proposal.id}"
        _materialise(folder, {p: blobs[h] if h else None for p, h in proposal.base.items()})
        patch = tmp_path / f"{proposal.id}.diff"
        patch.write_bytes(proposal.diff.encode("utf-8"))
        done = subprocess.run(["git", "apply", "--whitespace=nowarn", str(patch)], cwd=folder, env=env, capture_output=True)
        assert done.returncode == 0, (proposal.title, done.stderr.decode())
        expected = {p: h for p, h in proposal.result.items() if h}
        assert {p: hash_bytes(data) for p, data in _tree(folder).items()} == expected, proposal.title


def test_awkward_notes_keep_their_bytes_around_the_edit(make_store, make_app):
    """Marking keeps CRLF endings, the frontmatter comment, and prepends a minimal block to a note without frontmatter."""
    root = make_store(VARIED)
    config = parse_config({"stores": [{"name": "varied", "path": str(root), "preset": "generic", "settings": {"index_path": "MEMORY.md"}}]})
    app = make_app(config)
    run_pass(app, config.stores["varied"])
    proposals = {p.title: p for p in list_proposals(app)}
    after = {}
    with app.engine().connect() as conn:
        for p in proposals.values():
            _, blobs = proposal_bytes(conn, repo.proposal_store(conn, p.id), p.id)
            after.update({path: blobs[h] for path, h in p.result.items() if h and h != p.base.get(path)})
    windows = after["windows.md"]
    assert windows.startswith(b"---\r\nname: Windows box\r\nexpires: 2025-02-01\r\nstatus: expired\r\n")
    assert windows.endswith(b"---\r\nThe build agent runs on a Windows box until February.\r\n")
    assert b"\n# a comment that must survive\nowners: [kenji]\nstatus: expired\n" in after["日本語メモ.md"]
    resume = after["résumé copy.md"]
    assert resume.startswith(b"---\nstatus: superseded\nsuperseded_by: caf\xc3\xa9 notes.md\nvalid_to: ")
    assert resume.endswith(b"---\nthe caf\xc3\xa9 on the corner opens at nine   and closes at six.")
    deploy = after["deploy.md"]
    assert deploy.startswith(b"---\r\nname: Deploy\r\nmerged_from: [deploy-notes.md]\r\n---\r\n" + CANARY.format(nl="\r\n").encode())  # the votes keep CRLF too
    assert deploy.endswith(b"\r\n<!-- merged from deploy-notes.md by dreamd -->\r\nRollbacks reuse it.\r\n")
