"""The fence of every git process (daemon/diffs/safe_git.py), against real git: what git sees of
the caller's environment, of a repository's hook names, and which repository it finds."""

from __future__ import annotations

import ast
import os
import subprocess
from pathlib import Path

import pytest

from daemon.diffs import safe_git
from daemon.diffs.safe_git import Git


def init(folder: Path) -> Path:
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(folder)], check=True, env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"})
    return folder


def set_config(repo: Path, key: str, value: str) -> None:
    subprocess.run(["git", "config", "--file", str(repo / ".git" / "config"), key, value], check=True)


def test_every_hook_name_a_repository_configures_is_turned_off_by_name(tmp_path):
    """git 2.54 runs ``hook.<name>.command`` whatever core.hooksPath says: git sees each such
    name set ``enabled=false``, a name holding ``=`` or dots taken whole."""
    repo = init(tmp_path / "repo")
    for name in ("lint", "a=b", "x.y"):
        set_config(repo, f"hook.{name}.command", "touch marker")
        set_config(repo, f"hook.{name}.event", "reference-transaction")
    set_config(repo, "hook.jobs", "4")  # a setting of all hooks, no name
    shown = Git(repo).run("config", "--get-regexp", r"^hook\..*\.enabled$").stdout.decode()
    assert shown == "hook.a=b.enabled false\nhook.lint.enabled false\nhook.x.y.enabled false\n"


@pytest.mark.parametrize("name", ["GIT_DIR", "GIT_WORK_TREE"])
def test_the_callers_repository_variables_do_not_redirect_git(tmp_path, monkeypatch, name):
    """Started from inside another repository's hook (``GIT_DIR``/``GIT_WORK_TREE`` set), git still reads the folder it was given."""
    mine, other = init(tmp_path / "mine"), init(tmp_path / "other")
    monkeypatch.setenv(name, str(other / ".git") if name == "GIT_DIR" else str(other))
    top = Git.reading(mine).run("rev-parse", "--show-toplevel").stdout.decode().strip()
    assert top == str(mine)


def test_a_scratch_folder_is_in_no_repository_even_inside_one(tmp_path):
    """A folder of dreamd's own inside someone's work tree: git finds no repository there."""
    scratch = init(tmp_path / "repo") / "scratch"
    scratch.mkdir()
    done = Git.scratch(scratch).run("rev-parse", "--git-dir")
    assert (done.returncode, b"not a git repository" in done.stderr) == (128, True)


def test_the_environment_is_the_fixed_one_with_only_the_ceiling_kept(monkeypatch):
    """Nothing of the caller's reaches git but PATH and GIT_CEILING_DIRECTORIES."""
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", "/somewhere")
    for name in ("GIT_CONFIG_PARAMETERS", "GIT_EXEC_PATH", "GIT_TEMPLATE_DIR", "GIT_INDEX_FILE", "LD_PRELOAD"):
        monkeypatch.setenv(name, "x")
    assert safe_git.environment() == {"PATH": os.environ["PATH"], **safe_git.ENVIRONMENT, "GIT_CEILING_DIRECTORIES": "/somewhere"}


def test_the_docstring_names_every_setting():
    """Each override and environment entry is explained in the module's docstring."""
    doc = safe_git.__doc__ or ""
    transports = {f"protocol.{name}.allow" for name in safe_git.TRANSPORTS}  # written once, as protocol.<name>.allow
    missing = [key for key, _ in safe_git.OVERRIDES if key not in doc and key not in transports]
    missing += [name for name in safe_git.TRANSPORTS if name not in doc]
    missing += [name for name in safe_git.ENVIRONMENT if name not in doc]
    assert missing == []


STARTS = {("subprocess", name) for name in ("run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput")}
STARTS |= {("os", name) for name in ("system", "popen", "execv", "execve", "execvp", "execvpe", "execl", "execlp", "spawnv", "spawnvp", "posix_spawn", "posix_spawnp")}
OTHER_PROGRAMS = {"scheduler/worker.py": "dreamd's own worker", "service/passes/notify.py": "the user's configured notify command"}


def test_only_the_fence_starts_git():
    """No module of the package starts a process but safe_git.py, dreamd's worker and the user's notify command, so no git call can skip the fence."""
    package = Path(safe_git.__file__).resolve().parents[1]
    starting = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (node.value.id, node.attr) in STARTS:
                starting.add(str(path.relative_to(package)))
    assert starting == {"diffs/safe_git.py", *OTHER_PROGRAMS}
