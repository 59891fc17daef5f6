"""The ``dreamd`` command: global options, the command groups, and the one error boundary.

Commands import the service lazily, so ``dreamd --help`` starts without SQLAlchemy.
Errors a user can meet print one line (``error[code]: what (what to do)``) and exit with the
error's documented code; ``--debug`` shows the traceback too.

Exit codes: 0 ok; 1 unexpected; 2 config or usage; 3 store unreadable; 4 state database
(locked, unreadable, corrupt, of another schema); 5 proposal (unknown id, an id too large
to exist among them; illegal state); 6 apply or revert refused (stale, conflict); 7 planner;
8 ``verify`` found differences; 10 a daemon worker was stopped (SIGTERM).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from daemon import __version__
from daemon.cli.render import one_line, reader_gone
from daemon.core.errors import DreamdError


class Settings:
    """Global options, resolved into an App on first use."""

    def __init__(self, config: str | None, db: str | None, debug: bool) -> None:
        self.config_path = config
        self.db = db
        self.debug = debug
        self._app: Any = None

    def app(self, *, read_only: bool = False) -> Any:
        """The App, built on first use; ``read_only`` for a command that never writes (it
        opens the database read-only and never creates or migrates it: see App)."""
        if self._app is None:
            from daemon.config import load_config
            from daemon.service.context import App, command_surface, resolve_db_url

            config = load_config(self.config_path)
            self._app = App(config=config, db_url=resolve_db_url(self.db, config), surface=command_surface(), read_only=read_only)
        return self._app


# command -> the module of daemon.cli that defines it (in its COMMANDS). A module is imported
# when one of its commands is asked for, so ``dreamd pass`` loads no review, export or eval code.
COMMAND_MODULES = {
    "pass": "passes", "proposals": "review", "show": "review", "accept": "review", "reject": "review",
    "unreject": "review", "unaccept": "review", "review": "interactive", "apply": "writes", "revert": "writes", "resolve": "writes",
    "export": "export", "history": "history", "log": "history", "verify": "history", "eval": "evaluate",
    "policy": "policy", "run": "run", "status": "run", "worker": "worker", "serve": "serve",
}  # fmt: skip


class _Group(click.Group):
    """The command group, loading each command's module on first use; a reader of stdout
    that stops reading (``| head``) ends the command quietly with exit 0, before click would
    call it an error (exit 1)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMAND_MODULES})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMAND_MODULES and cmd_name not in self.commands:
            for command in importlib.import_module(f"daemon.cli.{COMMAND_MODULES[cmd_name]}").COMMANDS:
                self.add_command(command)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            reader_gone()
            raise click.exceptions.Exit(0) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--config", "config", metavar="FILE", help="Config file (default: $DREAMD_CONFIG, else $XDG_CONFIG_HOME/dreamd/config.toml if it exists; none is fine).")
@click.option("--db", metavar="URL", help="State database URL (default: $DREAMD_DB, else a SQLite file in the XDG state dir).")
@click.option("--debug", is_flag=True, help="Show tracebacks and debug logs.")
@click.version_option(__version__, prog_name="dreamd")
@click.pass_context
def cli(ctx: click.Context, config: str | None, db: str | None, debug: bool) -> None:
    """dreamd keeps agent memory folders tidy through proposals you review.

    A pass finds duplicates, stale and expired notes and index drift, and proposes
    changes with diffs. Nothing changes on disk until a proposal is accepted and applied.
    """
    from daemon.logs import configure

    configure(debug)
    ctx.obj = Settings(config, db, debug)
    ctx.call_on_close(lambda: ctx.obj._app.close() if ctx.obj._app else None)


_NO_ARGS = getattr(click.exceptions, "NoArgsIsHelpError", ())


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; the only place errors become messages and exit codes."""
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args
    try:
        # Outside standalone mode click *returns* the code of ``ctx.exit(n)`` (verify's 8).
        code = cli.main(args=args, prog_name="dreamd", standalone_mode=False)
    except DreamdError as exc:
        if debug:
            raise
        click.echo(one_line(exc.one_line()), err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        if isinstance(exc, _NO_ARGS):  # bare ``dreamd``: the help is the answer
            exc.show()
            sys.exit(2)
        # one line, like every other error (click's own show() prints a usage block)
        command = getattr(getattr(exc, "ctx", None), "command_path", None) or "dreamd"
        click.echo(f"error[usage]: {exc.format_message()} (see '{command} --help')", err=True)
        sys.exit(2 if exc.exit_code == 2 else exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # a bug: say so in one line unless --debug
        if debug:
            raise
        click.echo(f"error[internal]: {exc.__class__.__name__}: {exc} (rerun with --debug for the traceback)", err=True)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
