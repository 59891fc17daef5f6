"""Folders where many proposals of one pass touch the same notes, and a run that accepts them all.

Each folder is shaped like an agent's real one and written for these tests: an index with
sections where the agent has one, notes that several others refer to, several merges and a
supersession whose link rewrites land in the same note (often on the same line), a note past
its date, and notes the index does not list yet, so that one pass proposes many changes that
edit the same index and the same notes. ``everything`` accepts every proposal of one pass
and applies them in one ``apply``, then says what went wrong: what the agent reads
(``harness.judge``), any index entry outside the section its reviewed diff showed, and what a
second pass over the applied store proposes (it must converge: nothing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from daemon.service.apply.applying import apply
from daemon.service.proposals import ProposalView, decide_all

from .fixtures import Folder, _fm
from .harness import Session, declared, judge
from .oracles import store_bytes

# Claude Code -------------------------------------------------------------------------

RUNBOOK = """Pipelines run on Airflow 2; a failed task is cleared from the grid view, never re-run by hand
from a shell. Backfills go through the backfill DAG with a date range, one day per run, and the
on-call engineer posts the range in #data-ops before starting one.
"""

ALERTS = """Alerts page through Opsgenie. A freshness alert fires when a table is more than two hours
behind its source; a volume alert when a day's rows fall under half of the weekly median. Each
alert links its runbook section, and the on-call engineer acknowledges it within fifteen minutes.
"""


def claude_code() -> Folder:
    """``memory/`` of a data-platform project: four typed sections, three merges and a
    supersession whose ``[[name]]`` rewrites meet in two notes (one line holds three), a note
    past its date that ends the Project section, and three notes not listed yet, one per
    section, so the reindex adds an entry at the end of sections other applies shortened."""
    def note(name: str, kind: str, description: str, text: str, **extra: object) -> str:
        return _fm(name=name, description=description, **extra, metadata={"type": kind}) + text

    notes = {
        "user_role.md": note("user-role", "user", "runs the data platform team", "The user runs the data platform team and owns the warehouse.\n"),
        "user_prefs.md": note("user-prefs", "user", "how the user likes answers", "Terse answers with the command first.\n"
                              "They point newcomers at [[pipeline-runbook-copy]], [[warehouse-old]] and [[alerts-copy]].\n"),
        "feedback_sql.md": note("sql-style", "feedback", "how SQL is written here", "Lowercase keywords, one column a line, CTEs over subqueries.\n"),
        "feedback_sql_again.md": note("sql-style-again", "feedback", "SQL style (saved twice)", "Lowercase keywords, one column a line, CTEs over subqueries.\n"),
        "feedback_reviews.md": note("review-feedback", "feedback", "what reviews ask for", "Keep changes under 400 lines.\n"
                                    "Before a backfill read [[pipeline-runbook-copy]]; for table moves [[warehouse-old]].\n"),
        "project_pipeline_runbook.md": note("pipeline-runbook", "project", "how pipelines are run and backfilled", RUNBOOK),
        "project_pipeline_runbook_copy.md": note("pipeline-runbook-copy", "project", "pipeline notes (saved twice)", RUNBOOK),
        "project_warehouse.md": note("warehouse", "project", "the warehouse since the move", "Snowflake since January; dbt builds every hour.\n",
                                     updated_at="2025-02-10", supersedes="project_warehouse_old.md"),
        "project_warehouse_old.md": note("warehouse-old", "project", "the old warehouse", "Postgres replica with nightly dumps.\n", updated_at="2024-11-02"),
        "project_sprint.md": note("sprint", "project", "where sprint 9 stands", "Sprint 9: the dbt migration is half done.\n", expires="2025-02-01"),
        "reference_alerts.md": note("alerts", "reference", "how data alerts page", ALERTS + "Silence known outages in the ticket.\n"),
        "reference_alerts_copy.md": note("alerts-copy", "reference", "alerts (older copy)", ALERTS),
        "reference_schema.md": note("schema", "reference", "where the schema docs live", "dbt docs are served at /docs; see [[pipeline-runbook]] and [[alerts]].\n"),
        # live notes the index does not list yet, one for each of three sections
        "feedback_naming.md": note("naming", "feedback", "how tables are named", "Tables are snake_case nouns; staging tables start with stg_.\n"),
        "project_backfill_2025.md": note("backfill-2025", "project", "the 2025 backfill plan", "Backfill 2023 and 2024 in monthly chunks from March.\n"),
        "reference_dashboards.md": note("dashboards", "reference", "the boards worth opening", "Freshness: board `data-freshness`; costs: `warehouse-spend`.\n"),
        "team/oncall.md": note("oncall", "reference", "who is on call for data", "The data rota is in Opsgenie under `data-platform`; see [[pipeline-runbook]].\n"),
    }
    listed = {
        "User": ["- [User role](user_role.md) — runs the data platform team", "- [Prefs](user_prefs.md) — how the user likes answers"],
        "Feedback": ["- [SQL style](feedback_sql.md) — how SQL is written", "- [SQL style again](feedback_sql_again.md) — saved twice",
                     "- [Reviews](feedback_reviews.md) — what reviews ask for"],
        "Project": ["- [Pipeline runbook](project_pipeline_runbook.md) — runs and backfills", "- [Runbook copy](project_pipeline_runbook_copy.md) — saved twice",
                    "- [Warehouse](project_warehouse.md) — since the move", "- [Old warehouse](project_warehouse_old.md) — before the move",
                    "- [Sprint](project_sprint.md) — where sprint 9 stands"],
        "Reference": ["- [Alerts](reference_alerts.md) — how data alerts page", "- [Alerts copy](reference_alerts_copy.md) — older copy",
                      "- [Schema](reference_schema.md) — schema docs", "- [On call](team/oncall.md) — the data rota"],
    }  # fmt: skip
    lines = ["# Memory", ""]
    for number, (section, entries) in enumerate(listed.items()):
        lines += ([""] if number else []) + [f"## {section}", ""] + entries
    notes["MEMORY.md"] = "\n".join(lines) + "\n"
    return Folder("home/.claude/projects/-srv-data/memory", notes, {"5f0c.jsonl": '{"type":"user"}\n'})


# Serena ------------------------------------------------------------------------------

LOGIN = """# Login

