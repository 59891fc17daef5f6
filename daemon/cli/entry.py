"""The ``dreamd`` command's entry: a no-op ``pass`` is answered before click is imported
(cli/noop_pass.py); everything else is the whole CLI (cli/main.py)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    from daemon.cli.noop_pass import answer, parse

    line = parse(args)
    if line is not None and answer(line):
        sys.exit(0)
    from daemon.cli.main import main as whole

    whole(args)
