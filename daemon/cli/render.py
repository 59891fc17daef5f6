"""Text and JSON output of the CLI. JSON shapes here are the documented, stable contract."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from daemon.cli.lines import one_line, printable  # noqa: F401 - the faces' escaping, importable without click


def say(text: str, *, err: bool = False, nl: bool = True) -> None:
    """Print one line of human-readable text built from store data, escaped so it can neither
    drive a terminal nor break into two lines."""
    click.echo(one_line(text), err=err, nl=nl)


def emit_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, sort_keys=True, default=str))


def reader_gone() -> None:
    """stdout's reader left (``dreamd show 1 | head -1``): what it did not read is not
    wanted, so the rest goes nowhere and nothing is said, as in ``git log | head -1``."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush must not fail again
    os.close(devnull)


def colour_enabled() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in __import__("os").environ


def diff_text(diff: str) -> str:
    """The diff, coloured like git's on a terminal, plain otherwise; its text escaped first."""
    diff = printable(diff)
    if not colour_enabled():
        return diff
    out = []
    for line in diff.splitlines(keepends=True):
        if line.startswith(("+++", "---", "diff --git", "index ", "new file", "deleted file")):
            out.append(click.style(line, bold=True))
        elif line.startswith("@@"):
            out.append(click.style(line, fg="cyan"))
        elif line.startswith("+"):
            out.append(click.style(line, fg="green"))
        elif line.startswith("-"):
            out.append(click.style(line, fg="red"))
        else:
            out.append(line)
    return "".join(out)


def planned_json(outcome: Any, store: str, pass_id: int | None = None, at: str | None = None, store_kind: str = "files") -> dict[str, Any]:
    """A proposal from a pass (``dreamd pass --json``): the same keys as ``show --json``;
    ``id``, ``pass_id`` and the times are null in a dry run (nothing is stored)."""
    planned = outcome.planned
    change = planned.change
    draft = planned.draft
    return {
        "id": outcome.id, "store": store, "store_kind": store_kind, "kind": draft.kind, "state": outcome.state,
        "paths": planned.paths, "source": draft.source, "confidence": draft.confidence,
        "lossy": draft.lossy, "title": draft.title, "rationale": draft.rationale,
        "evidence": [e.as_dict() for e in draft.evidence],
        "base": dict(change.base) if change else {}, "result": dict(change.result) if change else {},
        "diff": planned.diff, "state_reason": outcome.note,
        "reads": change.reads.as_dict() if change else None,
        "pass_id": pass_id, "created_at": at, "updated_at": at, "decisions": [],
    }  # fmt: skip


def proposal_header(p: dict[str, Any]) -> str:
    ident = f"#{p['id']}" if p.get("id") is not None else "(dry run)"
    lossy = " LOSSY" if p.get("lossy") else ""
    head = click.style(f"{ident} {p['kind']} [{p['state']}]{lossy}", bold=True) if colour_enabled() else f"{ident} {p['kind']} [{p['state']}]{lossy}"
    lines = [
        f"  source: {p['source']}  confidence: {p['confidence']:.2f}",
        f"  why: {p['rationale']}",
    ]
    if p.get("store_kind") == "records":
        lines.append("  records: paths are record keys; a retired record is deleted from the table, its exact value kept by dreamd")
    if p.get("state_reason"):
        lines.append(f"  note: {p['state_reason']}")
    for e in p.get("evidence", []):
        lines += evidence_lines(e)
    lines += reads_lines(p.get("reads") or {})
    return f"{head} {one_line(p['title'])}\n" + "\n".join(map(one_line, lines))  # only the head is styled


QUOTED_LINES = 5  # lines of an evidence quote shown in a header; the rest are counted
QUOTED_CHARS = 100  # characters of each


def evidence_lines(evidence: dict[str, Any]) -> list[str]:
    """An evidence item: ``evidence: a.md:7-7 'its one line'``, or, for a quote of several
    lines (a link with the lines around it), each line below it as it reads in the note."""
    where = f"  evidence: {evidence['path']}:{evidence['start']}-{evidence['end']}"
    quoted = evidence["quote"].strip("\n").splitlines()
    if len(quoted) <= 1:
        return [f"{where} {(quoted[0].strip()[:QUOTED_CHARS] if quoted else '')!r}"]
    shown = [f"    | {line[:QUOTED_CHARS]}".rstrip() for line in quoted[:QUOTED_LINES]]
    more = len(quoted) - QUOTED_LINES
    return [where, *shown, *([f"    | … {more} more line(s)"] if more > 0 else [])]


def reads_lines(reads: dict[str, Any]) -> list[str]:
    """What the proposal does to what the agent reads, and what no policy may accept."""
    from daemon.core.proposals import read_lines

    return [f"  {line}" for line in read_lines(reads)]


def proposal_line(p: dict[str, Any]) -> str:
    lossy = " lossy" if p.get("lossy") else ""
    return one_line(f"#{p['id']:<5} {p['state']:<10} {p['kind']:<11} {p['confidence']:.2f}{lossy}  {p['store']}: {p['title']}")


def waiting_parts(pending: int, accepted: int) -> str:
    """What waits for a person, as ``status`` and ``pass --all`` say it: ``3 pending, 1 accepted, not applied``."""
    return ", ".join([f"{pending} pending"] * bool(pending or not accepted) + [f"{accepted} accepted, not applied"] * bool(accepted))