The web client posts credentials to `/session` and gets an HTTP-only cookie. Five failed logins
within ten minutes lock the account for fifteen minutes, and the user sees the lockout page.
"""

SESSIONS = """# Sessions

Sessions are rows keyed by a random id, stored hashed. The gateway caches a row for thirty
seconds, so a revoked session can pass for half a minute after it was revoked.
"""


COMMANDS = """# Suggested commands

- `make test` runs the unit tests with the race detector and the coverage report.
- `make lint` runs golangci-lint and the SQL linter with the repository's configuration.
- `make migrate` applies the database migrations to the local Postgres container.
"""


def serena() -> Folder:
    """``.serena/memories`` of a shop backend: ``core`` refers, two to a line, to notes that
    three merges and a supersession retire, and two more notes refer to them too."""
    notes = {
        "memory_maintenance.md": "# Memory maintenance\n\nRead `mem:core` first; one topic per memory.\n",
        "core.md": (
            "# Core\n\nA shop backend in Go.\n\n"
            "- Auth: `mem:auth/login_copy` for the flow, `mem:auth/session_notes` for sessions.\n"
            "- Releasing: `mem:deploy/steps_v1`; commands in `mem:suggested_commands_old`.\n"
            "- Style: `mem:conventions`.\n"
        ),
        "conventions.md": "# Conventions\n\nWrap errors with `%w`. Auth code: `mem:auth/login_copy`. Releases: `mem:deploy/steps_v1`.\n",
        "onboarding.md": "# Onboarding\n\nStart with `mem:auth/login` and `mem:auth/session`, then `mem:suggested_commands`.\n",
        "api.md": "# API\n\nHandlers check the session (`mem:auth/session`) set at login (`mem:auth/login`).\n",
        "tests.md": "# Tests\n\nRun them with the commands in `mem:suggested_commands` and `mem:suggested_commands_old`.\n",
        "auth/login.md": LOGIN,
        "auth/login_copy.md": LOGIN,
        "auth/session.md": SESSIONS + "Logging out deletes the row.\n",
        "auth/session_notes.md": SESSIONS,
        "suggested_commands.md": COMMANDS + "- `make dev` starts everything.\n",
        "suggested_commands_old.md": COMMANDS,
        "deploy/steps_v1.md": _fm(updated_at="2024-10-01") + "# Deploy\n\nBuild the image by hand and bump the tag in the Helm values.\n",
        "deploy/steps_v2.md": _fm(updated_at="2025-02-01", supersedes="deploy/steps_v1.md") + "# Deploy\n\nMerging to main builds the image; Argo CD rolls it out.\n",
        "status/sprint_4.md": _fm(updated_at="2025-01-02", ttl_days=14) + "# Sprint 4\n\nCheckout rewrite in progress.\n",
    }
    return Folder("shop/.serena/memories", notes, {"project.yml": "project_name: shop\n"})


# DeepCode ----------------------------------------------------------------------------

BUILD = """# Build

