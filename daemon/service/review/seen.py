"""What a proposal was made from, read back from the state database for the review pages.

The files a proposal touches have their base bytes recorded with it; any other note (one its
evidence quotes, the index it leaves as it is) is read from the snapshot its pass recorded of
the store. So a page shows the bytes the planner read, never the store as it is now, and
reads no file of the store.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Connection

from daemon.config import StoreConfig
from daemon.core.errors import DreamdError
from daemon.db import repo
from daemon.service import recorded
from daemon.service.context import App
from daemon.service.proposals import ProposalView
from daemon.service.workspace import store_config_for_id


class Seen:
    """Reads over one connection, with what several pages share kept: stores, pass manifests, blobs."""

    def __init__(self, app: App, conn: Connection) -> None:
        self.app = app
        self.conn = conn
        self._stores: dict[int, tuple[int, StoreConfig]] = {}
        self._manifests: dict[tuple[int, int | str], dict[str, str]] = {}  # (store, pass id or time made) -> manifest
        self._blobs: dict[str, bytes] = {}

    def store(self, view: ProposalView) -> tuple[int, StoreConfig]:
        """The proposal's store: its id and its configuration (a store first used by path: its preset's)."""
        if view.id not in self._stores:
            store_id = repo.proposal_store(self.conn, view.id)
            assert store_id is not None  # the view was read from its row
            self._stores[view.id] = (store_id, store_config_for_id(self.app, self.conn, store_id))
        return self._stores[view.id]

    def notes(self, view: ProposalView, paths: list[str]) -> dict[str, bytes]:
        """Each of ``paths`` as the proposal saw it: a file it touches from its base, another
        from its pass's snapshot. A path it saw absent, or that neither records, is left out."""
        digests = {p: view.base[p] for p in paths if view.base.get(p)}
        others = [p for p in paths if p not in view.base]
        if others:
            manifest = self._manifest(view)
            digests |= {p: manifest[p] for p in others if p in manifest}
        wanted = set(digests.values()) - set(self._blobs)
        if wanted:
            self._blobs |= repo.get_blobs(self.conn, wanted)
        return {p: self._blobs[h] for p, h in digests.items() if h in self._blobs}

    def written(self, view: ProposalView, path: str) -> bytes | None:
        """The bytes the proposal writes to ``path``, rebuilt from its base and diff as apply
        rebuilds them; None when it removes the file or its recorded bytes cannot rebuild it."""
        digest = view.result.get(path)
        if digest is None:
            return None
        if digest not in self._blobs:
            store_id, _ = self.store(view)
            try:
                _, blobs = recorded.proposal_bytes(self.conn, store_id, view.id, self._blobs, diff=view.diff)
            except DreamdError:
                return None
            self._blobs |= blobs
        return self._blobs.get(digest)

    def _manifest(self, view: ProposalView) -> dict[str, str]:
        """Path -> blob of the snapshot the proposal's pass recorded (the newest one before it
        was made, for a proposal of no pass)."""
        store_id, _ = self.store(view)
        key = (store_id, view.pass_id if view.pass_id is not None else view.created_at)
        if key not in self._manifests:
            snap = repo.pass_snapshot(self.conn, store_id, view.pass_id) if view.pass_id is not None else None
            if snap is None:
                snap = repo.latest_snapshot(self.conn, store_id, dt.datetime.fromisoformat(view.created_at))
            self._manifests[key] = repo.manifest_entries(self.conn, store_id, snap.manifest_id) if snap is not None else {}
        return self._manifests[key]
