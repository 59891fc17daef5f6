"""Memory folders shaped like each agent's real ones, written for these tests.

Each builder returns ``Folder``: the files of the notes root and the files around it in
its parent (the agent's own config, sessions, source code), which dreamd must never touch.
Every folder holds what makes dreamd propose something: an exact copy, a near copy, a
note past its TTL or ``expires``, a ``supersedes`` declaration, notes missing from the
index, references in the agent's own syntax to notes that will be retired, and, where the
agent has one, an index close to its load limit. The dates are before the test clock's
start (2025-03-01), so the expiries are due at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Folder:
    notes_at: str  # where the notes root sits under the test's tmp_path
    notes: dict[str, str]
    around: dict[str, str] = field(default_factory=dict)  # files beside the notes root, in its parent


def _fm(**keys: object) -> str:
    """A frontmatter block; values written as given (strings are written bare)."""
    lines = ["---"]
    for key, value in keys.items():
        if isinstance(value, dict):
            lines.append(f"{key}:")
            lines += [f"  {k}: {v}" for k, v in value.items()]
        else:
            lines.append(f"{key}: {value}")
    return "\n".join(lines + ["---", ""])


# Serena ------------------------------------------------------------------------------

LOGIN = """# Login flow

The web client posts credentials to `/session` and gets back an HTTP-only cookie named `sid`.
The cookie lives for twelve hours and is refreshed on every request that reaches the API gateway.
Failed logins are counted per account in Redis; after five failures within ten minutes the
account is locked for fifteen minutes and the user sees the generic lockout page.
"""

SESSION = """# Sessions

