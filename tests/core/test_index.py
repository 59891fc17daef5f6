"""Index formats: entries read, dropped and added without touching other lines."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from daemon.core import index
from daemon.core.index import CLINE_TASKS, LINKS, IndexSpec, NewEntry, Parsed, add, drop, entries
from daemon.core.index_spec import LoadLimit

MEMORY = IndexSpec("MEMORY.md", LINKS)
TEXT = "# Memory\n\nSome prose.\n- [A](a.md) — first\n- [B](sub/b.md) — second\n|topic: [c](c.md) (12), [d](d.md) (40)\n"


def test_links_entries_resolve_relative_paths():
    """Every markdown link to a .md file is an entry, with its line."""
    assert [(e.line, e.path) for e in entries(MEMORY, TEXT, [])] == [(4, "a.md"), (5, "sub/b.md"), (6, "c.md"), (6, "d.md")]


def test_drop_removes_a_whole_line_with_one_link():
    """Dropping the only link of a line removes the line; prose stays."""
    assert drop(MEMORY, TEXT, {"a.md"}, []) == TEXT.replace("- [A](a.md) — first\n", "")


def test_drop_keeps_other_links_on_a_shared_line():
    """Dropping one of several links keeps the others and tidies the separator."""
    assert drop(MEMORY, TEXT, {"c.md"}, []).splitlines()[-1] == "|topic: [d](d.md) (40)"


def test_links_outside_the_store_are_ignored():
    """Links that climb out of the store or are URLs are not entries."""
    text = "- [x](../other.md)\n- [y](https://example.org/y.md)\n"
    assert entries(MEMORY, text, []) == []


def test_add_appends_claude_code_style_lines():
    """New entries follow the `- [Title](file.md) — hook` shape."""
    assert add(MEMORY, "# M\n", [NewEntry("n.md", "New [note]", "why")]) == "# M\n- [New (note)](n.md) — why\n"


def test_cline_task_ids_map_to_files():
    """A `[TASK011]` entry points at tasks/TASK011-*.md; unknown ids dangle."""
    spec = IndexSpec("tasks/_index.md", CLINE_TASKS)
    text = "## Pending\n- [TASK011] Do it - soon\n- [TASK099] Gone\n"
    notes = ["tasks/TASK011-do-it.md", "activeContext.md"]
    assert [(e.line, e.path) for e in entries(spec, text, notes)] == [(2, "tasks/TASK011-do-it.md"), (3, "tasks/TASK099.md")]
    assert drop(spec, text, {"tasks/TASK099.md"}, notes) == "## Pending\n- [TASK011] Do it - soon\n"


def test_cline_task_ids_resolve_in_subfolders():
    """Tasks Cline filed under tasks/COMPLETED/ are entries of the index, not dangling ones."""
    spec = IndexSpec("tasks/_index.md", CLINE_TASKS)
    notes = ["tasks/COMPLETED/TASK002-handlers.md", "tasks/TASK011-do-it.md"]
    text = "- [TASK002] Handlers\n- [TASK011] Do it\n"
    assert [e.path for e in entries(spec, text, notes)] == notes


def test_cline_task_id_ranges_name_their_file():
    """An entry for a range of tasks, `[TASK052..054]`, points at the file TASK052-054-*.md."""
    spec = IndexSpec("tasks/_index.md", CLINE_TASKS)
    notes = ["tasks/LATER/TASK052-054-benchmarks.md"]
    assert [e.path for e in entries(spec, "- [TASK052..054] Benchmarks\n- [TASK052-054] Again\n", notes)] == notes * 2


# Parsed.encode: an edit's bytes are the index's own bytes but for the lines it changed --------

_LINE = st.sampled_from(["\n", "- [A](a.md) — é\n", "# Ünïcode heading\n", "\r\n", "x\x0by\n", "tail without newline", "- [B](b.md)\n"])
_EDIT = st.tuples(st.sampled_from(["drop", "replace", "insert", "append", "new-blank"]), st.integers(0, 40))


def _edited(lines: list[str], edits: list[tuple[str, int]]) -> list[str]:
    out = list(lines)
    for op, at in edits:
        at = at % (len(out) + 1)
        if op == "drop" and out:
            del out[min(at, len(out) - 1)]
        elif op == "replace" and out:
            out[min(at, len(out) - 1)] = f"- [new {at}](n{at}.md) — ✓\n"
        elif op == "insert":
            out.insert(at, out[at - 1] if at and out else "\n")  # an object of the index, out of place
        elif op == "append":
            out.append(f"- [end {at}](e{at}.md)\n")
        else:
            out.insert(at, "\n")  # the one cached "\n" object, which the index holds too
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINE, max_size=40), st.lists(_EDIT, max_size=8))
def test_encode_is_the_join_encoded_for_any_edit(pieces: list[str], edits: list[tuple[str, int]]):
    """However lines are dropped, replaced, inserted or reordered, the spliced bytes are
    exactly the edited text encoded (pieces are sliced only over unbroken runs)."""
    text = "".join(pieces)
    parsed = Parsed.of(MEMORY, text, [], text.encode("utf-8"))
    lines = _edited(parsed.lines, edits)
    assert parsed.encode(lines) == "".join(lines).encode("utf-8")


def test_encode_slices_untouched_lines_from_the_bytes_it_was_given():
    """The untouched lines are the index's bytes, not the text encoded again: the bytes
    given are what is sliced (here marked so the two can be told apart)."""
    text = "# M\n- [A](a.md)\n- [B](b.md)\n- [C](c.md)\n"
    marked = text.replace("C", "Z").encode("utf-8")  # same lengths: the slices can be told apart
    parsed = Parsed.of(MEMORY, text, [], marked)
    lines = [line for line in parsed.lines if "(b.md)" not in line]
    assert parsed.encode(lines) == b"# M\n- [A](a.md)\n- [Z](c.md)\n"


def test_an_index_that_is_not_utf8_is_encoded_from_its_text():
    """With no exact bytes (invalid UTF-8 was replaced), the text is encoded, as before."""
    parsed = Parsed.of(MEMORY, "# M\n- [A](a.md)\n", [])
    assert parsed.encode(parsed.lines[:1]) == b"# M\n"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["- [a](a.md)\n", "\n", "# H\n", "é ü\n", "- [b](b.md) — x\n"]), max_size=40), st.data())
def test_an_edit_is_encoded_as_a_plain_join_would(original, data):
    text = "".join(original)
    parsed = Parsed.of(IndexSpec("MEMORY.md", LINKS), text, [], text.encode("utf-8"))
    lines = list(parsed.lines)
    for _ in range(data.draw(st.integers(0, 6))):
        at = data.draw(st.integers(0, len(lines)))
        op = data.draw(st.sampled_from(["drop", "add", "edit", "move"]))
        if op == "add" or not lines:
            lines.insert(at, data.draw(st.sampled_from(["- [n](n.md)\n", "\n", "- [a](a.md)\n", "ß\n"])))
        elif op == "drop":
            del lines[min(at, len(lines) - 1)]
        elif op == "edit":
            lines[min(at, len(lines) - 1)] += "more\n"
        else:
            lines.insert(at, lines.pop(min(at, len(lines) - 1)) if at % 2 else lines.pop())
    assert parsed.encode(lines) == "".join(lines).encode("utf-8")


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(["- [a](a.md)\n", "\n", "  \n", "# H\n", "é ü x\n", "- [b](b.md) — a longer hook\n", "tail"]), max_size=12),
    st.integers(1, 400),  # the lines repeated this often: past the first heads of 256 and 1,024 lines
    st.one_of(st.none(), st.integers(1, 300)),
    st.one_of(st.none(), st.integers(1, 4000)),
    st.booleans(),
    st.booleans(),
)
def test_the_head_of_an_index_says_what_its_whole_text_says(pattern, times, max_lines, max_chars, trimmed, cut_at_line):
    """An edited index is judged by its head (LoadLimit.head), never joined whole: the head
    fits exactly when the whole text fits, and the agent loads the same part of both."""
    limit = LoadLimit(max_lines, max_chars, trimmed, cut_at_line)
    lines = pattern * times + ["\n"] * (times % 3)  # blank lines at the end (trimmed, or not)
    whole, head = "".join(lines), limit.head(lines)
    assert whole.startswith(head)
    assert limit.fits(head) == limit.fits(whole)
    spec = IndexSpec("MEMORY.md", LINKS, limit)
    assert index.loaded(spec, head) == index.loaded(spec, whole)


_INDEX_LINE = st.sampled_from(["- [a](a.md)\n", "- [b](b.md) — hook\n", "- [a](a.md), [b](b.md), [c](c.md)\n", "# H\n", "\n", "- [c](c.md) é\n", "- [d](d.md)"])


@settings(max_examples=400, deadline=None)
@given(st.lists(_INDEX_LINE, max_size=30), st.sets(st.sampled_from(["a.md", "b.md", "c.md", "d.md", "z.md"])), st.booleans())
def test_dropped_lines_are_the_ones_a_plain_edit_keeps_and_encode_to_their_join(original, paths, repointed_first):
    """drop_lines, whether it says its pieces (Spliced, cut from the parsed lines) or not (cut
    from lines an earlier edit made), keeps exactly what deleting and rewriting each line
    in place keeps, and those lines encode to their own join."""
    text = "".join(original)
    spec = IndexSpec("MEMORY.md", LINKS)
    parsed = Parsed.of(spec, text, [], text.encode("utf-8"))
    start = list(parsed.lines) if repointed_first else parsed.lines  # equal lines, not the parsed list itself
    doomed = {e.line for p in paths for e in parsed.by_path.get(p, ())}
    expected = list(start)
    for number in sorted(doomed, reverse=True):
        if any(e.path not in paths for e in parsed.by_line[number]):
            expected[number - 1] = index._drop_links(spec, start[number - 1], paths)
        else:
            del expected[number - 1]
    got = index.drop_lines(spec, parsed, paths, start)
    assert list(got) == expected
    assert isinstance(got, index.Spliced) == (bool(doomed) and not repointed_first)
    assert parsed.encode(got) == "".join(expected).encode("utf-8")


CLAUDE_INDEX = IndexSpec("MEMORY.md", LINKS, wiki=True)


def test_a_wiki_link_is_an_entry_where_the_agent_follows_them():
    """``[[name]]`` names a note by its stem, its path, or (a view's notes) its frontmatter
    name, exactly or spelled alike; in an index whose agent follows no such link it is text."""
    notes = ["deploy-steps.md", "team/owners.md", "notes.md"]
    text = "- [[deploy_steps]] — how to deploy\n- [[team/owners|who]] and [[Notes.md]]\n"
    assert [(e.line, e.path) for e in entries(CLAUDE_INDEX, text, notes)] == [(1, "deploy-steps.md"), (2, "team/owners.md"), (2, "notes.md")]
    assert entries(IndexSpec("MEMORY.md", LINKS), text, notes) == []


def test_a_wiki_link_that_names_no_note_or_several_is_no_entry_and_is_never_dropped():
    notes = ["a-b.md", "a_b.md", "c.md"]
    text = "- [[A B]] — which one\n- [[gone]] — nowhere\n- [C](c.md)\n"
    assert [e.path for e in entries(CLAUDE_INDEX, text, notes)] == ["c.md"]
    assert drop(CLAUDE_INDEX, text, {"a-b.md", "a_b.md", "gone.md"}, notes) == text


def test_a_frontmatter_name_resolves_a_wiki_entry():
    class Titled:
        def __init__(self, name: str) -> None:
            self.meta = {"name": name}

    notes = {"deploy-steps.md": Titled("Deploy guide"), "other.md": Titled("other")}
    assert [e.path for e in entries(CLAUDE_INDEX, "- [[Deploy guide]] — how\n", notes)] == ["deploy-steps.md"]


def test_dropping_a_wiki_entry_drops_its_line_or_only_its_link():
    notes = ["deploy.md", "deploy-copy.md", "other.md"]
    text = "- [[deploy]] — how to deploy, [[deploy-copy]]\n- [[deploy-copy]] — the copy\n- [[other]]\n"
    assert drop(CLAUDE_INDEX, text, {"deploy-copy.md"}, notes) == "- [[deploy]] — how to deploy\n- [[other]]\n"


def test_claude_codes_index_takes_wiki_links_and_deepcodes_does_not():
    from daemon.stores.readers import CLAUDE_CODE, DEEPCODE

    assert CLAUDE_CODE.index is not None and CLAUDE_CODE.index.wiki and "wiki" in CLAUDE_CODE.links
    assert DEEPCODE.index is not None and not DEEPCODE.index.wiki and "wiki" not in DEEPCODE.links
