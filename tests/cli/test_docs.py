"""The README documents every command, and every command explains itself."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import click

from daemon.cli.main import COMMAND_MODULES, cli

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
_CTX = click.Context(cli)
COMMANDS = sorted(name for name in cli.list_commands(_CTX) if not cli.get_command(_CTX, name).hidden)


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_help(name):
    """Each command has a one-line summary for ``dreamd --help``."""
    assert cli.get_command(_CTX, name).get_short_help_str().strip()


def test_every_command_is_found_where_the_group_looks_for_it():
    """COMMAND_MODULES names, for each command, the module whose COMMANDS define it, and
    every module of daemon.cli with COMMANDS is in it: a command left out is not lost."""
    import importlib
    import pkgutil

    import daemon.cli

    defined = {}
    for info in pkgutil.iter_modules(daemon.cli.__path__):
        module = importlib.import_module(f"daemon.cli.{info.name}")
        defined |= {command.name: info.name for command in getattr(module, "COMMANDS", ())}
    assert defined == COMMAND_MODULES


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_is_in_the_readme_table(name):
    """Each command has a row in the README's command table."""
    assert re.search(rf"^\| `dreamd {re.escape(name)}\b", README, re.MULTILINE), name


def test_quick_start_has_exactly_two_commands_and_ci_runs_the_test_one():
    """The quick start shows two shell commands; .ci/run runs the test command verbatim."""
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", quick, re.DOTALL)
    assert len(blocks) == 2 and all(len(b.strip().splitlines()) == 1 for b in blocks)
    ci = (Path(__file__).resolve().parents[2] / ".ci" / "run").read_text(encoding="utf-8")
    assert blocks[1].strip() in ci
    assert "--dry-run --store examples/" in blocks[0]


def test_the_example_config_loads_and_every_preset_it_shows_is_valid():
    """config.example.toml, as shipped, is a config dreamd accepts (its settings checked against each agent's reader)."""
    from daemon.config import load_config

    config = load_config(Path(__file__).resolve().parents[2] / "config.example.toml")
    assert {s.preset for s in config.stores.values()} >= {"deepcode", "claude-code", "cline", "serena"}
    assert config.stores["orchard-claude"].settings.archive_root == "../{notes}.dreamd-archive"


FIRST_USE = README.split("## First real use", 1)[1].split("\n## ", 1)[0] if "## First real use" in README else ""


def test_first_real_use_comes_right_after_the_quick_start_with_five_commands():
    """The README's second section walks a real folder through five dreamd commands."""
    sections = re.findall(r"^## (.+)$", README, re.MULTILINE)
    assert sections[:2] == ["Quick start", "First real use"]
    (block,) = re.findall(r"```sh\n(.*?)```", FIRST_USE, re.DOTALL)
    commands = [line.split("#")[0].split() for line in block.strip().splitlines()]
    assert [c[:2] for c in commands] == [["dreamd", "pass"], ["dreamd", "status"], ["dreamd", "serve"], ["dreamd", "apply"], ["dreamd", "revert"]]


def test_first_real_use_works_as_written(example_store, cli):
    """Its commands, on a copy of the example folder (an accept standing for the browser's):
    the pass records proposals, status names the state database, apply writes the accepted
    one and revert gives every byte back."""
    (block,) = re.findall(r"```sh\n(.*?)```", FIRST_USE, re.DOTALL)
    commands = [line.split("#")[0].split()[1:] for line in block.strip().splitlines()]
    folder = commands[0][2]
    before = {p.name: p.read_bytes() for p in example_store.iterdir()}
    run = [[str(example_store) if arg == folder else arg for arg in args] for args in commands]
    assert cli(*run[0]).out.endswith("11 notes, 6 pending\n")
    assert cli(*run[1]).out.startswith("state database: ")
    assert run[2] == ["serve"] and cli("accept", "1").code == 0
    assert cli(*run[3]).out == "#1 applied\n"
    assert cli(*run[4]).out == "#1 reverted\n"
    assert {p.name: p.read_bytes() for p in example_store.iterdir() if p.name != ".dreamd-archive"} == before
