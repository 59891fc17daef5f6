"""The oracles themselves: each agent's reading rule on small folders whose answer is known.

If an oracle were wrong, the conformance tests would judge dreamd against the wrong rule,
so each rule the oracles restate is pinned here on its edge cases (the sources are in
oracles.py).
"""

from __future__ import annotations

from pathlib import Path

from .harness import judge, read
from .oracles import ClaudeCode, Cline, DeepCode, Serena, outside_roots, snapshot, store_bytes

RETIRED = "---\nstatus: superseded\nsuperseded_by: a.md\n---\nold\n"


# Serena --------------------------------------------------------------------------------


def test_serena_lists_every_md_at_any_depth_dot_folders_included(make_store):
    """Serena's os.walk lists *.md in nested and dot-folders alike, and nothing else."""
    root = make_store({"core.md": "x", "auth/login.md": "x", ".dreamd-archive/2024/old.md": "x", ".hidden.md": "x", "UP.MD": "x", "n.txt": "x"})
    assert Serena().visible_notes(root) == {"core.md", "auth/login.md", ".dreamd-archive/2024/old.md", ".hidden.md"}


def test_serena_ignored_patterns_match_the_whole_name(make_store):
    """ignored_memory_patterns hide a memory only when the regex matches its whole name (path without .md)."""
    root = make_store({"auth/login.md": "x", "auth.md": "x", ".dreamd-archive/a.md": "x"})
    assert Serena(ignored=["auth"]).visible_notes(root) == {"auth/login.md", ".dreamd-archive/a.md"}
    assert Serena(ignored=[r"auth/.*", r"\.dreamd-archive/.*"]).visible_notes(root) == {"auth.md"}


def test_serena_mem_references_resolve_to_name_dot_md(make_store):
    """`mem:NAME` names NAME.md; a dot ends the name, global/ names are not the project's, retired targets do not land."""
    root = make_store({
        "core.md": "See `mem:auth/login`, mem:auth/login. and `mem:global/style` and `mem:gone` and `mem:old`.\n",
        "auth/login.md": "x", "old.md": RETIRED,
    })  # fmt: skip
    refs = {(r.written, r.resolves) for r in Serena().references(root)}
    assert refs == {("auth/login", True), ("gone", False), ("old", False)}


# Claude Code ---------------------------------------------------------------------------


def test_claude_code_recalls_every_md_but_memory_md_hidden_folders_too(make_store):
    """Recall reads *.md at any depth, hidden folders included, except every file named MEMORY.md."""
    root = make_store({"MEMORY.md": "", "a.md": "x", "team/b.md": "x", "team/MEMORY.md": "", ".archive/c.md": "x", "d.txt": "x"})
    assert ClaudeCode().visible_notes(root) == {"a.md", "team/b.md", ".archive/c.md"}


def _index(lines: list[str], before: str = "", after: str = "") -> str:
    return before + "\n".join(lines) + "\n" + after


def test_claude_code_loads_200_lines_of_the_trimmed_index(make_store):
    """The first 200 lines of the trimmed MEMORY.md are loaded: 200 entries fit, the 201st is not seen; blank lines around do not count."""
    notes = {f"n{i}.md": "x" for i in range(201)}
    fits = make_store({**notes, "MEMORY.md": _index([f"- [N](n{i}.md) — h" for i in range(200)], "\n\n\n", "\n\n")}, name="fits")
    over = make_store({**notes, "MEMORY.md": _index([f"- [N](n{i}.md) — h" for i in range(201)])}, name="over")
    assert ClaudeCode().loaded(fits).within_limit
    loaded = ClaudeCode().loaded(over)
    assert not loaded.within_limit and loaded.unseen == {"n200.md"} and "n199.md" in loaded.seen


def test_claude_code_cuts_past_25000_characters_at_a_line_end(make_store):
    """Past 25,000 characters the index is cut back to the last line end, so a line crossing the limit is not seen."""
    line = "- [N](n{i}.md) — " + "h" * 180  # about 200 characters a line: 125 lines reach 25,000
    text = _index([line.format(i=i) for i in range(130)])
    root = make_store({**{f"n{i}.md": "x" for i in range(130)}, "MEMORY.md": text})
    loaded = ClaudeCode().loaded(root)
    kept, _ = ClaudeCode().loaded_text(text)
    assert len(kept) <= 25_000 and kept.endswith("h") and not loaded.within_limit
    assert f"n{kept.count(chr(10))}.md" not in loaded.unseen and f"n{kept.count(chr(10)) + 1}.md" in loaded.unseen


