"""A person writing to a note while dreamd replaces it, for longer than the test suite runs it:
the race of ``tests/stores/test_racing_writes.py`` (a writer process triggered by dreamd's temp
file, appending numbered lines by path, through a held descriptor, or both).

    .venv/bin/python bench/bench_races.py [--rounds 2000] [--how path held mixed]

Prints, per kind of writer, the rounds run, the lines written, where they ended (the note, a
caught file) and how many were lost or out of order (both must be 0), and the time taken.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[1] / "tests" / "stores" / "test_racing_writes.py"


def harness():  # noqa: ANN201
    spec = importlib.util.spec_from_file_location("racing_writes", HARNESS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--how", nargs="+", default=["path", "held", "mixed"], choices=["path", "held", "mixed"])
    options = parser.parse_args()
    racing = harness()
    failed = False
    for how in options.how:
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            counts = racing.race(Path(tmp) / "store", how, options.rounds)
            elapsed = time.perf_counter() - started
        print(f"{how}: {dict(sorted(counts.items()))} in {elapsed:.1f} s", flush=True)
        failed |= bool(counts["lost"] or counts["out of order"] or counts["temp files left"])
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
