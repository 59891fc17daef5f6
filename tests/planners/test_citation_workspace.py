"""Citation drift end to end: a store's ``workspace`` key, a real git repository, real passes.

The workspace is read for git's metadata and for whether files exist, never for their
contents: one test makes the cited file a named pipe nobody writes to, so any attempt to
read it would hang the pass, which runs in a subprocess with a timeout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from daemon.config import load_config
from daemon.core.errors import ConfigError
from daemon.service.passes.run import run_pass

NOTE = "---\nupdated_at: 2026-03-02\n---\nThe retry loop is in `src/net/retry.py:88`.\nOld helpers were in src/legacy/helpers.py.\n"
STABLE = "---\nupdated_at: 2026-03-02\n---\nPorts are set in src/ports.py.\n"
PLAIN = "---\nupdated_at: 2026-03-02\n---\nThe API listens on 8080.\n"


def git(repo: Path, *args: str, when: str = "2026-02-20T10:00:00Z") -> str:
    env = {**os.environ, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    ident = ["-c", "user.name=t", "-c", "user.email=t@example.org"]
    return subprocess.run(["git", "-C", str(repo), *ident, *args], check=True, capture_output=True, text=True, env=env).stdout


def commit_files(repo: Path, files: dict[str, str | None], message: str, when: str) -> None:
    """Write (or, for None, delete) files and commit them at ``when``."""
    for rel, text in files.items():
        path = repo / rel
        if text is None:
            git(repo, "rm", "-q", rel, when=when)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        git(repo, "add", rel, when=when)
    git(repo, "commit", "-q", "-m", message, when=when)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A repository: three files added before the notes were written, then retry.py rewritten and helpers.py deleted after."""
    repo = tmp_path / "ws"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit_files(repo, {"src/net/retry.py": "loop\n", "src/legacy/helpers.py": "h\n", "src/ports.py": "p\n"}, "start", "2026-02-20T10:00:00Z")
    commit_files(repo, {"src/net/retry.py": "loop with jitter\n"}, "rewrite retry with jitter", "2026-03-10T10:00:00Z")
    commit_files(repo, {"src/legacy/helpers.py": None}, "drop legacy helpers", "2026-03-11T10:00:00Z")
    return repo


def config_file(tmp_path: Path, store: Path, workspace: str | None) -> Path:
    line = f'workspace = "{workspace}"\n' if workspace is not None else ""
    path = tmp_path / "config.toml"
    path.write_text(f'[[stores]]\nname = "notes"\npath = "{store}"\npreset = "generic"\n{line}')
    return path


def proposals(report):
    return [(o.planned.draft.source, o.planned.draft.kind, o.planned.draft.retire) for o in report.outcomes]


def test_workspace_is_read_relative_to_the_config_file(tmp_path, make_store, workspace):
    """``workspace = "ws"`` names the folder beside the config file, resolved once."""
    store = make_store({"retry.md": NOTE})
    assert load_config(config_file(tmp_path, store, "ws")).store("notes").workspace == workspace


def test_a_workspace_that_is_not_a_string_is_a_config_error(tmp_path, make_store):
    """``workspace = 3`` is refused when the config is read, naming the store."""
    path = tmp_path / "config.toml"
    path.write_text(f'[[stores]]\nname = "notes"\npath = "{make_store({})}"\npreset = "generic"\nworkspace = 3\n')
    with pytest.raises(ConfigError, match="store 'notes': workspace must be the path of a git repository"):
        load_config(path)


def test_pass_proposes_expiry_of_the_note_whose_citations_drifted(tmp_path, make_store, make_app, workspace):
    """Only the note citing a rewritten and a deleted file is proposed, with both commits in its rationale."""
    store = make_store({"retry.md": NOTE, "ports.md": STABLE, "api.md": PLAIN})
    config = load_config(config_file(tmp_path, store, str(workspace)))
    report = run_pass(make_app(config), config.store("notes"), dry_run=True)
    assert proposals(report) == [("detector:citation-drift@1", "soft-expire", ("retry.md",))]
    draft = report.outcomes[0].planned.draft
    assert draft.reason == "cites src/legacy/helpers.py, src/net/retry.py, changed or gone since the note"
    assert '"drop legacy helpers"' in draft.rationale and '"rewrite retry with jitter"' in draft.rationale


def test_without_a_workspace_no_citation_is_checked(tmp_path, make_store, make_app, workspace):
    """The same store configured without a workspace gets no citation proposal."""
    store = make_store({"retry.md": NOTE, "ports.md": STABLE})
    config = load_config(config_file(tmp_path, store, None))
    assert proposals(run_pass(make_app(config), config.store("notes"), dry_run=True)) == []


@pytest.mark.parametrize("made", [True, False])
def test_a_workspace_that_is_no_repository_fails_the_pass_with_a_config_error(tmp_path, make_store, make_app, made, monkeypatch):
    """A workspace folder outside any git work tree, or missing, is reported by the pass, not silently skipped."""
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # wherever the tests run, git looks no higher
    if made:
        (tmp_path / "plain").mkdir()
    store = make_store({"retry.md": NOTE})
    config = load_config(config_file(tmp_path, store, str(tmp_path / "plain")))
    with pytest.raises(ConfigError, match=r"workspace .*plain: git cannot read its history"):
        run_pass(make_app(config), config.store("notes"), dry_run=True)


def test_a_new_commit_in_the_workspace_makes_an_unchanged_store_due(tmp_path, make_store, make_app, clock, workspace):
    """An unchanged store is skipped, until the workspace gets a new commit: then it is passed over again."""
    store = make_store({"ports.md": STABLE})
    config = load_config(config_file(tmp_path, store, str(workspace)))
    app = make_app(config)
    assert run_pass(app, config.store("notes")).status == "completed"
    clock.advance(hours=1)
    assert run_pass(app, config.store("notes")).status == "skipped"
    commit_files(workspace, {"src/ports.py": "p2\n"}, "move ports", "2026-03-12T10:00:00Z")
    clock.advance(hours=1)
    report = run_pass(app, config.store("notes"))
    assert (report.status, proposals(report)) == ("completed", [("detector:citation-drift@1", "soft-expire", ("ports.md",))])


def test_cited_file_contents_are_never_read(tmp_path, make_store, workspace):
    """The cited file is a named pipe without permissions: reading it would hang; the pass finishes and still reports the drift."""
    target = workspace / "src" / "net" / "retry.py"
    target.unlink()
    os.mkfifo(target)
    target.chmod(0)
    store = make_store({"retry.md": NOTE.replace("Old helpers were in src/legacy/helpers.py.\n", "")})
    config = config_file(tmp_path, store, str(workspace))
    dreamd = Path(sys.executable).with_name("dreamd")
    env = {**os.environ, "DREAMD_DB": f"sqlite:///{tmp_path / 'none.db'}"}
    done = subprocess.run([str(dreamd), "--config", str(config), "pass", "--dry-run", "--json", "notes"], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    (proposal,) = json.loads(done.stdout)["proposals"]
    assert (proposal["source"], proposal["kind"]) == ("detector:citation-drift@1", "soft-expire")