`make build` compiles every service with the pinned toolchain; `make image` wraps them into one image
each. The remote cache lives in the build-cache bucket; a clean build without it takes four minutes.
"""

TESTING = """# Testing

Unit tests run with `make test` and need no network. Contract tests run on main only, since the
payment sandbox limits calls per day. Browser tests run through Playwright; two are known to flake.
"""


def deepcode() -> Folder:
    """``.deepcode/memory``: flat notes, one index list; ``architecture.md`` links, on one line,
    three notes that two merges and a supersession retire (three other notes link the notes
    that survive, so those are the ones kept)."""
    notes = {
        "architecture.md": "# Architecture\n\nThree services share one database. Read [build](build-copy.md), [tests](testing-notes.md) and [ports](ports-old.md).\n",
        "onboarding.md": "# Onboarding\n\nFirst [build](build-copy.md), then [tests](testing-notes.md).\n",
        "build.md": _fm(updated_at="2025-02-01") + BUILD,
        "build-copy.md": BUILD,
        "testing.md": _fm(updated_at="2025-02-05") + TESTING + "Nightly runs use the race detector.\n",
        "testing-notes.md": TESTING,
        "ports.md": _fm(updated_at="2025-02-10", supersedes="ports-old.md") + "# Ports\n\napi 8080, web 5173.\n",
        "ports-old.md": _fm(updated_at="2024-11-30") + "# Old ports\n\napi 3000, web 3001.\n",
        "sprint.md": _fm(updated_at="2025-01-10", ttl_days=21) + "# Sprint\n\nWorker rewrite half done.\n",
        "ci.md": "# CI\n\nCI runs [build](build.md) and [tests](testing.md) on every push.\n",
        "release.md": "# Release\n\nA release needs a green [build](build.md) and [tests](testing.md).\n",
        "dev.md": "# Dev\n\nLocally: [build](build.md), [tests](testing.md).\n",
        # live notes MEMORY.md does not list yet
        "queue.md": "# Queue\n\nJobs are rows claimed with SKIP LOCKED.\n",
        "logging.md": "# Logging\n\nJSON lines to stdout, shipped to Loki.\n",
    }
    listed = ["architecture.md", "onboarding.md", "ci.md", "release.md", "dev.md", "build.md", "build-copy.md", "testing.md", "testing-notes.md", "ports.md", "ports-old.md", "sprint.md"]
    notes["MEMORY.md"] = "# Memory\n\n" + "".join(f"- [{p.removesuffix('.md')}]({p}) — notes on {p.removesuffix('.md')}\n" for p in listed)
    return Folder("work/.deepcode/memory", notes, {"settings.json": "{}\n"})


# Generic (a frontmatter-reading tool) ------------------------------------------------


def generic() -> Folder:
    """A folder of notes with frontmatter and an ``index.md`` (the store's ``index_path``):
    retired notes stay in place, marked; two merges and a supersession rewrite links in the
    same notes, markdown and ``[[name]]`` alike."""
    def note(name: str, text: str, **extra: object) -> str:
        return _fm(name=name, **extra) + text

    notes = {
        "overview.md": note("overview", "# Overview\n\nSee [setup](setup-copy.md) and [[release-old]]; style in [style](style-again.md).\n"),
        "howto.md": note("howto", "# How to\n\nFollow [setup](setup-copy.md) first, then [[release-old]].\n"),
        "setup.md": note("setup", "# Setup\n\nInstall uv, run `uv sync`, then `uv run pytest` to check.\n", updated_at="2025-02-01"),
        "setup-copy.md": note("setup-copy", "# Setup\n\nInstall uv, run `uv sync`, then `uv run pytest` to check.\n"),
        "style.md": note("style", "# Style\n\nRuff formats; line length 120.\n", updated_at="2025-02-01"),
        "style-again.md": note("style-again", "# Style\n\nRuff formats; line length 120.\n"),
        "release.md": note("release", "# Release\n\nTag, then the workflow publishes.\n", updated_at="2025-02-10", supersedes="release-old.md"),
        "release-old.md": note("release-old", "# Release\n\nBuild a wheel and upload it by hand.\n", updated_at="2024-12-01"),
        "contributing.md": note("contributing", "# Contributing\n\n[Setup](setup.md) first; follow [style](style.md).\n"),
        "faq.md": note("faq", "# FAQ\n\nTests fail? Redo [setup](setup.md). Lint fails? Read [[style]].\n"),
        "ci.md": note("ci", "# CI\n\nCI repeats [setup](setup.md) and checks [style](style.md).\n"),
        "ideas.md": note("ideas", "# Ideas\n\nA plugin system.\n"),
    }
    listed = ["overview.md", "howto.md", "contributing.md", "faq.md", "ci.md", "setup.md", "setup-copy.md", "style.md", "style-again.md", "release.md", "release-old.md"]
    notes["index.md"] = "# Notes\n\n" + "".join(f"- [{p.removesuffix('.md')}]({p})\n" for p in listed)
    return Folder("proj/notes", notes, {"README.md": "# proj\n"})


# Accepting everything ----------------------------------------------------------------


@dataclass
class Everything:
    """One pass accepted whole and applied in one ``apply``, and what went wrong."""

    proposals: list[ProposalView]
    states: dict[int, str]
    problems: list[str] = field(default_factory=list)
    second: list[ProposalView] = field(default_factory=list)  # what the next pass proposed


def everything(s: Session) -> Everything:
    """Accept every proposal of one pass, apply them in one ``apply``, judge it, pass again."""
    before, bytes_before = s.reading(), store_bytes(s.oracle, s.root)
    proposals = s.pending_after_pass()
    decide_all(s.app, [p.id for p in proposals], "accept")
    s.clock.advance(seconds=1)
    results = apply(s.app, store_name=s.store.name)
    done = Everything(proposals, {r.proposal_id: r.state for r in results})
    said = frozenset().union(*(declared(p.reads) for p in proposals))
    after = s.reading()
    done.problems, _ = judge(s.oracle, before, after, kind="everything", allowed_unresolved=s.allowed_unresolved, said=said)
    done.problems += s.outside_problems() + s.archived_in_sight(bytes_before)
    if s.oracle.index_path and before.index_text is not None and after.index_text is not None:
        done.problems += misplaced(s.oracle.index_path, before.index_text, after.index_text, proposals)
    done.second = s.pending_after_pass()
    return done


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_TARGET = re.compile(r"\]\(([^()\s]+\.md)\)")


def reviewed(path: str, base: str, diff: str) -> list[tuple[str, str]]:
    """(added line, the heading it sits under in the proposal's result) for each line the
    diff adds to ``path``: the result rebuilt from ``base`` and the diff's hunks, read here
    apart from dreamd's own diff code."""
    lines, out, added, pos, inside = base.split("\n"), [], [], 0, False
    for line in diff.split("\n"):
        if line.startswith("diff --git "):
            inside = line.endswith(f" b/{path}")
            continue
        hunk = _HUNK.match(line) if inside else None
        if hunk:
            start = int(hunk.group(1)) - (0 if hunk.group(2) == "0" else 1)
            out += lines[pos:start]
            pos = start
        elif inside and line[:1] in (" ", "-", "+") and not line.startswith(("--- ", "+++ ")):
            if line[0] in " -":
                pos += 1
            if line[0] in " +":
                out.append(line[1:])
                if line[0] == "+":
                    added.append(len(out) - 1)
    out += lines[pos:]
    return [(out[i], _heading_above(out, i)) for i in added]


def _heading_above(lines: list[str], i: int) -> str:
    return next((lines[j].strip() for j in range(i, -1, -1) if lines[j].startswith("#")), "")


def misplaced(path: str, base: str, final: str, proposals: list[ProposalView]) -> list[str]:
    """Index entries a proposal added that sit at the end under another heading than its
    reviewed diff showed them under, or that the index lists more than once."""
    lines = final.split("\n")
    where: dict[str, list[str]] = {}
    for i, line in enumerate(lines):
        for target in _TARGET.findall(line):
            where.setdefault(target, []).append(_heading_above(lines, i))
    problems = [f"{path} lists {t} {len(h)} times, under {h}" for t, h in where.items() if len(h) > 1]
    for p in proposals:
        for line, heading in reviewed(path, base, p.diff):
            for target in _TARGET.findall(line):
                if target in where and where[target][0] != heading:
                    problems.append(f"#{p.id} {p.title}: its entry for {target} sits under {where[target][0]!r}, its diff showed it under {heading!r}")
    return problems
