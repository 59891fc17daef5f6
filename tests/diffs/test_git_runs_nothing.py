"""Invariant 11: the git dreamd runs starts nothing a repository's config, its attributes or the
caller's environment names.

A repository names, for every config-driven command git has, a script that leaves a marker
named after its setting: the signature programs (with ``log.showSignature`` and commits signed
in each format touching the cited files), fsmonitor, every hook, pagers, an external diff, a
textconv driver, clean, smudge and process filters, a credential helper, ``core.sshCommand``,
``core.askPass``, an editor and aliases of the built-ins dreamd runs; some of it through
``include.path`` and ``core.attributesFile``. Every git-using command then runs through the CLI,
as a user runs it: a dry run and a pass over a store whose notes cite the repository's files,
``export --dir``, ``export --branch``, a pass after that branch is merged (its proposal found
applied), apply and revert. No marker appears. The control runs plain git there the ordinary
way and sees every marker appear (aliases aside: git never lets one shadow a built-in), so the
scripts do fire.
"""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

EVAL = Path(__file__).resolve().parents[2] / "examples" / "eval"
HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-checkout", "post-merge", "post-index-change", "reference-transaction")
PROGRAMS = (
    "gpg.program", "gpg.x509.program", "gpg.ssh.program", "core.fsmonitor", "core.pager", "pager.log", "diff.external",
    "diff.marked.textconv", "filter.marked.clean", "filter.marked.smudge", "filter.proc.process", "credential.helper",
    "core.sshCommand", "core.askPass", "core.editor",
)  # fmt: skip
ALIASES = ("log", "rev-parse", "hash-object", "update-ref", "commit-tree", "diff", "apply")
PASS_THROUGH = ("filter.marked.clean", "filter.marked.smudge")  # they must give the bytes back, or a checkout would empty files
SIGNATURES = {"src/net/retry.py": "PGP SIGNATURE", "src/auth/session.py": "SIGNED MESSAGE", "src/api/routes.py": "SSH SIGNATURE"}
NOTE = "---\nupdated_at: 2026-03-02\n---\nRetries: src/net/retry.py:88. Sessions: src/auth/session.py. Routes: src/api/routes.py.\n"


def hermetic_git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """git as the tests' own tool: no user or system config (the repository's is read)."""
    full = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", **(env or {})}
    ident = ("-c", "user.name=Owner", "-c", "user.email=owner@example.org")
    return subprocess.run(["git", *ident, *args], cwd=cwd, env=full, capture_output=True, text=True, check=True).stdout


@dataclass
class Marked:
    """A repository whose config names a marker script for every setting, and its markers."""

    top: Path
    markers: Path
    plain: str  # .git/config before the marked settings
    marked: str

    def fired(self) -> set[str]:
        return {p.name for p in self.markers.iterdir()}

    def clear(self) -> None:
        for path in self.markers.iterdir():
            path.unlink()

    @contextmanager
    def unmarked(self):
        """The repository with its plain config, for the test's own git (a merge as its owner makes it)."""
        config = self.top / ".git" / "config"
        config.write_text(self.plain)
        try:
            yield
        finally:
            config.write_text(self.marked)
            self.clear()


def marker_script(folder: Path, name: str, markers: Path) -> str:
    path = folder / name
    body = 'exec cat "$@"' if name in PASS_THROUGH else "exit 0"
    path.write_text(f"#!/bin/sh\ntouch '{markers / name}'\n{body}\n")
    path.chmod(0o755)
    return str(path)


def signed_commit(top: Path, message: str, header: str, when: int) -> None:
    """A commit of the index whose object carries a ``gpgsig`` header: git takes it for signed."""
    tree = hermetic_git(top, "write-tree").strip()
    parent = hermetic_git(top, "rev-parse", "HEAD").strip()
    person = f"Owner <owner@example.org> {when} +0000"
    body = f"tree {tree}\nparent {parent}\nauthor {person}\ncommitter {person}\ngpgsig -----BEGIN {header}-----\n \n AAAA\n -----END {header}-----\n\n{message}\n"
    made = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=top, input=body, capture_output=True, text=True, check=True).stdout.strip()
    hermetic_git(top, "update-ref", "HEAD", made)