Sessions are rows of the `sessions` table keyed by a random 32-byte id, stored hashed with SHA-256.
The gateway looks the id up on every request and caches the row for thirty seconds in process
memory, so a revoked session can still pass for up to half a minute after it was revoked.
Logging out deletes the row and clears the cookie; an admin can revoke every session of a user
from the support console, which also writes an audit event with the admin's name.
"""

SESSION_EXTRA = "Expired rows are swept nightly by the `session-reaper` job at 03:00 UTC.\n"


def serena() -> Folder:
    """``.serena/memories`` of a web project, onboarded, with topics in folders."""
    notes = {
        "memory_maintenance.md": (
            "# Memory maintenance\n\nRead `mem:core` first: it is the map of every other memory.\n"
            "Keep one topic per memory, name folders after the part of the code they describe, and\n"
            "refer to other memories as `mem:NAME` inside backticks so renames can follow them.\n"
        ),
        "core.md": (
            "# Core\n\nA shop backend in Go with a React front end; this memory is the root of the graph.\n\n"
            "- Authentication: `mem:auth/login` (the flow) and `mem:auth/login_copy` (older notes of it),\n"
            "  sessions in `mem:auth/session`, the removed token cache in `mem:auth/token_cache`.\n"
            "- Releasing: `mem:deploy/steps`; commands in `mem:suggested_commands`.\n"
            "- Where we are: `mem:status/sprint_12`.\n"
            "- Style: `mem:conventions`; stack: `mem:tech_stack`.\n"
        ),
        "suggested_commands.md": (
            "# Suggested commands\n\n- `make test` runs the unit tests with the race detector.\n"
            "- `make lint` runs golangci-lint with the repository's config.\n- `make dev` starts the API and a Postgres container.\n"
        ),
        "conventions.md": (
            "# Conventions\n\nErrors are wrapped with `fmt.Errorf(\"...: %w\", err)` and never logged twice.\n"
            "Handlers take a context first. The old CI notes in `mem:notes/old_ci` are kept for history.\n"
        ),
        "tech_stack.md": (
            "# Tech stack\n\nGo 1.22, chi for routing, pgx for Postgres, React 18 with Vite.\n"
            "Infrastructure was once described in `mem:infra/terraform`, which nobody wrote.\n"
        ),
        "auth/login.md": _fm(updated_at="2025-02-01") + LOGIN + "\nSessions themselves: `mem:auth/session`.\n",
        "auth/login_copy.md": LOGIN + "\nSessions themselves: `mem:auth/session`.\n",
        "auth/session.md": _fm(updated_at="2025-02-10") + SESSION + "\nHow a session starts: `mem:auth/login`.\n",
        "auth/session_notes.md": SESSION + SESSION_EXTRA + "\nHow a session starts: `mem:auth/login`.\n",
        "status/sprint_12.md": (
            _fm(updated_at="2025-01-20", ttl_days=14)
            + "# Sprint 12\n\nIn progress: the checkout rewrite and the new coupon rules. Blocked on the payment sandbox.\n"
        ),
        "deploy/steps.md": (
            _fm(updated_at="2024-11-02")
            + "# Deploy steps\n\nBuild the image with `make image`, push it, then bump the tag in the Helm values by hand.\n"
        ),
        "deploy/steps_v2.md": (
            _fm(updated_at="2025-02-12", supersedes="deploy/steps.md")
            + "# Deploy steps (v2)\n\nMerging to main builds and pushes the image; Argo CD rolls it out. Rollback: revert the tag commit.\n"
        ),
        "notes/old_ci.md": (
            _fm(status="superseded", superseded_by="suggested_commands.md", valid_to="2024-12-01")
            + "# Old CI\n\nCI ran on Jenkins with a shell script per job; `./ci/test.sh` was the entry point.\n"
        ),
        # an archive an earlier dreamd kept inside the memories folder, which Serena lists
        ".dreamd-archive/2024/old_setup.md": (
            _fm(status="superseded", superseded_by="tech_stack.md", valid_to="2024-10-01")
            + "# Old setup\n\nGo 1.19 and gorilla/mux; the front end was server-rendered templates.\n"
        ),
        ".dreamd-archive/auth/token_cache.md": (
            _fm(status="superseded", superseded_by="auth/session.md", valid_to="2024-12-15")
            + "# Token cache\n\nAccess tokens were cached in memcached for five minutes; removed with the move to sessions.\n"
        ),
    }
    around = {
        "project.yml": "project_name: shop\nlanguages:\n- go\nignored_paths: []\n",
        ".gitignore": "/cache\n",
        "cache/go/document_symbols.pkl": "not really a pickle\n",
    }
    return Folder("shop/.serena/memories", notes, around)


# Claude Code -------------------------------------------------------------------------

_RESOURCES = (
    "orders", "invoices", "carts", "coupons", "refunds", "shipments", "customers", "addresses", "products", "prices",
    "stock", "warehouses", "returns", "reviews", "wishlists", "payments", "payouts", "taxes", "vouchers", "bundles",
)  # fmt: skip
_MODULES = ("billing", "catalog", "checkout", "fulfilment", "accounts", "pricing", "storefront", "ledger", "support", "search", "ops")
_PARAMS = ("cursor", "page", "offset", "since", "after_id", "marker", "token")
_VERBS = ("GET", "POST", "PUT", "PATCH", "DELETE")
GENERATED = 173  # reference notes, so that MEMORY.md is 198 lines


def _reference_note(i: int) -> tuple[str, str, str]:
    """(path, text, index line) of the i-th generated reference note; every one distinct."""
    res, mod = _RESOURCES[i % len(_RESOURCES)], _MODULES[(i * 7) % len(_MODULES)]
    param, verb = _PARAMS[(i * 3) % len(_PARAMS)], _VERBS[(i * 5) % len(_VERBS)]
    path = f"reference_{res}_{i:03d}.md"
    name = f"{res}-endpoint-{i:03d}"
    hook = f"{verb} /api/{res}/{i} in {mod}, paged by {param}"
    text = (
        _fm(name=name, description=hook, metadata={"type": "reference"})
        + f"`{verb} /api/{res}/{i}` is handled in `{mod}/{res}_{i}.py` and answers within {40 + i * 3} ms.\n"
        f"It pages by `{param}` ({10 + i % 40} rows a page); its fixture is `tests/data/{res}_{i}.json`.\n"
    )
    return path, text, f"- [{res.title()} endpoint {i}]({path}) — {hook}"


DEPLOY = """Deploys go out from the `release` branch only. Tag the commit `vYYYY.MM.DD`, wait for the
pipeline to push the image, then run `make promote ENV=staging` and check the smoke dashboard
for ten minutes before promoting to production the same way. Never promote on a Friday after
noon, and post the tag in the #releases channel with the changelog link.
"""

REVIEW = """Every change needs one approval from a code owner of each folder it touches. Reviewers
answer within one working day; a change waiting longer may be merged by the author's lead.
Comments marked nit are optional. Squash on merge, keep the pull request title as the commit
subject, and link the ticket in the body so the release notes can find it later.
"""


def claude_code() -> Folder:
    """``~/.claude/projects/<project>/memory`` with team notes, links and a 198-line MEMORY.md."""
    notes: dict[str, str] = {
        "user_role.md": _fm(name="user-role", description="the user leads the payments team", type="user")
        + "The user leads the payments team and reviews every change to `billing/`.\n",
        "feedback_testing.md": _fm(name="testing-feedback", description="run the focused tests first", metadata={"type": "feedback"})
        + "Run the focused test file before the whole suite.\n\n**Why:** the suite takes eleven minutes.\n"
        "**How to apply:** see [[deploy-steps]] and [[deploy-steps-copy]] before a release, and [[release-plan]] for dates.\n",
        "deploy_steps.md": _fm(name="deploy-steps", description="how a release is promoted", metadata={"type": "project"}) + DEPLOY,
        "deploy_steps_copy.md": _fm(name="deploy-steps-copy", description="deploy notes (saved twice)", metadata={"type": "project"}) + DEPLOY,
        "api_errors.md": _fm(name="api-errors", description="the error envelope of the public API", metadata={"type": "reference"})
        + "Errors come back as `{\"error\": {\"code\": ..., \"message\": ...}}` with a stable code per failure, documented in\n"
        "`docs/errors.md`. Codes are upper snake case, never reused, and a retired code keeps its row in the table with\n"
        "the release that retired it. Clients must not parse the message text, which support may reword at any time.\n",
        "api_error_codes.md": _fm(name="api-error-codes", description="error codes", metadata={"type": "reference"})
        + "Errors come back as `{\"error\": {\"code\": ..., \"message\": ...}}` with a stable code per failure, documented in\n"
        "`docs/errors.md`. Codes are upper snake case, never reused, and a retired code keeps its row in the table with\n"
        "the release that retired it. Clients must not parse the message text, which support may reword at any time.\n"
        "Rate limited calls answer 429 with RATE_LIMITED.\n",
        "project_sprint_status.md": _fm(name="sprint-status", description="where sprint 12 stands", expires="2025-02-15", metadata={"type": "project"})
        + "Sprint 12: checkout rewrite at 70%, coupon rules not started.\n",
        "project_release_plan.md": _fm(name="release-plan", description="release dates for Q1", updated_at="2024-12-01", metadata={"type": "project"})
        + "Q1 releases: January 15 and February 26.\n",
        "project_release_plan_v2.md": _fm(name="release-plan-v2", description="release dates for Q1, moved", updated_at="2025-02-01", supersedes="project_release_plan.md", metadata={"type": "project"})
        + "Q1 releases: January 15 and March 12 (moved for the payment provider's freeze).\n",
        "reference_ci.md": _fm(name="ci", description="where CI runs and how to rerun it", metadata={"type": "reference"})
        + "CI runs on GitHub Actions; `gh run rerun --failed` retries the failed jobs. History: [[legacy-ci]].\n",
        "user_onboarding.md": _fm(name="onboarding", description="what the user asked for on day one", type="user")
        + "Wants short answers and diffs, not whole files. The old roadmap is [[old-roadmap]]; the glossary was [[glossary]].\n",
        "project_legacy_ci.md": _fm(name="legacy-ci", description="the Jenkins setup", status="superseded", superseded_by="reference_ci.md", metadata={"type": "project"})
        + "CI ran on a Jenkins box under the desk; jobs were shell scripts.\n",
        "team/oncall.md": _fm(name="oncall", description="who is on call and how to page", metadata={"type": "reference"})
        + "The on-call rota is in PagerDuty under `shop-backend`; page with `/page shop-backend` in Slack.\n",
        "team/deploy_freeze.md": _fm(name="deploy-freeze", description="freeze windows", metadata={"type": "project"})
        + "No deploys during the last week of November and from December 20 to January 3.\n",
        "team/code_review.md": _fm(name="code-review", description="review rules of the team", metadata={"type": "feedback"}) + REVIEW,
        "team/code_review_old.md": _fm(name="code-review-old", description="review rules (older)", metadata={"type": "feedback"})
        + REVIEW.replace("within one working day", "within two working day"),
        # a team index of its own (Claude Code skips every file named MEMORY.md in recall)
        "team/MEMORY.md": "- [On call](oncall.md) — who is on call\n",
        # live notes that MEMORY.md does not list yet
        "project_cache_policy.md": _fm(name="cache-policy", description="what the CDN caches and for how long", metadata={"type": "project"})
        + "Product pages are cached for five minutes at the CDN; carts and checkout are never cached.\n",
        "reference_dashboards.md": _fm(name="dashboards", description="the Grafana boards worth opening", metadata={"type": "reference"})
        + "Latency: Grafana board `api-latency`; errors: `api-errors`; queues: `queue-depth`.\n",
        "feedback_commit_style.md": _fm(name="commit-style", description="how commit messages are written", metadata={"type": "feedback"})
        + "Commit subjects are imperative and under 72 characters; the body says why.\n",
    }
    listed = {
        "user": ["- [User role](user_role.md) — leads the payments team", "- [Onboarding](user_onboarding.md) — day one requests"],
        "feedback": ["- [Testing feedback](feedback_testing.md) — run the focused tests first", "- [Code review](team/code_review.md) — team review rules"],
        "project": [
            "- [Deploy steps](deploy_steps.md) — how a release is promoted",
            "- [Sprint status](project_sprint_status.md) — where sprint 12 stands",
            "- [Release plan](project_release_plan.md) — release dates for Q1",
            "- [Release plan v2](project_release_plan_v2.md) — release dates for Q1, moved",
            "- [Deploy freeze](team/deploy_freeze.md) — team freeze windows",
        ],
        "reference": ["- [API errors](api_errors.md) — the error envelope", "- [CI](reference_ci.md) — where CI runs", "- [On call](team/oncall.md) — who to page"],
    }
    for i in range(GENERATED):
        path, text, line = _reference_note(i)
        notes[path] = text
        listed["reference"].append(line)
    lines = ["# Memory", ""]
    for number, (section, entries) in enumerate(listed.items()):
        lines += ([""] if number else []) + [f"## {section.title()}", ""] + entries
    notes["MEMORY.md"] = "\n".join(lines) + "\n"
    around = {
        "0b7e2c1a-5f7d-4c1e-9a55-3f7b1d2e4c6a.jsonl": '{"type":"user","message":"hello"}\n',
        # a note an earlier dreamd run archived beside the memory folder
        "memory.dreamd-archive/project_old_roadmap.md": _fm(name="old-roadmap", description="the 2024 roadmap", status="superseded", superseded_by="project_release_plan_v2.md", valid_to="2025-01-02")
        + "2024 roadmap: one release a quarter.\n",
    }
    return Folder("home/.claude/projects/-srv-shop/memory", notes, around)


# DeepCode ----------------------------------------------------------------------------

_TOPICS = (
    ("architecture.md", "Architecture", "services, queues and the one database they share; read first when a change crosses services"),
    ("build.md", "Build", "the make targets, the toolchain pins and the cache that makes a clean build take four minutes"),
    ("testing.md", "Testing", "how the unit, contract and browser tests are split, which ones run on every push, and the flaky list"),
    ("release-plan-v1.md", "Release plan v1", "the first plan for the spring release, with dates that later moved"),
    ("release-plan-v2.md", "Release plan v2", "the current plan for the spring release, after the payment provider's freeze"),
    ("sprint-status.md", "Sprint status", "what the team was doing in sprint 12, written mid-sprint and not kept up to date"),
    ("ports.md", "Ports", "which service listens where locally and in staging, and the two ports that clash with common tools"),
    ("database.md", "Database", "schema conventions, how migrations are written and reviewed, and the tables too big to alter online"),
    ("observability.md", "Observability", "where logs, traces and metrics go, the sampling rates, and the dashboards that matter"),
    ("security.md", "Security", "secrets handling, the dependency audit job, and who signs off on changes to the auth code"),
    ("frontend.md", "Front end", "the React app's folder layout, state management choices and the design tokens package"),
    ("api-style.md", "API style", "naming, pagination and error envelopes of the public API, with the two legacy exceptions"),
    ("oncall.md", "On call", "the rota, the paging policy, and the runbooks linked from each alert"),
    ("dependencies.md", "Dependencies", "how upgrades are batched, the renovate config, and the packages pinned on purpose"),
    ("feature-flags.md", "Feature flags", "where flags are defined, who may flip them in production, and the cleanup rule"),
)

BUILD = """# Build

