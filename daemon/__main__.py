"""Entry point for ``python -m daemon``."""

from daemon.cli.main import main

main()