def test_claude_code_wiki_links_find_the_frontmatter_name_before_the_file_stem(make_store):
    """[[x]] lands on the note whose frontmatter name is x; only when none has that name, on the note whose stem is x."""
    root = make_store({
        "a.md": "[[deploy-steps]] [[b]] [[c]] [[old]]\n",
        "steps.md": "---\nname: deploy-steps\n---\nx\n",
        "b.md": "---\nname: something-else\n---\nx\n",
        "team/c.md": "x\n",
        "old.md": RETIRED,
    })  # fmt: skip
    refs = {(r.written, r.target, r.resolves) for r in ClaudeCode().references(root) if r.source == "a.md"}
    assert refs == {("deploy-steps", "steps.md", True), ("b", "b.md", True), ("c", "team/c.md", True), ("old", "old.md", False)}


def test_claude_code_index_entries_are_relative_to_the_memory_folder(make_store):
    """MEMORY.md entries name notes from the memory folder: team/x.md is a team note; a retired or missing note does not resolve."""
    root = make_store({"MEMORY.md": "- [X](team/x.md) — h\n- [O](old.md) — h\n- [G](gone.md) — h\n", "team/x.md": "x", "old.md": RETIRED})
    assert [(e.written, e.resolves) for e in ClaudeCode().index_entries(root)] == [("team/x.md", True), ("old.md", False), ("gone.md", False)]


# DeepCode ------------------------------------------------------------------------------


def test_deepcode_lists_every_top_level_file_and_no_subfolder(make_store):
    """DeepCode's memory tool lists every regular file directly in the folder, any extension, dot-files too, never a subfolder's."""
    root = make_store({"MEMORY.md": "", "a.md": "x", "notes.txt": "x", ".hidden": "x", ".dreamd-archive/b.md": "x", "sub/c.md": "x"})
    assert DeepCode().visible_notes(root) == {"MEMORY.md", "a.md", "notes.txt", ".hidden"}


def test_deepcode_injects_the_first_8000_characters_untrimmed(make_store):
    """MEMORY.md is cut after 8,000 code points of the untrimmed text: leading blank lines count, a link cut in half is not seen."""
    head = "- [A](a.md)\n"
    fits = make_store({"a.md": "x", "b.md": "x", "MEMORY.md": head + "é" * (8000 - len(head))}, name="fits")
    pad = "\n" * (8000 - len(head) - 5)
    over = make_store({"a.md": "x", "b.md": "x", "MEMORY.md": head + pad + "- [B](b.md)\n"}, name="over")
    assert DeepCode().loaded(fits).within_limit
    loaded = DeepCode().loaded(over)
    assert not loaded.within_limit and loaded.unseen == {"b.md"} and loaded.seen == {"a.md"}


def test_deepcode_links_land_only_on_flat_live_files(make_store):
    """A link lands on a note DeepCode can read: a flat name, present and live; the archive subfolder is out of reach."""
    root = make_store({"MEMORY.md": "[a](a.md) [o](old.md) [x](.dreamd-archive/x.md)\n", "a.md": "x", "old.md": RETIRED, ".dreamd-archive/x.md": "x"})
    assert [(e.written, e.resolves) for e in DeepCode().index_entries(root)] == [("a.md", True), ("old.md", False), (".dreamd-archive/x.md", False)]


# Cline ---------------------------------------------------------------------------------


def test_cline_lists_md_recursively_except_inside_hidden_folders(make_store):
    """Cline's recursive list_files skips what is inside dot-folders (**/.*/**) but lists dot-files and nested folders."""
    root = make_store({"activeContext.md": "x", "tasks/TASK001-a.md": "x", ".dreamd-archive/old.md": "x", "docs/.drafts/d.md": "x", ".notes.md": "x", "x.txt": "x"})
    assert Cline().visible_notes(root) == {"activeContext.md", "tasks/TASK001-a.md", ".notes.md"}


