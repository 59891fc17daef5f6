"""Looking back: ``history``, ``log``, ``verify``.

Each takes an optional store; with none named it covers every store there is (configured,
and registered by path in earlier commands) rather than asking which one.
"""

from __future__ import annotations

from typing import Any

import click

from daemon.cli.render import emit_json, say

MAX_EVENTS = 1_000_000  # what `log --limit` may ask for: past it, no count the database takes


def _stores(app, name: str | None, path: str | None, preset: str | None) -> list:  # noqa: ANN001
    """The store named (by name or path), else every store: configured ones and those the database knows."""
    from daemon.service.workspace import all_stores, resolve_store

    if name or path:
        return [resolve_store(app, name, path, preset)]
    return all_stores(app)


@click.command("history")
@click.argument("store_name", metavar="[STORE]", required=False)
@click.option("--store", "store_path", metavar="PATH")
@click.option("--preset", metavar="NAME")
@click.option("--as-of", "as_of", metavar="TIME", help="ISO time: list the store's files as recorded then.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (see README); a list when no store is named.")
@click.pass_obj
def history_command(settings, store_name, store_path, preset, as_of: str | None, as_json: bool) -> None:  # noqa: ANN001
    """Passes and snapshots of a store, or of every store (bi-temporal: --as-of shows files at a time)."""
    from daemon.core.errors import ConfigError
    from daemon.core.notes import as_utc
    from daemon.service.review import history

    when = as_utc(as_of) if as_of else None
    if as_of and when is None:
        raise ConfigError(f"--as-of {as_of!r} is not an ISO time", hint="e.g. 2026-11-30T12:00:00Z")
    app = settings.app(read_only=True)
    named = bool(store_name or store_path)
    found = [history(app, store, when) for store in _stores(app, store_name, store_path, preset)]
    if as_json:
        emit_json(found[0] if named else found)
        return
    for out in found:
        if not named:
            say(f"{out['store']}:")
        _history_text(out)
    if not found:
        click.echo("no stores yet")


def _history_text(out: dict[str, Any]) -> None:
    for p in out["passes"]:
        stats = p["stats"] or {}
        counts = " ".join(f"{k}={v}" for k, v in stats.items() if k not in ("v", "llm"))
        click.echo(f"pass #{p['id']} {p['status']:<9} {p['started_at']} {p['actor']} via {p['surface']} {counts}" + (f" error: {p['error']}" if p["error"] else ""))
        llm = stats.get("llm")
        if llm:
            cost = "unpriced" if llm.get("cost") is None else f"${llm['cost']:.4f}"
            stopped = f"; stopped: {llm['stopped']}" if llm.get("stopped") else ""
            click.echo(f"  model: {llm['calls']} calls, {llm['prompt_tokens']} prompt + {llm['completion_tokens']} completion tokens, {cost}{stopped}")
            coverage = llm.get("coverage")
            if coverage:
                held = f", {coverage['groups_shown']} of {coverage['groups']} related groups shown together" if coverage.get("groups") else ""
                left = f", {coverage['left']} left" if coverage.get("left") else ""
                click.echo(f"  coverage: {coverage['shown']} of {coverage['due']} due notes shown{held}{left}")
    for s in out["snapshots"]:
        ref = f"pass #{s['pass_id']}" if s["pass_id"] else f"proposal #{s['proposal_id']}"
        click.echo(f"snapshot #{s['id']} {s['reason']:<13} {s['recorded_at']} {s['files']} files root {s['root_hash'][:12]} ({ref})")
    if "as_of" in out:
        click.echo(f"as of {out['as_of']['time']}:")
        for path, digest in sorted(out["as_of"]["files"].items()):
            say(f"  {digest[:12]}  {path}")


@click.command("log")
@click.argument("store_name", metavar="[STORE]", required=False)
@click.option("--limit", type=click.IntRange(1, MAX_EVENTS), default=100, show_default=True, help=f"The newest N events (1 to {MAX_EVENTS:,}).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (see README).")
@click.pass_obj
def log_command(settings, store_name: str | None, limit: int, as_json: bool) -> None:  # noqa: ANN001
    """The event log of one store or of all: who did what, through which surface, when."""
    from daemon.service.review import event_log
    from daemon.service.workspace import resolve_store

    app = settings.app(read_only=True)
    store = resolve_store(app, store_name) if store_name else None
    events = event_log(app, store, limit)
    if as_json:
        emit_json(events)
        return
    for e in events:
        ref = f" proposal #{e['proposal_id']}" if e["proposal_id"] else f" pass #{e['pass_id']}" if e["pass_id"] else ""
        say(f"{e['at']} {e['store']}#{e['seq']} {e['type']}{ref} by {e['actor']} via {e['surface']}")


@click.command("verify")
@click.argument("store_name", metavar="[STORE]", required=False)
@click.option("--store", "store_path", metavar="PATH")
@click.option("--preset", metavar="NAME")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (see README); a list when no store is named.")
@click.pass_context
def verify_command(ctx: click.Context, store_name, store_path, preset, as_json: bool) -> None:  # noqa: ANN001
    """Check a store, or every store, is what dreamd last recorded and no write is unfinished (exit 8 if not)."""
    from daemon.core.errors import StateError
    from daemon.service.review import verify

    app = ctx.obj.app()
    named = bool(store_name or store_path)
    # Read first: a clean store is verified without a write, so also while another process
    # holds the write lock, on a read-only file or a full disk. When reading is not enough
    # (an unfinished write to recover, a schema to migrate) the database is opened to write.
    reader = app.reading()
    try:
        results = [verify(reader, store) for store in _stores(reader, store_name, store_path, preset)]
    except StateError:
        app.engine()  # migrated first: finding the stores reads it
        results = [verify(app, store) for store in _stores(app, store_name, store_path, preset)]
    finally:
        reader.close()
    if as_json:
        shown = [{"store": r.store, "clean": r.clean, "recorded_root": r.recorded_root, "current_root": r.current_root, "problems": r.problems} for r in results]
        emit_json(shown[0] if named else shown)
    else:
        for result in results:
            for problem in result.problems:
                say(problem)
            say(f"{result.store}: {'clean' if result.clean else 'NOT clean'}")
        if not results:
            click.echo("no stores yet")
    if not all(r.clean for r in results):
        ctx.exit(8)


COMMANDS = [history_command, log_command, verify_command]