def build_marked(tmp_path: Path, store: Path) -> Marked:
    """The repository: the example store in ``memory/`` with a note citing three files of
    ``src/``, each changed after the note by a commit signed in another format; then every
    setting pointed at its marker script."""
    top, markers, scripts = tmp_path / "repo", tmp_path / "markers", tmp_path / "scripts"
    for folder in (top, markers, scripts, scripts / "hooks"):
        folder.mkdir()
    store.rename(top / "memory")
    (top / "memory" / "retry.md").write_text(NOTE)
    for path in SIGNATURES:
        (top / path).parent.mkdir(parents=True, exist_ok=True)
        (top / path).write_text("first\n")
    (top / ".gitattributes").write_text("*.py diff=marked filter=marked\n")
    hermetic_git(top, "init", "-q", "-b", "main")
    hermetic_git(top, "add", ".")
    hermetic_git(top, "commit", "-q", "-m", "memory and sources", env={"GIT_AUTHOR_DATE": "2026-02-01T10:00:00Z", "GIT_COMMITTER_DATE": "2026-02-01T10:00:00Z"})
    for day, (path, header) in enumerate(SIGNATURES.items(), start=10):
        (top / path).write_text("changed\n")
        hermetic_git(top, "add", path)
        signed_commit(top, f"change {path}", header, 1_773_100_000 + day * 86_400)
    config = top / ".git" / "config"
    plain = config.read_text()
    program = {name: marker_script(scripts, name, markers) for name in PROGRAMS}
    for hook in HOOKS:
        marker_script(scripts / "hooks", f"core.hooksPath.{hook}", markers)
        (scripts / "hooks" / hook).symlink_to(scripts / "hooks" / f"core.hooksPath.{hook}")
    settings = {key: value for key, value in program.items() if key != "core.fsmonitor"}
    settings |= {"log.showSignature": "true", "commit.gpgSign": "true", "gpg.ssh.allowedSignersFile": os.devnull}
    settings |= {f"alias.{name}": f"!{marker_script(scripts, f'alias.{name}', markers)}" for name in ALIASES}
    for key, value in settings.items():
        hermetic_git(top, "config", key, value)
    attributes = tmp_path / "attributes"
    attributes.write_text("*.txt filter=proc\n")
    included = tmp_path / "included.gitconfig"  # a repository's config can pull in any file: these come from one
    included_settings = {"core.fsmonitor": program["core.fsmonitor"], "core.hooksPath": str(scripts / "hooks"), "core.attributesFile": str(attributes)}
    for key, value in included_settings.items():
        hermetic_git(top, "config", "--file", str(included), key, value)
    hermetic_git(top, "config", "include.path", str(included))
    return Marked(top, markers, plain, config.read_text())


@pytest.fixture
def marked(tmp_path, monkeypatch, example_store) -> Marked:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)  # the machine's own git config stays out of the test
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    return build_marked(tmp_path, example_store)


