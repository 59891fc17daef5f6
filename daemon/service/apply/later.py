"""What to do when a revert is refused because a later dreamd apply changed its files.

Every proposal of a pass edits the same index, so after two of them are applied the first
cannot be reverted alone: the index holds the second one's edit too. That is no one's edit
to keep, only an order to follow, and the refusal says which: ``dreamd revert --pass N``
when the later applies are of the same pass (it reverts newest first), else the later
proposals to revert first.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from daemon.core.proposals import APPLIED
from daemon.db import repo


def revert_order(conn: Connection, store_id: int, proposal_id: int, current: dict[str, str | None]) -> str | None:
    """The commands that revert ``proposal_id`` after the later applies that wrote over its
    files, when each changed file (``current``: path -> the hash it holds now) went from what
    this apply wrote to what it holds through those applies alone, each still applied; None
    when anything else wrote one in between (someone's edit: no order of reverts gives it back)."""
    applies = repo.finished_applies(conn, store_id)
    mine = max((n for n, (pid, _) in enumerate(applies) if pid == proposal_id), default=None)
    if mine is None:
        return None
    held = {path: applies[mine][1][path][1] for path in current if path in applies[mine][1]}  # what each file held after this apply
    later: dict[int, Any] = {}
    for pid, steps in applies[mine + 1 :]:
        touched = set(steps) & set(current)
        if not touched or repo.get_proposal(conn, store_id, pid).state != APPLIED:
            continue  # a later apply since reverted gave back the bytes it found
        if any(held.get(path) != steps[path][0] for path in touched):
            return None  # it found bytes nobody's apply left there
        held |= {path: steps[path][1] for path in touched}
        later[pid] = repo.get_proposal(conn, store_id, pid)
    if not later or held != current:
        return None
    pass_id = repo.get_proposal(conn, store_id, proposal_id).pass_id
    ids = sorted(later)
    names = " and ".join(f"#{pid}" for pid in ids)
    it = "it" if len(current) == 1 else "them"
    if pass_id is not None and all(row.pass_id == pass_id for row in later.values()):
        return f"{names}, applied later in the same pass, wrote {it} since: dreamd revert --pass {pass_id} reverts the pass's applies newest first"
    first = ", then ".join(f"dreamd revert {pid}" for pid in reversed(ids))
    return f"{names}, applied later, wrote {it} since: {first}, then dreamd revert {proposal_id}"
