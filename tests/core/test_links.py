"""References between notes: found in each syntax, resolved, respelled or unlinked in place."""

from __future__ import annotations

import pytest

from daemon.core.links import Names, find, resolve_markdown, rewrite, spelled
from daemon.core.reader import LINK_SYNTAXES, MARKDOWN, MEM, TASK_ID, WIKI

NAMES = Names(
    frozenset({"auth/login.md", "auth/login_copy.md", "flow.md", "core.md", "tasks/TASK003-cache.md", "a.b.md"}),
    {"flow.md": "login-flow", "auth/login.md": "login"},
)


def refs(text: str, syntaxes=LINK_SYNTAXES, source: str = "core.md"):  # noqa: ANN001, ANN201
    return find(source, text, 0, syntaxes, NAMES)


@pytest.mark.parametrize(
    ("text", "syntax", "written", "target"),
    [
        ("See [login](auth/login.md).", MARKDOWN, "auth/login.md", "auth/login.md"),
        ("See [login](<auth/login.md#top> \"t\").", MARKDOWN, "auth/login.md", "auth/login.md"),
        ("Read `mem:auth/login` first.", MEM, "auth/login", "auth/login.md"),
        ("Ask [[login-flow|the flow]].", WIKI, "login-flow", "flow.md"),
        ("Ask [[login]].", WIKI, "login", "auth/login.md"),  # a frontmatter name wins over a file stem
        ("Ask [[auth/login_copy]].", WIKI, "auth/login_copy", "auth/login_copy.md"),
        ("Done in [TASK003].", TASK_ID, "TASK003", "tasks/TASK003-cache.md"),
    ],
)
def test_each_syntax_resolves_to_its_note(text, syntax, written, target):
    """Every syntax a reader model can declare finds its reference and the note it means."""
    (ref,) = refs(text)
    assert (ref.syntax, ref.written, ref.target, ref.candidates) == (syntax, written, target, 1)
    assert text[ref.start : ref.end] == written


def test_missing_targets_are_named_but_unresolved():
    """A link to a note that is not there names its path (markdown, mem) and resolves to nothing."""
    md, mem, wiki = refs("[x](gone.md) `mem:auth/gone` [[nobody]]")
    assert (md.named, md.target, md.candidates) == ("gone.md", None, 0)
    assert (mem.named, mem.target) == ("auth/gone.md", None)
    assert (wiki.named, wiki.target, wiki.key) == (None, None, "wiki:nobody")


def test_what_is_not_a_note_of_the_store_is_not_a_reference():
    """URLs, absolute paths, links out of the notes folder, Serena's global memories and fenced code are not references."""
    text = "[u](https://x.io/a.md) [abs](/etc/a.md) [up](../docs/a.md) `mem:global/style`\n```\n[code](auth/login.md)\n```\n"
    assert refs(text) == []


def test_markdown_links_resolve_from_the_linking_notes_folder():
    """A relative link means the path beside the note that holds it."""
    assert resolve_markdown("auth/login.md", "login_copy.md") == "auth/login_copy.md"
    assert resolve_markdown("auth/login.md", "../flow.md") == "flow.md"
    assert resolve_markdown("auth/login.md", "../../out.md") is None


def test_a_respelled_reference_changes_only_its_target():
    """Rewriting keeps every other character: link text, anchor, title, backticks."""
    text = "A [login](auth/login.md#top \"t\") and `mem:auth/login`, [[login|shown]] end\n"
    found = refs(text)
    new = rewrite(text, {r: spelled(r, "auth/login_copy.md", NAMES) for r in found})
    assert new == "A [login](auth/login_copy.md#top \"t\") and `mem:auth/login_copy`, [[login_copy|shown]] end\n"


def test_markdown_respelling_is_relative_to_the_linking_note():
    """From a nested note, the new target is written relative to its folder."""
    (ref,) = refs("[f](../flow.md)", source="auth/x.md")
    assert spelled(ref, "auth/login_copy.md", NAMES) == "login_copy.md"


def test_a_syntax_that_cannot_name_a_note_says_so():
    """Serena names cannot hold a dot, and an id must match one task file: no spelling is offered."""
    (mem,) = refs("`mem:auth/login`")
    assert spelled(mem, "a.b.md", NAMES) is None
    (task,) = refs("[TASK003]")
    assert spelled(task, "flow.md", NAMES) is None


def test_unlinking_keeps_the_words():
    """A reference with no known target becomes its plain words."""
    text = "See [the login](gone.md), `mem:auth/gone` and [[nobody|him]].\n"
    assert rewrite(text, {r: None for r in refs(text)}) == "See the login, `auth/gone` and him.\n"


def test_ambiguous_wiki_names_resolve_to_nothing():
    """A [[name]] two notes answer to means neither; it counts its candidates."""
    names = Names(frozenset({"a/x.md", "b/x.md"}), {})
    (ref,) = find("n.md", "[[x]]", 0, (WIKI,), names)
    assert (ref.target, ref.candidates) == (None, 2)
