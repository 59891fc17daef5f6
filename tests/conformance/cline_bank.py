"""A Cline memory bank shaped like a busy real one, written for these tests.

The six core files, ``tasks/_index.md`` under its four status sections, task files in
``tasks/`` and ``tasks/COMPLETED/``, and what makes one pass propose several things at once:
a task saved twice under one id (``TASK004``; the copy the index does not resolve to is the
one a note links, so a merge keeps it), two tasks given one id (``TASK011``), the same task
saved again under a new id (``TASK015``, a near copy of ``TASK009``), two notes that both cite
the tasks and notes that change (``activeContext.md``, ``progress.md``), an unlisted finished task and an unlisted
abandoned one, a deploy note superseded by a newer one that names it, two copies of the API
conventions, and a freeze note past its ``expires``. Dates are before the test clock (2025-03-01).
"""

from __future__ import annotations

from .fixtures import Folder

SEARCH = """**Status:** In Progress
**Added:** 2025-01-20
**Updated:** 2025-02-18

## Original Request
Let customers search the catalogue by name, place and map scale.

## Thought Process
Postgres full text search over the product name and description, ranked with ts_rank, and a
trigram index on the name so that a misspelt town still finds its map. The search box sends a
request after a pause of three hundred milliseconds and the results of a query are cached for a
minute, so that the popular searches stay fast during the Saturday peak.

## Progress Log
### 2025-02-18
- Ranking tuned on the top hundred queries.
"""

RETRIES = """**Status:** In Progress
**Added:** 2025-02-03
**Updated:** 2025-02-20

## Original Request
Retry a failed card payment once before telling the customer it failed.

## Thought Process
The payment provider answers with a timeout now and then although the charge went through, so a
retry must reuse the idempotency key of the first attempt. Only timeouts and 5xx answers are
retried, never a decline, and the customer sees a spinner for at most ten seconds in total.

## Progress Log
### 2025-02-20
- Waiting on the payment sandbox to test the idempotency keys.
"""

API = """# API conventions

Every endpoint lives under `/api/v1`. Lists are paginated with an opaque cursor and at most one
hundred items a page. Errors are problem+json with a stable type URL for each failure, and the
bearer token's scopes are checked in one dependency, never inside the handlers themselves.
"""


def _task(ident: str, name: str, status: str, note: str) -> str:
    return (
        f"# [{ident}] - {name}\n\n**Status:** {status}\n**Added:** 2025-01-05\n**Updated:** 2025-02-10\n\n"
        f"## Original Request\n{name}.\n\n## Progress Log\n### 2025-02-10\n- {note}\n"
    )


INDEX = """# Tasks Index

## In Progress
- [TASK004] Product search - ranking tuned, typo tolerance next
- [TASK009] Checkout retries - waiting on the payment sandbox

## Pending
- [TASK011] Newsletter signup - copy not approved yet

## Completed
- [TASK001] Project setup - Completed on 2025-01-10
- [TASK006] Image CDN - Completed on 2025-02-14

## Abandoned
- [TASK003] GraphQL gateway - Abandoned: REST is enough
"""


def busy_bank() -> Folder:
    """``mapshop/memory-bank`` as described above."""
    notes = {
        "projectbrief.md": "# Project Brief\n\nAn online shop for printed maps: catalogue, cart, checkout.\n",
        "productContext.md": "# Product Context\n\nMost customers return on mobile; tone of voice in the [style guide](style-guide.md).\n",
        "activeContext.md": (
            "# Active Context\n\nNow: [TASK004] search (notes in [ranking](tasks/TASK004-search-ranking.md)) and [TASK009] payment retries.\n"
            "Deploys follow the [deploy notes](deploy.md); API rules are in [API conventions](docs/api-conventions.md).\n"
        ),
        "systemPatterns.md": "# System Patterns\n\nHandlers stay thin; see [API conventions](api-conventions.md). Images since [TASK006].\n",
        "techContext.md": "# Tech Context\n\nPython 3.12, FastAPI, Postgres 16, Svelte front end.\n",
        "progress.md": (
            "# Progress\n\nDone: [TASK001], [TASK006]. Working on [TASK004] and [TASK009]; see [deploy](deploy.md).\n"
            "Retries were also filed as [TASK015].\n"
        ),
        "tasks/_index.md": INDEX,
        "tasks/TASK004-product-search.md": "# [TASK004] - Product search\n\n" + SEARCH,
        # the agent saved the same task again under its id with a second slug and one more line
        "tasks/TASK004-search-ranking.md": "# [TASK004] - Product search\n\n" + SEARCH + "- Typo tolerance is next.\n",
        "tasks/TASK009-checkout-retries.md": "# [TASK009] - Checkout retries\n\n" + RETRIES,
        # and the retries task once more under a new id, never listed
        "tasks/TASK015-checkout-retry.md": "# [TASK015] - Checkout retry\n\n" + RETRIES + "- Declines are never retried.\n",
        "tasks/TASK011-newsletter-signup.md": _task("TASK011", "Newsletter signup", "Pending", "Waiting for the copy."),
        # another task given an id already taken: two tasks, one id (only a person can renumber)
        "tasks/TASK011-price-alerts.md": _task("TASK011", "Price alerts", "Pending", "Email when a map goes on sale."),
        "tasks/TASK003-graphql-gateway.md": _task("TASK003", "GraphQL gateway", "Abandoned", "REST is enough."),
        "tasks/TASK012-audit-log.md": _task("TASK012", "Audit log", "Completed", "Admin actions are logged."),
        "tasks/TASK013-dark-mode.md": _task("TASK013", "Dark mode", "Abandoned", "Not worth it for a print shop."),
        "tasks/COMPLETED/TASK001-project-setup.md": _task("TASK001", "Project setup", "Completed", "Repository and CI ready."),
        "tasks/COMPLETED/TASK006-image-cdn.md": _task("TASK006", "Image CDN", "Completed", "Images served from the CDN."),
        "api-conventions.md": API,
        "docs/api-conventions.md": API + "Rate limits are sent in the `RateLimit` headers.\n",
        "style-guide.md": "# Style guide\n\nShort sentences, no exclamation marks, British spelling.\n",
        "deploy.md": "---\nupdated_at: 2024-12-01\n---\n# Deploy\n\nBuild the image by hand and push it to the registry.\n",
        "deploy-v2.md": (
            "---\nupdated_at: 2025-02-01\nsupersedes: deploy.md\n---\n# Deploy (v2)\n\n"
            "CI builds the image on every merge to main. This replaces the [old deploy notes](deploy.md).\n"
        ),
        "release-freeze.md": "---\nexpires: 2025-02-20\n---\n# Release freeze\n\nNo releases until the payment provider's migration ends.\n",
    }
    around = {".clinerules/memory-bank.md": "# Memory bank\n\nI MUST read ALL memory bank files at the start of EVERY task.\n", "README.md": "# Map shop\n"}
    return Folder("mapshop/memory-bank", notes, around)
