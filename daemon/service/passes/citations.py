"""What a store's workspace says of the files its notes cite, gathered before planning.

Opt-in per store (``workspace = PATH`` in its config). The workspace is outside the store's
scope, so what is read there is kept to a minimum: git's commit metadata (one ``git log``
per batch of cited paths) and whether each cited path exists (``lstat``, after checking that
its folder resolves inside the workspace). No file of the workspace is opened, so its
contents never reach dreamd, a proposal or a model.
"""

from __future__ import annotations

import os
from pathlib import Path

from daemon.config import StoreConfig
from daemon.core.view import StoreView
from daemon.diffs.history import head_of, last_commits
from daemon.planners.citations import CitedFile, Commit, cited_paths


def workspace_facts(store: StoreConfig, view: StoreView) -> dict[str, CitedFile]:
    """Cited path -> what the workspace says of it; empty when the store has no workspace."""
    if store.workspace is None:
        return {}
    paths = cited_paths(list(view.live_notes()), set(view.notes))
    if not paths:
        return {}
    root = store.workspace
    commits = last_commits(root, paths) if head_of(root) else {}
    return {p: CitedFile(p, _exists(root, p), Commit(*commits[p]) if p in commits else None) for p in paths}


def workspace_mark(store: StoreConfig) -> str:
    """The workspace's HEAD, for the pass fingerprint: a new commit there is worth a new pass
    even when the notes did not change."""
    return f";workspace={store.workspace}@{head_of(store.workspace)}" if store.workspace is not None else ""


def _exists(root: Path, path: str) -> bool:
    """Whether ``path`` exists in the work tree, without following a symlink out of it and
    without opening anything."""
    target = root / path
    folder = Path(os.path.realpath(target.parent))
    if folder != root and root not in folder.parents:
        return False
    return os.path.lexists(folder / target.name)
