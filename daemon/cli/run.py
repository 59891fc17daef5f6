"""``dreamd run`` (the scheduled daemon) and ``dreamd status``."""

from __future__ import annotations

import click

from daemon.cli.render import emit_json, one_line, waiting_parts


@click.command("run")
@click.option("--stop-timeout", type=click.FloatRange(min=0), default=120.0, show_default=True, metavar="SECONDS", help="On SIGTERM, how long running passes may take before they are told to stop.")
@click.option("--max-parallel", type=click.IntRange(min=1), default=2, show_default=True, help="Passes (over different stores) at once.")
@click.option("--worker-passes", type=click.IntRange(min=1), default=50, show_default=True, help="Passes one worker process serves before a new one replaces it.")
@click.option("--worker-mb", type=click.IntRange(min=1), default=400, show_default=True, help="A worker whose peak memory passed this many MB is replaced after its pass.")
@click.option("--no-watch", is_flag=True, help="Do not watch the stores for changes (inotify): every pass stats every file.")
@click.pass_obj
def run_command(settings, stop_timeout: float, max_parallel: int, worker_passes: int, worker_mb: int, no_watch: bool) -> None:  # noqa: ANN001
    """Run passes on each configured store's schedule until SIGTERM.

    Each store's `every = "6h"` or `cron = "0 3 * * 0"` (crontab meaning, local time) sets
    when; passes run in worker processes, each serving up to --worker-passes passes (let go
    after a minute idle). Watches the stores (inotify): a pass over a store no event came
    for since its last pass makes no stat (see README). Speaks systemd's notify protocol (READY,
    STATUS, WATCHDOG, STOPPING). SIGHUP reloads the config; an invalid one is refused and
    the running one kept. SIGTERM lets running passes finish (up to --stop-timeout), stops
    them at a safe point after that, and exits 0.
    """
    from daemon.core.errors import ConfigError
    from daemon.logs import configure, route_library_logs
    from daemon.scheduler.runner import Daemon, RunOptions

    configure(settings.debug, info=True)
    route_library_logs("apscheduler")
    from daemon.config import config_file, default_config_file, load_config, no_config_loaded

    chosen = config_file(settings.config_path)
    if chosen is None:
        raise ConfigError(f"dreamd run needs a config file with [[stores]], and {no_config_loaded()}", hint=f"give --config FILE, set DREAMD_CONFIG, or write {default_config_file()}")
    load_config(chosen)  # refused here in one line (a FIFO, bad TOML) before the daemon starts
    options = RunOptions(chosen.resolve(), settings.db, settings.debug, stop_timeout, max_parallel=max_parallel, worker_passes=worker_passes, worker_mb=worker_mb, watch=not no_watch)
    Daemon(options).run()


@click.command("status")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (see README).")
@click.pass_obj
def status_command(settings, as_json: bool) -> None:  # noqa: ANN001
    """Every store (configured or used by path): schedule, next run, last pass, what waits and since when."""
    from daemon.core.errors import ConfigError
    from daemon.service.status import status

    app = settings.app(read_only=True)
    shown = status(app)
    if not shown["stores"]:
        from daemon.config import default_config_file, no_config_loaded

        configured = f"{no_config_loaded()}" if app.config.source is None else f"{app.config.source} has no [[stores]]"
        raise ConfigError(f"no stores yet: {configured}, and none was used by path", hint=f"add [[stores]] to {app.config.source or default_config_file()} (or give --config FILE), or run dreamd pass --store PATH --preset NAME")
    if as_json:
        emit_json(shown)
        return
    daemon = shown["daemon"]
    click.echo(one_line(f"state database: {shown['database']}"))
    click.echo(f"daemon: running, pid {daemon['pid']}, since {daemon['started_at'][:19]}" if daemon else "daemon: not running on this host")
    for row in shown["stores"]:
        click.echo(_status_text(row))


def _status_text(row: dict) -> str:
    from daemon.service.passes import coverage_left

    last = row["last_pass"]
    if last is None:
        last_text = "no pass yet"
    else:
        when = str(last["finished_at"] or last["started_at"])[:19]
        last_text = f"#{last['id']} {last['status']} {when} ({last['new']} new, {last['refused']} refused"
        last_text += f", {last['tokens']} tokens" if last["tokens"] else ""
        last_text += f", ${last['cost']:.4f}" if last["cost"] else ""
        last_text += ")" + (f": {last['error']}" if last.get("error") else "")
        left = coverage_left(last.get("coverage"))
        last_text += f"; model: {left}" if left and not last.get("error") else ""
    if row["schedule"] is None:
        next_text = "not scheduled (used by path; the daemon passes over configured stores)"
    else:
        next_text = f"{row['schedule']}; " + ("passing now" if row["running"] else (f"next {row['next_run'][:19]}" if row["next_run"] else "next: (daemon not running)"))
    return one_line(f"{row['store']}: {next_text}; last {last_text}; {_waiting_text(row)}")


def _waiting_text(row: dict) -> str:
    """How many proposals wait for a person (to review or to apply), and since when."""
    if not row["waiting"]:
        return "nothing waits"
    pending, accepted = row["proposals"].get("pending", 0), row["proposals"].get("accepted", 0)
    return f"{waiting_parts(pending, accepted)}, waiting since {row['waiting_since'][:19]}"


COMMANDS = [run_command, status_command]
