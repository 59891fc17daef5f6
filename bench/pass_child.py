"""One cold first pass in a fresh process, timed by phase; prints one JSON object.

``bench_pass.py`` runs this as a subprocess so that the peak RSS (``ru_maxrss``) is the
pass's own and nothing is cached from an earlier pass. Phases are timed by wrapping the
functions ``run_pass`` calls, inside the one real pass (a wrapper costs about a
microsecond per call):

- db_open: ``open_engine`` (create the SQLite file, run the Alembic migrations),
- scan: ``glance`` (stat every file against the stat cache; a first pass reads and
  BLAKE3-hashes every file there) and ``read_whole`` (the view; reading again only files the
  cache vouched for); scan_store inside,
- detectors: ``run_detectors`` (parses frontmatter lazily), each detector's ``detect`` inside,
- proposals: ``make_proposals`` (build files, validate, one git diff per batch of 25,
  verify, change key), with ``build``, ``verify`` and ``key_of`` inside; ``layout``: the
  files written for git on the pass's thread; ``unified_diffs``: git's runs on their thread,
- reading: ``read_notes`` (every note's frontmatter parsed and body normalised);
  findings: ``findings`` (what the pass reports for a person, no proposal);
- db_snapshot, db_stats, db_proposals: the database's work (blobs and manifest, the stat
  cache, proposals and events); the rest is the pass's bookkeeping.

Usage: ``pass_child.py STORE DB_FILE [PROFILE_OUT]``; with PROFILE_OUT the pass runs under
cProfile (slower) and the stats are dumped there.
"""

from __future__ import annotations

import cProfile
import functools
import json
import resource
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import daemon.db.engine as engine_module  # noqa: E402
import daemon.planners.base as planners  # noqa: E402
import daemon.service.passes.run as passes  # noqa: E402
import daemon.service.passes.proposing as proposing  # noqa: E402
import daemon.service.passes.sinks as sinks  # noqa: E402
import daemon.service.workspace as workspace  # noqa: E402
import daemon.stores.port as port  # noqa: E402
from daemon.cli.entry import end_process  # noqa: E402
from daemon.config import Config, adhoc_store  # noqa: E402
from daemon.core.view import StoreView  # noqa: E402
from daemon.planners.base import DEFAULT_DETECTORS  # noqa: E402
from daemon.service.context import App  # noqa: E402
from generate import NOW  # noqa: E402


class Timers:
    """Wall time and call count per label, collected by wrapping functions in place."""

    def __init__(self) -> None:
        self.seconds: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()

    def wrap(self, owner: Any, attr: str, label: str) -> None:
        original = getattr(owner, attr)

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[label] += time.perf_counter() - start
                self.calls[label] += 1

        setattr(owner, attr, timed)


def instrument() -> Timers:
    timers = Timers()
    timers.wrap(engine_module, "open_engine", "db_open")
    timers.wrap(passes, "glance", "scan")
    timers.wrap(passes, "read_whole", "scan")
    timers.wrap(workspace, "scan_store", "scan_store")  # the glance's
    timers.wrap(port, "scan_store", "scan_store")  # read_whole's, when the glance did not read every file
    timers.wrap(planners, "run_detectors", "detectors")  # passes imports it from there at call time
    for detector in DEFAULT_DETECTORS:
        timers.wrap(type(detector), "detect", f"detector:{detector.name}")
    timers.wrap(StoreView, "references_in", "references")  # the reference graph, and the notes a build rewrites
    timers.wrap(proposing, "_prepare", "proposals")  # proposals are built one after another
    timers.wrap(proposing, "_finish", "proposals")
    timers.wrap(passes, "read_notes", "reading")  # every note's frontmatter and normalised body
    timers.wrap(passes, "findings", "findings")
    timers.wrap(passes, "remember_stats", "db_stats")  # the stat cache's rows
    timers.wrap(passes, "_record_snapshot", "db_snapshot")
    timers.wrap(sinks, "store_planned", "db_proposals")  # the recording sink stores each batch
    for name in ("build", "verify", "key_of"):
        timers.wrap(proposing, name, name)
    timers.wrap(proposing, "lay_out", "layout")  # a batch's files written for git, on the pass's thread
    timers.wrap(proposing, "_diffs", "unified_diffs")  # git's run and its output cut per proposal, on its thread
    return timers


def main() -> None:
    store_path, db_path = sys.argv[1], sys.argv[2]
    profile_out = sys.argv[3] if len(sys.argv) > 3 else None
    timers = instrument()
    store = adhoc_store(store_path, "deepcode")
    app = App(Config(), f"sqlite:///{db_path}", clock=lambda: NOW)
    baseline_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    profiler = cProfile.Profile() if profile_out else None
    start = time.perf_counter()
    if profiler:
        profiler.enable()
    report = passes.run_pass(app, store)
    if profiler:
        profiler.disable()
        profiler.dump_stats(profile_out)
    wall = time.perf_counter() - start
    app.close()
    result = {
        "wall_s": wall,
        "status": report.status,
        "stats": report.stats,
        "by_source": dict(Counter(o.planned.draft.source.split("@")[0] for o in report.outcomes)),
        "phases": {k: {"s": timers.seconds[k], "calls": timers.calls[k]} for k in timers.seconds},
        "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "baseline_rss_kb": baseline_kb,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
    end_process(0)  # the process ends as the dreamd command's does, without the interpreter's teardown
