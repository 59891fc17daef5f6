"""``dreamd worker``: the daemon's pass worker (internal; see daemon/scheduler/worker.py).

``worker --serve`` serves passes from JSON lines on stdin until its input ends, it has
served ``--max-passes`` (passes skipped as unchanged are not counted), its peak memory passed ``--max-mb``, or it is told to stop
(SIGTERM: the pass stops at its next safe point, its result line says so, exit 10).
``--check-database`` and ``--close-dead`` are the daemon's short database-only errands
(config text on stdin).
"""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path
from typing import Any

import click


@click.command("worker", hidden=True)
@click.option("--serve", is_flag=True, help="Serve passes from JSON lines on stdin.")
@click.option("--max-passes", type=click.IntRange(min=1), default=50, help="With --serve: exit after this many passes (skipped ones not counted).")
@click.option("--max-mb", type=click.IntRange(min=1), default=400, help="With --serve: exit after a pass once peak RSS passed this.")
@click.option("--check-database", is_flag=True, help="Only open (and migrate) the state database.")
@click.option("--close-dead", metavar="WHY", help="Only close the passes of dead workers as failed, saying why.")
@click.pass_obj
def worker_command(settings, serve: bool, max_passes: int, max_mb: int, check_database: bool, close_dead: str | None) -> None:  # noqa: ANN001
    """Internal: passes for ``dreamd run``."""
    from daemon.logs import configure
    from daemon.service.apply import install

    configure(settings.debug, info=True)
    install()  # SIGTERM from the daemon: stop at the next safe point
    if serve:
        _serve(settings, max_passes, max_mb)
        return
    app = settings._app = _app(settings, sys.stdin.read())
    if close_dead:
        from daemon.service.passes import close_dead_passes

        close_dead_passes(app, why=close_dead)
    elif check_database:
        app.engine()
    else:
        raise click.UsageError("give --serve, --check-database or --close-dead WHY")


def _serve(settings, max_passes: int, max_mb: int) -> None:  # noqa: ANN001
    """One pass per request line until the input ends or this worker has done its share.
    The App is kept while the config text stays the same (one engine, one connection pool);
    the daemon sends the text once, and null while it has not changed."""
    app, text, served = None, None, 0
    try:
        for line in sys.stdin:
            request = json.loads(line)
            click.echo(_json_line({"started": request["store"]}))
            if request["config"] is not None and request["config"] != text:  # null: the text it sent before
                if app is not None:
                    app.close()
                app, text = _app(settings, request["config"]), request["config"]
            result, stopped = _one_pass(app, request["store"], request.get("unchanged"))
            served += result["status"] != "skipped"  # a skip holds next to no memory: only passes that planned wear a worker out
            last = stopped is not None or served >= max_passes or _peak_mb() >= max_mb
            click.echo(_json_line({**result, "last": last}))
            if stopped is not None:
                raise stopped
            if last:
                return
    finally:
        if app is not None:
            app.close()


def _app(settings, config_text: str) -> Any:  # noqa: ANN001
    from daemon.config import config_from_text
    from daemon.service.context import App, resolve_db_url

    config = config_from_text(config_text, Path(settings.config_path or "config.toml"))
    return App(config=config, db_url=resolve_db_url(settings.db, config), surface="daemon", actor="daemon")


def _one_pass(app: Any, store_name: str, unchanged: object = None) -> tuple[dict[str, Any], Exception | None]:
    """A pass's result line, and the StoppedError when the worker was told to stop during it.
    ``unchanged``: what the daemon's watches say the store still is; the line's ``seen`` is
    what this pass saw, for the daemon to hand back while its watches see no change."""
    from daemon.core.errors import DreamdError, StoppedError
    from daemon.service.passes import Unchanged, pass_over, result_line

    try:
        report = pass_over(app, app.config.store(store_name), unchanged=Unchanged.from_json(unchanged) if unchanged else None)
    except DreamdError as exc:
        failed = {"store": store_name, "status": "failed", "error": exc.one_line(), "code": exc.code, "exit": exc.exit_code}
        return failed, exc if isinstance(exc, StoppedError) else None
    return result_line(report), None


def _peak_mb() -> float:
    """This worker's own peak RSS: the kernel's high-water mark of its memory map (VmHWM),
    which starts anew at exec. getrusage's ru_maxrss does not: it carries over the peak of
    the process the worker was forked from."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux


def _json_line(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


COMMANDS = [worker_command]
