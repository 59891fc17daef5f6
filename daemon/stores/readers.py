"""What each agent really does with its memory folder: the reader model of every preset.

One place for the outside world's rules, each with the source it was read from. When an
agent changes how it reads, this is the file to change (and tests/conformance, whose
oracles restate these rules independently, must agree).

DeepCode (HKUDS/DeepCode, main at 4c5ab71a, 2026-08-20; v2.0.0 and v2.1.0 read the same way)
    core/harness/memory.py: the memory folder is ``<workspace>/.deepcode/memory``; the
    ``memory`` tool's ``list`` action shows every regular file directly in it, any name or
    extension, dot-files included, never a subfolder (``iterdir()`` + ``is_file()``), and
    ``read``/``write``/``delete`` take flat names only. ``MEMORY.md`` is injected into every
    session's prompt through ``_read_capped``: the first 8,000 characters (code points,
    untrimmed), the rest cut. No frontmatter, no link syntax and no entry format are
    defined; dreamd writes markdown links, which it then reads back.

Claude Code (auto memory; docs at code.claude.com/docs/en/memory, CHANGELOG to 2.1.240)
    The folder is ``~/.claude/projects/<project>/memory``. ``MEMORY.md``: "the first 200 lines
    ... or the first 25KB, whichever comes first" (25KB since 2.1.83; counted as 25,000
    characters of the trimmed text, a character cut going back to a line end, in the 2.1.88
    client). Entries are ``- [Title](file.md) — one-line hook``, "one line, under ~150
    characters". Recall lists every ``*.md`` under the folder recursively (hidden folders
    too) except files named ``MEMORY.md`` (2.1.88 client, ``scanMemoryFiles``), so retired
    notes must leave the folder. Team notes live in ``team/`` and the same ``MEMORY.md``
    indexes them as ``team/x.md`` (prompt text of 2.1.173+). Notes link each other as
    ``[[name]]``, ``name`` being the target's frontmatter ``name`` (prompt text of 2.1.139+).
    A note's ``type`` (user, feedback, project, reference) sits at the top level or, since
    2.1.139, under ``metadata:``.

Serena (oraios/serena v1.7.0, 2026-08-09; src/serena/memories/memory_manager.py)
    Memories are every ``*.md`` under ``.serena/memories`` at any depth, dot-folders included
    (``os.walk``), named by their path without ``.md``; ``read_memory`` returns the raw file.
    ``ignored_memory_patterns`` (regexes, full match on the name, from serena_config.yml and
    project.yml) hide a memory from listing and reading. Memories refer to each other as
    `` `mem:NAME` `` (name characters ``A-Za-z0-9_-/``; memory_reference_analysis.py), which
    ``rename_memory`` rewrites. Onboarding seeds ``memory_maintenance`` (its `mem:` names are
    examples of the syntax) and makes ``core`` the root every session reads first
    (resources/memory_maintenance.md). No index.

Cline (memory bank: docs.cline.bot/best-practices/memory-bank, cline/cline at 21cb8d25;
the tasks convention: github/awesome-copilot instructions/memory-bank.instructions.md)
    "I MUST read ALL memory bank files at the start of EVERY task"; the six core files are
    required. Files are found with Cline's ``list_files``, which skips what is inside hidden
    folders when listing recursively (apps/vscode/src/services/glob/list-files.ts,
    ``buildIgnorePatterns``). ``tasks/_index.md`` lists tasks as ``- [TASKnnn] Name - note``
    under the sections In Progress, Pending, Completed and Abandoned, "sorted by status" (the
    ``**Status:**`` line of ``tasks/TASKnnn-name.md``). Task ids are not links.
"""

from __future__ import annotations

from daemon.core.index_spec import BY_STATUS, BY_TYPE, CLINE_TASKS, LINKS, IndexSpec, LoadLimit
from daemon.core.reader import MARKDOWN, MEM, TASK_ID, WIKI, Listing, ReaderModel

