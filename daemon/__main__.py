"""Entry point for ``python -m daemon``."""

from daemon.cli.entry import main

main()