`make build` compiles every service with the toolchain pinned in `.tool-versions`; `make image`
wraps the binaries into one image per service. The remote cache lives in the `build-cache` bucket,
and a clean build without it takes about four minutes on a laptop. Never commit generated code:
`make generate` runs in CI and fails the build when the tree is dirty afterwards.
"""

TESTING = """# Testing

Unit tests run with `make test` and must pass without network access. Contract tests against the
payment sandbox run with `make contract` and only on the main branch, because the sandbox limits
calls per day. Browser tests use Playwright through `make e2e`; the three known flaky ones are
listed in `tests/flaky.txt` and retried once. Coverage is reported but never gates a merge.
"""


def deepcode() -> Folder:
    """``<workspace>/.deepcode/memory``: flat notes, a MEMORY.md of about 7,900 characters."""
    notes: dict[str, str] = {
        "architecture.md": "# Architecture\n\nThree services (api, worker, web) share one Postgres database and talk through the `jobs` queue.\n"
        "Ports are in [ports](ports.md); the old port table is [old ports](old-ports.md); the retired queue notes were in [queue design](queue-design.md).\n"
        "The build is described in [build](build-copy.md).\n",
        "build.md": _fm(updated_at="2025-02-01") + BUILD,
        "build-copy.md": BUILD,
        "testing.md": _fm(updated_at="2025-02-05") + TESTING,
        "testing-notes.md": TESTING + "The nightly job runs them under the race detector.\n",
        "release-plan-v1.md": _fm(updated_at="2024-12-01") + "# Release plan v1\n\nSpring release on March 3; code freeze February 24.\n",
        "release-plan-v2.md": _fm(updated_at="2025-02-10", supersedes="release-plan-v1.md")
        + "# Release plan v2\n\nSpring release on March 17; code freeze March 10. Earlier plan: [v1](release-plan-v1.md).\n",
        "sprint-status.md": _fm(updated_at="2025-01-15", ttl_days=21) + "# Sprint status\n\nSprint 12: the worker rewrite is half done.\n",
        "ports.md": "# Ports\n\napi 8080, web 5173, worker metrics 9102; staging uses the same ports behind the ingress.\n",
        "old-ports.md": _fm(status="superseded", superseded_by="ports.md", valid_to="2024-11-30")
        + "# Old ports\n\napi 3000, web 3001; they clashed with the usual dev servers.\n",
        # live notes MEMORY.md does not list yet
        "queue.md": "# Queue\n\nJobs are rows of `jobs` claimed with SKIP LOCKED; a job that fails five times goes to `jobs_dead`.\n",
        "logging.md": "# Logging\n\nServices log JSON lines to stdout; the collector adds the pod name and ships them to Loki.\n",
        # other files DeepCode lists too, which dreamd must leave alone
        "scratch.txt": "ideas: try sqlc for the worker queries\n",
        ".last-session": "2025-02-27T16:04:00Z\n",
        # a subfolder DeepCode never lists
        "drafts/plan.md": BUILD,
    }
    for path, title, _ in _TOPICS:
        if path not in notes:
            notes[path] = f"# {title}\n\nNotes on {title.lower()} for this workspace; details are kept short and current.\n"
    intro = (
        "# Memory\n\nThis is the index of what I know about this workspace. Each line links a note and says in a few words\n"
        "what it holds, so that I can decide which note to read before relying on it. Notes reflect past sessions and may\n"
        "be stale: read one before acting on it, and fix or delete it when it turns out to be wrong.\n\n## Notes\n\n"
    )
    lines = [f"- [{title}]({path}) — {hook}" for path, title, hook in _TOPICS]
    text = intro + "\n".join(lines) + "\n"
    # long working notes at the end make the index about 7,900 characters, close to DeepCode's 8,000
    working = "\n## Working notes\n\n"
    fillers = (
        "The api and the worker share their database models through the `internal/model` package; changing a model means",
        "running both services' tests, because the worker deserializes job payloads with the same structs and a renamed",
        "field silently drops data from jobs already in the queue. Add fields, never rename them, and remove old ones",
        "only after the queue has drained in every environment. The web app talks only to the api, never to the worker.",
    )
    while len(text) + len(working) < 7_780:
        working += " ".join(fillers) + "\n\n"
    notes["MEMORY.md"] = text + working.rstrip("\n") + "\n"
    around = {"settings.json": '{"model": "deepseek-chat"}\n', "sessions/2025-02-27.jsonl": '{"role":"user","content":"hi"}\n'}
    return Folder("workspace/.deepcode/memory", notes, around)


# Cline -------------------------------------------------------------------------------

TECH = """# Tech Context