CLINE_CORE_FILES = (
    "projectbrief.md",
    "productContext.md",
    "activeContext.md",
    "systemPatterns.md",
    "techContext.md",
    "progress.md",
)

DEEPCODE = ReaderModel(
    agent="DeepCode",
    listing=Listing(recursive=False, dot_dirs=False, suffixes=None),
    links=(MARKDOWN,),
    index=IndexSpec("MEMORY.md", LINKS, limit=LoadLimit(chars=8000), lists="*.md"),
    sources=(
        "HKUDS/DeepCode 4c5ab71a core/harness/memory.py: MemoryTool list (iterdir, is_file), _MAX_INJECT_CHARS = 8000, _read_capped",
    ),
)

CLAUDE_CODE = ReaderModel(
    agent="Claude Code",
    listing=Listing(recursive=True, dot_dirs=True, skip_names=("MEMORY.md",)),
    links=(MARKDOWN, WIKI),
    index=IndexSpec(
        "MEMORY.md",
        LINKS,
        limit=LoadLimit(lines=200, chars=25_000, trimmed=True, cut_at_line=True),
        line_chars=150,
        sections=BY_TYPE,
        wiki=True,
    ),
    frontmatter=True,  # notes are written with name/description/type frontmatter, which the client reads (type under metadata: since 2.1.139)
    sources=(
        "code.claude.com/docs/en/memory: first 200 lines or 25KB of MEMORY.md, whichever comes first",
        "CHANGELOG 2.1.83: MEMORY.md index now truncates at 25KB as well as 200 lines",
        "client 2.1.88 src/memdir/memoryScan.ts: readdir(memoryDir, {recursive: true}), *.md except MEMORY.md",
        "system prompt 2.1.224: each entry one line under ~150 characters, '- [Title](file.md) — one-line hook'",
        "system prompt 2.1.173+: one MEMORY.md indexes private notes as file.md and team notes as team/file.md",
        "system prompt 2.1.139+: link related memories with [[their-name]]; type under metadata:",
    ),
)

SERENA = ReaderModel(
    agent="Serena",
    listing=Listing(recursive=True, dot_dirs=True),
    links=(MEM, MARKDOWN),
    required=("memory_maintenance.md", "core.md"),
    instructions=("memory_maintenance.md",),
    sources=(
        "oraios/serena v1.7.0 src/serena/memories/memory_manager.py: _iter_memory_files (os.walk, *.md), _list_memories (name = path without .md)",
        "memory_manager.py _is_ignored_memory: ignored_memory_patterns, re.fullmatch on the name",
        "src/serena/memories/memory_reference_analysis.py: MEMORY_REF_PREFIX = 'mem:', NAME_CHAR_CLASS [A-Za-z0-9_\\-/]",
        "src/serena/resources/memory_maintenance.md: read mem:core first; memory_maintenance is seeded by onboarding",
    ),
)

CLINE = ReaderModel(
    agent="Cline",
    listing=Listing(recursive=True, dot_dirs=False),
    links=(MARKDOWN, TASK_ID),
    index=IndexSpec("tasks/_index.md", CLINE_TASKS, sections=BY_STATUS, lists="tasks/**/TASK*.md"),
    required=CLINE_CORE_FILES,
    sources=(
        "cline/cline docs/best-practices/memory-bank.mdx: read ALL memory bank files at the start of EVERY task; six core files",
        "cline/cline apps/vscode/src/services/glob/list-files.ts buildIgnorePatterns: '**/.*/**' ignored when listing recursively",
        "github/awesome-copilot instructions/memory-bank.instructions.md: tasks/_index.md sections In Progress, Pending, Completed, Abandoned; '- [TASK003] Name - note'",
    ),
)

# No agent of its own: dreamd's frontmatter is the reading rule, so a note marked retired is
# not read as current and may stay where it is.
GENERIC = ReaderModel(
    agent="any tool that reads frontmatter",
    listing=Listing(recursive=True, dot_dirs=False),
    links=(MARKDOWN, WIKI),
    reads_status=True,
    frontmatter=True,
)