def test_cline_index_entries_join_task_ids_to_files_in_any_tasks_subfolder(make_store):
    """[TASKnnn] lines resolve to tasks/**/TASKnnn-*.md; their section is the heading above, their status the file's **Status:**."""
    root = make_store({
        "tasks/_index.md": "# Tasks Index\n\n## Pending\n- [TASK002] B - soon\n- [TASK009] Gone - lost\n\n## Completed\n- [TASK001] A - done\n",
        "tasks/COMPLETED/TASK001-a.md": "# [TASK001] - A\n\n**Status:** Completed\n",
        "tasks/TASK002-b.md": "# [TASK002] - B\n\n**Status:** In Progress\n",
        "tasks/README.md": "- [TASKnnn] Name - note\n",
    })  # fmt: skip
    found = [(e.written, e.target, e.resolves, e.section, Cline.section_matches(e)) for e in Cline().index_entries(root)]
    assert found == [
        ("TASK002", "tasks/TASK002-b.md", True, "Pending", False),
        ("TASK009", None, False, "Pending", True),
        ("TASK001", "tasks/COMPLETED/TASK001-a.md", True, "Completed", True),
    ]


def test_cline_references_are_markdown_links_and_task_ids(make_store):
    """A core file refers by relative markdown link or by [TASKnnn]; a [TASK](link) is a link, not a task id."""
    root = make_store({
        "activeContext.md": "[d](docs/d.md) [TASK001] [TASK001](tasks/TASK001-a.md) [TASK404] [x](gone.md)\n",
        "docs/d.md": "[up](../activeContext.md)\n", "tasks/TASK001-a.md": "**Status:** Pending\n",
    })  # fmt: skip
    refs = sorted((r.source, r.syntax, r.written, r.resolves) for r in Cline().references(root))
    assert refs == [
        ("activeContext.md", "markdown", "docs/d.md", True), ("activeContext.md", "markdown", "gone.md", False),
        ("activeContext.md", "markdown", "tasks/TASK001-a.md", True), ("activeContext.md", "task-id", "TASK001", True),
        ("activeContext.md", "task-id", "TASK404", False), ("docs/d.md", "markdown", "../activeContext.md", True),
    ]  # fmt: skip


# Snapshots and judging -----------------------------------------------------------------


def test_outside_roots_leaves_out_the_notes_and_a_beside_archive(make_store):
    """The parent's snapshot without the store's two roots still holds the agent's other files."""
    make_store({"project.yml": "x", "memories.dreamd-archive/a.md": "x"}, name="p/.serena")
    root = make_store({"a.md": "x"}, name="p/.serena/memories")
    assert set(outside_roots(Serena(), root).files) == {"project.yml"}
    assert store_bytes(Serena(), root) == {"notes/a.md": b"x", "archive/a.md": b"x"}


def test_snapshot_sees_hidden_files_and_empty_folders(tmp_path: Path):
    """A snapshot lists dot-files and folders, so a leftover temp file or folder shows up."""
    (tmp_path / "d" / ".e").mkdir(parents=True)
    (tmp_path / "d" / ".tmp").write_text("x")
    tree = snapshot(tmp_path / "d")
    assert set(tree.files) == {".tmp"} and tree.dirs == {".e"}


def test_judge_flags_a_retired_note_in_sight_a_dangling_reference_and_an_index_past_its_limit(make_store):
    """The judge reports each way a write could break what the agent reads, so a conformance test cannot pass by accident."""
    lines = [f"- [N](n{i}.md) — h" for i in range(200)]
    notes = {f"n{i}.md": "x" for i in range(200)} | {"a.md": "see [[n5]]\n"}
    root = make_store({**notes, "MEMORY.md": "\n".join(lines) + "\n"})
    before = read(ClaudeCode(), root)
    (root / "n5.md").write_text(RETIRED)
    (root / "MEMORY.md").write_text("\n".join(["# Memory", *lines]) + "\n")
    problems, figures = judge(ClaudeCode(), before, read(ClaudeCode(), root), kind="merge", allowed_unresolved=frozenset())
    assert (figures.visible_retired, figures.dangling_created, figures.past_limit) == (1, 1, 1)
    assert len(problems) == 6  # retired in sight, n5 entry unresolved, [[n5]] dangles, a.md lost a reference, over the limit, n199 pushed out