def plain_environment() -> dict[str, str]:
    """The environment for the control's plain git: the caller's, less whatever a CI runner or a
    shell may set that outranks the repository's config (``GIT_EDITOR``, ``GIT_PAGER``,
    ``GIT_CONFIG_COUNT``...), so each marked setting is the one git reads."""
    kept = {"GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "GIT_CEILING_DIRECTORIES"}
    outranking = {"EDITOR", "VISUAL", "PAGER", "LESS", "SSH_ASKPASS"}
    env = {key: value for key, value in os.environ.items() if (key in kept or not key.startswith("GIT_")) and key not in outranking}
    return env | {"TERM": "xterm"}  # git starts no editor on a dumb terminal without one named


def on_a_terminal(top: Path, *args: str, env: dict[str, str]) -> None:
    """Plain ``git ARGS`` with its output on a terminal, where git starts its pager."""
    leader, follower = pty.openpty()
    try:
        subprocess.run(["git", *args], cwd=top, env=env, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, timeout=30, check=False)
    finally:
        os.close(follower)
        os.close(leader)


def fire_every_marker(marked: Marked) -> tuple[set[str], list[str]]:
    """Run the ordinary git commands a person runs in the repository; the markers that fired,
    and each command's exit code and last words."""
    top = marked.top
    env = plain_environment()
    outcomes: list[str] = []

    def plain(*args: str, data: str | None = None) -> None:
        ran = subprocess.run(["git", "-c", "user.name=P", "-c", "user.email=p@example.org", *args], cwd=top, env=env, input=data, capture_output=True, text=True, timeout=30, check=False)
        outcomes.append(f"git {' '.join(args)}: exit {ran.returncode} {ran.stderr.strip()[-300:]!r}")

    plain("log", "--format=%s", "--", *SIGNATURES)  # log.showSignature: each format's program
    plain("status")  # fsmonitor
    plain("diff", "HEAD~1", "HEAD")  # diff.external
    plain("diff", "--no-ext-diff", "HEAD~1", "HEAD")  # textconv
    (top / "src" / "net" / "retry.py").write_text("edited\n")
    (top / "notes.txt").write_text("a text file\n")
    plain("add", "notes.txt")  # the process filter (git then gives up: the script speaks no protocol)
    plain("add", "src/net/retry.py")  # the clean filter, post-index-change
    plain("commit", "--no-gpg-sign", "--allow-empty")  # the editor, then the hooks of a commit
    plain("commit", "--no-gpg-sign", "-q", "-m", "edit")
    plain("checkout", "-q", "-b", "side", "HEAD~1")  # smudge, post-checkout, reference-transaction
    plain("merge", "-q", "--no-gpg-sign", "main")  # post-merge
    plain("credential", "fill", data="protocol=https\nhost=example.invalid\n\n")  # the helper, then askpass
    plain("ls-remote", "ssh://example.invalid/repo")  # core.sshCommand
    on_a_terminal(top, "log", "-1", env=env)  # pager.log
    on_a_terminal(top, "diff", "HEAD~1", env=env)  # core.pager
    return marked.fired(), outcomes


def test_control_plain_git_in_the_repository_starts_every_marked_program(marked, tmp_path):
    """The ordinary git commands a person runs there start each marked program: the markers can
    fire. A control, so a second repository is tried when the first falls short (once, in
    CI's run, no commit, checkout or merge hook fired); every command's outcome is shown."""
    expected = {*PROGRAMS, *(f"core.hooksPath.{hook}" for hook in HOOKS)}
    fired, outcomes = fire_every_marker(marked)
    if fired != expected:
        again = tmp_path / "again"
        shutil.copytree(marked.top / "memory", again / "deepcode")
        fired_again, outcomes_again = fire_every_marker(build_marked(again, again / "deepcode"))
        report = ["first repository:", *outcomes, f"missing {sorted(expected - fired)}", "second repository:", *outcomes_again]
        assert fired_again == expected, "\n".join(report)


@pytest.fixture
def config_file(marked, tmp_path) -> Path:
    path = tmp_path / "dreamd.toml"
    path.write_text(f'[[stores]]\nname = "orchard"\npath = "{marked.top / "memory"}"\npreset = "deepcode"\nworkspace = "{marked.top}"\n')
    return path


def test_no_git_dreamd_runs_starts_a_marked_program(marked, config_file, cli, tmp_path, read_tree):
    """Dry run, pass, export --dir and --branch, a pass over the merged branch, apply and revert: 0 markers."""
    fired: dict[str, set[str]] = {}

    def dreamd(step: str, *args: str) -> str:
        marked.clear()
        done = cli("--config", str(config_file), *args)
        fired[step] = marked.fired()
        assert done.code == 0, (step, done.err)
        return done.out

    dry = json.loads(dreamd("pass --dry-run", "pass", "--dry-run", "--json", "orchard"))
    assert any(p["source"].startswith("detector:citation-drift") for p in dry["proposals"])  # git's history was read
    dreamd("pass", "pass", "orchard")
    listed = json.loads(dreamd("proposals", "proposals", "--json"))
    drift = next(p["id"] for p in listed if p["source"].startswith("detector:citation-drift"))
    merge = next(p["id"] for p in listed if p["kind"] == "merge")
    dreamd("export --dir", "export", "--pending", "--dir", str(tmp_path / "patches"))
    dreamd("export --branch", "export", str(merge), "--branch", "review")
    with marked.unmarked():
        hermetic_git(marked.top, "merge", "-q", "--ff-only", "review")
    dreamd("pass after the merge", "pass", "orchard")
    assert json.loads(dreamd("show", "show", str(merge), "--json"))["state"] == "applied"
    dreamd("accept", "accept", str(drift))
    dreamd("apply", "apply", str(drift))
    dreamd("revert", "revert", str(merge))
    assert fired == {step: set() for step in fired}


def test_the_callers_environment_names_no_program_git_runs(marked, config_file, cli, tmp_path, monkeypatch):
    """Config given by the environment (``GIT_CONFIG_COUNT``, ``GIT_CONFIG_PARAMETERS``, a
    ``HOME`` with a ``.gitconfig``), ``GIT_EXTERNAL_DIFF`` and ``GIT_SSH_COMMAND`` reach no git
    dreamd runs: a dry run, export --dir and --branch, and an eval that builds a repository."""
    scripts = tmp_path / "scripts"
    injected = {
        "log.showSignature": "true", "gpg.program": str(scripts / "gpg.program"), "core.hooksPath": str(scripts / "hooks"),
        "core.fsmonitor": str(scripts / "core.fsmonitor"), "core.attributesFile": str(tmp_path / "everything"),
        "diff.marked.textconv": str(scripts / "diff.marked.textconv"), "commit.gpgSign": "true",
    }  # fmt: skip
    (tmp_path / "everything").write_text("* diff=marked\n")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("".join(f"[{k.rsplit('.', 1)[0]}]\n\t{k.rsplit('.', 1)[1]} = {v}\n" for k, v in injected.items()))
    corpus = tmp_path / "corpus"
    shutil.copytree(EVAL / "generic-citations", corpus / "generic-citations")
    shutil.copy(EVAL / "generic-citations.labels.toml", corpus)
    with marked.unmarked():  # the repository's own config is plain: only the environment names programs
        monkeypatch.setenv("GIT_CONFIG_COUNT", str(len(injected)))
        for i, (key, value) in enumerate(injected.items()):
            monkeypatch.setenv(f"GIT_CONFIG_KEY_{i}", key)
            monkeypatch.setenv(f"GIT_CONFIG_VALUE_{i}", value)
        monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.pager'='{scripts / 'core.pager'}'")
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.delenv("GIT_CONFIG_GLOBAL")
        monkeypatch.setenv("GIT_EXTERNAL_DIFF", str(scripts / "diff.external"))
        monkeypatch.setenv("GIT_SSH_COMMAND", str(scripts / "core.sshCommand"))
        fired = {}
        for step, args in {
            "pass --dry-run": ("pass", "--dry-run", "orchard"),
            "pass": ("pass", "orchard"),
            "export --dir": ("export", "--pending", "--dir", str(tmp_path / "patches")),
            "export --branch": ("export", "--pending", "--branch", "review"),
            "eval": ("eval", str(corpus), "--json"),
        }.items():
            marked.clear()
            fired[step] = (cli("--config", str(config_file), *args).code, marked.fired())
    assert fired == {step: (0, set()) for step in fired}


def lazy_workspace(tmp_path: Path, markers: Path) -> Path:
    """A partial clone whose promisor remote is an ``ext::`` command leaving a marker, with
    ``protocol.ext.allow=always``, missing a tree that ``git log`` of the cited file needs."""
    top = tmp_path / "lazy"
    top.mkdir()
    (top / "src").mkdir()
    (top / "src" / "retry.py").write_text("loop\n")
    hermetic_git(top, "init", "-q", "-b", "main")
    hermetic_git(top, "add", ".")
    hermetic_git(top, "commit", "-q", "-m", "retry", env={"GIT_AUTHOR_DATE": "2026-03-10T10:00:00Z", "GIT_COMMITTER_DATE": "2026-03-10T10:00:00Z"})
    tree = hermetic_git(top, "rev-parse", "HEAD:src").strip()
    (top / ".git" / "objects" / tree[:2] / tree[2:]).unlink()
    for key, value in {
        "core.repositoryformatversion": "1", "extensions.partialClone": "origin", "remote.origin.promisor": "true",
        "remote.origin.url": f"ext::sh -c touch% {markers / 'lazy-fetch'}", "protocol.ext.allow": "always",
    }.items():  # fmt: skip
        hermetic_git(top, "config", key, value)
    return top


def test_a_partial_clone_fetches_nothing_its_promisor_remote_would_run(tmp_path, make_store, cli, monkeypatch):
    """A tree missing from a partial clone is not fetched: the pass fails in one line, and the remote's command never ran."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    markers = tmp_path / "markers"
    markers.mkdir()
    workspace = lazy_workspace(tmp_path, markers)
    subprocess.run(["git", "log", "--name-only", "--", "src/retry.py"], cwd=workspace, capture_output=True, check=False)
    assert (markers / "lazy-fetch").exists()  # control: plain git fetches it, running the command
    (markers / "lazy-fetch").unlink()
    store = make_store({"retry.md": "---\nupdated_at: 2026-03-02\n---\nThe loop is in src/retry.py.\n"})
    config = tmp_path / "dreamd.toml"
    config.write_text(f'[[stores]]\nname = "notes"\npath = "{store}"\npreset = "generic"\nworkspace = "{workspace}"\n')
    done = cli("--config", str(config), "pass", "--dry-run", "notes")
    assert (done.code, done.err.startswith(f"error[config]: workspace {workspace}: git cannot read its history")) == (2, True)
    assert list(markers.iterdir()) == []


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving a repository to another user needs root")
NOBODY = 65534


def give_away(top: Path) -> None:
    """The work tree's top folder and its ``.git`` owned by another user (nobody)."""
    os.chown(top, NOBODY, -1)
    for folder, dirs, files in os.walk(top / ".git"):
        os.chown(folder, NOBODY, -1)
        for name in [*dirs, *files]:
            os.chown(os.path.join(folder, name), NOBODY, -1, follow_symlinks=False)


@needs_root
def test_a_workspace_another_user_owns_is_read(marked, config_file, cli):
    """git refuses a repository another user owns; dreamd only reads the workspace with every program off, so it reads it."""
    give_away(marked.top)
    done = cli("--config", str(config_file), "pass", "--dry-run", "--json", "orchard")
    assert done.code == 0, done.err
    assert any(p["source"].startswith("detector:citation-drift") for p in json.loads(done.out)["proposals"])
    assert marked.fired() == set()


@needs_root
def test_export_branch_into_a_repository_another_user_owns_is_refused(marked, config_file, cli):
    """A branch is written only into a repository of the user running dreamd: git's ownership check stands, in one line."""
    assert cli("--config", str(config_file), "pass", "orchard").code == 0
    give_away(marked.top)
    done = cli("--config", str(config_file), "export", "--pending", "--branch", "review")
    memory = marked.top / "memory"
    assert (done.code, done.err) == (2, f"error[config]: {memory} is in a repository another user owns, so dreamd makes no branch in it (run export as its owner, or use --dir DIR)\n")
    assert marked.fired() == set()
