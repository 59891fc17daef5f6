"""``dreamd serve``: review and decide pending proposals in a browser, on this machine."""

from __future__ import annotations

import click

LOOPBACK = ("127.0.0.1", "::1", "localhost")
WEB_MODULES = ("starlette", "uvicorn")  # the `serve` extra


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on; only this machine can reach the default.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True, help="Port to listen on; 0 picks a free one.")
@click.pass_obj
def serve_command(settings, host: str, port: int) -> None:  # noqa: ANN001
    """Serve the review pages: pending proposals, their diffs, accept, reject, undo and apply.

    Prints the URL to open, with an access token in it (every request without that token
    or the cookie it sets is refused). Decisions and applies bind to the hashes the page
    showed and are recorded as human:USER through the surface "web". Keys: j/k next and
    previous, a accept, r reject, u undo, ? help. Stops on Ctrl-C or SIGTERM.
    """
    from daemon.core.errors import ConfigError

    try:
        from daemon.service.review import serve
    except ImportError as exc:
        missing = (exc.name or "").split(".")[0]
        if missing not in WEB_MODULES:
            raise
        raise ConfigError(f"dreamd serve needs {missing}, which is not installed", hint="pip install 'dreamd[serve]'") from None
    if host not in LOOPBACK:
        click.echo(f"dreamd serve: {host} can be reached from other machines; anyone with the URL can decide proposals", err=True)
    app = settings.app()
    app.surface = "web"
    serve(app, host, port, lambda url: click.echo(f"dreamd serve: open {url}"))


COMMANDS = [serve_command]