The backend is Python 3.12 with FastAPI and SQLAlchemy 2; the front end is Svelte with Vite. Postgres 16
runs in Docker for development and as a managed instance in production. Background jobs use Celery with
Redis as the broker. Dependencies are locked with uv, and `uv run pytest` is the only supported way to run
the tests. The API is deployed as one container behind the company's shared ingress.
"""

API = """# API notes

Every endpoint lives under `/api/v1`. Lists are paginated with an opaque `cursor` and a `limit` of at most
one hundred. Errors use the problem+json format with a stable `type` URL per failure. Authentication is a
bearer token issued by the identity service; scopes are checked in a dependency, never inside handlers.
"""

CACHE_TASK = """**Status:** Pending
**Added:** 2025-02-02
**Updated:** 2025-02-02

## Original Request
Serve product images from the CDN with a cache key that changes when the image changes.

## Thought Process
The images are uploaded to object storage and served through the API today, which is slow on
product lists. A content hash in the URL lets the CDN cache them forever without stale images.

## Implementation Plan
- Add a content hash column to `product_images`
- Build image URLs from the hash
- Configure the CDN to cache `/img/*` for a year

## Progress Log
### 2025-02-02
- Task created.
"""


def _task(ident: str, name: str, status: str, extra: str = "") -> str:
    return (
        f"# [{ident}] - {name}\n\n**Status:** {status}\n**Added:** 2025-01-05\n**Updated:** 2025-02-01\n\n"
        f"## Original Request\n{name}.\n\n## Progress Log\n### 2025-02-01\n- {extra or 'Updated the status.'}\n"
    )


def cline() -> Folder:
    """``memory-bank/`` with the six core files, a sectioned ``tasks/_index.md`` and task files."""
    notes = {
        "projectbrief.md": "# Project Brief\n\nA small storefront: product catalogue, cart and checkout, for one shop.\n",
        "productContext.md": "# Product Context\n\nThe shop sells printed maps; most orders come from returning customers on mobile.\n"
        "Tone of voice: see the [style guide](style-guide.md). Where it is hosted: [hosting](hosting.md).\n",
        "activeContext.md": "# Active Context\n\nCurrent focus: [TASK003] rate limiting, then [TASK007] CSV exports.\n"
        "Deploys follow the [deployment notes](deployment.md); the old runbook is [here](old-runbook.md).\n",
        "systemPatterns.md": "# System Patterns\n\nRepositories wrap SQLAlchemy sessions; see the [API notes](api-notes.md) and [TASK012].\n",
        "techContext.md": TECH,
        "progress.md": "# Progress\n\nDone: [TASK001] and [TASK002]. Next: [TASK021] images, [TASK008] key rotation.\n",
        "tasks/_index.md": (
            "# Tasks Index\n\n## In Progress\n- [TASK003] Add login rate limiting - middleware in review\n\n"
            "## Pending\n- [TASK007] Export reports as CSV - waiting on the schema decision\n"
            "- [TASK008] Rotate API keys - needs an ops window\n- [TASK012] Cache product images - plan drafted\n\n"
            "## Completed\n- [TASK001] Project setup - Completed on 2025-01-10\n- [TASK002] Database schema - Completed on 2025-01-20\n\n"
            "## Abandoned\n- [TASK005] GraphQL gateway - Abandoned due to scope\n"
        ),
        "tasks/README.md": "# Tasks\n\nOne file per task, `TASKnnn-slug.md`; finished tasks may move to `COMPLETED/`.\n"
        "The index lines read `- [TASKnnn] Name - note`, grouped by status.\n",
        "tasks/COMPLETED/TASK001-project-setup.md": _task("TASK001", "Project setup", "Completed", "Repository, CI and the dev container are in place."),
        "tasks/COMPLETED/TASK002-database-schema.md": _task("TASK002", "Database schema", "Completed", "First migration merged."),
        "tasks/TASK003-login-rate-limiting.md": _task("TASK003", "Add login rate limiting", "In Progress", "Middleware written, in review."),
        "tasks/TASK005-graphql-gateway.md": _task("TASK005", "GraphQL gateway", "Abandoned", "Dropped: the REST API is enough."),
        "tasks/TASK012-cache-product-images.md": "# [TASK012] - Cache product images\n\n" + CACHE_TASK,
        # the same task created again under a new id, as agents do
        "tasks/TASK021-cache-product-images.md": "# [TASK021] - Cache product images\n\n" + CACHE_TASK,
        # a finished task the index does not list yet
        "tasks/TASK013-audit-logging.md": _task("TASK013", "Audit logging", "Completed", "Admin actions are written to the audit table."),
        "api-notes.md": API,
        "docs/api-notes.md": API,
        "tech-stack.md": TECH.replace("# Tech Context", "# Tech stack") + "Type checking runs with mypy.\n",
        "release-freeze.md": _fm(expires="2025-02-20") + "# Release freeze\n\nNo releases until the payment provider finishes its migration.\n",
        "deployment.md": _fm(updated_at="2024-12-01") + "# Deployment\n\nBuild the image locally and push it to the registry by hand.\n",
        "deployment-v2.md": _fm(updated_at="2025-02-03", supersedes="deployment.md")
        + "# Deployment (v2)\n\nMerging to main builds the image in CI; production pulls the tag from the release job.\n",
        "old-runbook.md": _fm(status="expired", expired_at="2025-01-01", expired_reason="replaced by the platform runbooks")
        + "# Old runbook\n\nRestart the VM from the hosting panel when the API stops answering.\n",
        # hidden folders are not listed by Cline's recursive list_files
        ".scratch/ideas.md": "# Ideas\n\nMaybe a dark theme.\n",
        # a note an earlier dreamd run archived
        ".dreamd-archive/hosting.md": _fm(status="superseded", superseded_by="techContext.md", valid_to="2025-01-15")
        + "# Hosting\n\nA single VM at a small hosting company.\n",
    }
    around = {
        ".clinerules/memory-bank.md": "# Memory bank\n\nI MUST read ALL memory bank files at the start of EVERY task.\n",
        "README.md": "# Map shop\n",
        "src/app.py": "print('shop')\n",
    }
    return Folder("mapshop/memory-bank", notes, around)
