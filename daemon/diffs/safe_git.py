"""Every git process dreamd starts, fenced: nothing a repository's configuration names is run.

dreamd runs git in folders it does not own: the workspace a store's notes describe (``git
log`` for citation drift, on every pass, dry runs included) and the repository of ``export
--branch`` (plumbing that writes objects and one ref); and in folders of its own (diffs in
scratch folders, the repository an eval builds). A repository's
``.git/config``, whatever it pulls in with ``include.path``/``includeIf``, its attributes and
the caller's environment can each make git start a program. Every call goes through ``Git.run``,
which gives git:

An environment built from nothing, not from ``os.environ``:

- ``PATH`` (git finds its helpers) and ``LC_ALL=C`` (messages read back as written);
- ``GIT_CONFIG_NOSYSTEM=1``, ``GIT_CONFIG_GLOBAL=/dev/null``, ``HOME=/dev/null`` and
  ``XDG_CONFIG_HOME=/dev/null``: no system or user config, attributes or ignore file is read
  (nothing can exist below ``/dev/null``, so nobody can put a file there later);
  ``GIT_ATTR_NOSYSTEM=1``: no system attributes file;
- ``GIT_TERMINAL_PROMPT=0``, ``GIT_ASKPASS=`` and ``SSH_ASKPASS=``: git asks nobody for a
  password (an empty ``GIT_ASKPASS`` outranks ``core.askPass`` and ``SSH_ASKPASS``);
- ``GIT_PAGER=cat``, ``GIT_EDITOR=:`` and ``GIT_SEQUENCE_EDITOR=:`` (``:`` is git's "no
  editor"): no pager, no editor;
- ``GIT_ALLOW_PROTOCOL=`` (an empty allow-list, which outranks every ``protocol.<name>.allow``
  of a config) and ``GIT_NO_LAZY_FETCH=1``: no transport at all. A partial clone missing an
  object fails instead of fetching it from its promisor remote, which can be an ``ext::``
  command, ssh with ``core.sshCommand``, or https with credential helpers;
- ``GIT_OPTIONAL_LOCKS=0``: no lock is taken that is not needed;
- nothing else of the caller's: no ``GIT_DIR``, ``GIT_WORK_TREE``, ``GIT_INDEX_FILE``,
  ``GIT_CONFIG_PARAMETERS``/``GIT_CONFIG_COUNT`` (config given by the environment),
  ``GIT_EXTERNAL_DIFF``, ``GIT_SSH_COMMAND``, ``GIT_TEMPLATE_DIR``, ``GIT_EXEC_PATH`` or
  ``GIT_TRACE*``. Kept: ``GIT_CEILING_DIRECTORIES``, which only narrows where git looks for
  a repository, and what dreamd's own code passes for one call (a scratch index, a commit's
  identity and dates).

Then ``--no-pager`` and the ``-c`` overrides below. Config given on the command line outranks
every file and include, and an empty value clears a list (``credential.helper``), so they
hold whatever a repository says; they are on every call since any file can set any key:

- ``core.hooksPath=/dev/null``: no hook file is found (``update-ref`` runs
  reference-transaction, every index write runs post-index-change, a commit its own);
- ``core.fsmonitor=`` (empty, since git up to 2.35 takes ``false`` for a program's path):
  no fsmonitor program or daemon (``ls-files``, ``update-index``, ``write-tree`` ask it);
- ``core.pager=cat``, ``core.editor=:``, ``sequence.editor=:``: as the environment;
- ``core.askPass=``, ``credential.helper=``, ``core.sshCommand=/dev/null/none``: with no
  transport these are never asked for; here in case one is;
- ``log.showSignature=false``: ``git log`` would verify each signed commit it shows with
  ``gpg.program`` (citation drift walks the workspace's history on every pass);
- ``commit.gpgSign=false``: the eval's commits are not signed;
- ``gpg.program``, ``gpg.openpgp.program``, ``gpg.x509.program``, ``gpg.ssh.program`` and
  ``gpg.ssh.defaultKeyCommand`` at ``/dev/null/none``, a path no program can have;
- ``diff.external=`` and ``core.attributesFile=/dev/null`` (with ``--no-ext-diff`` and
  ``--no-textconv`` on each diff): no external diff, no per-user attributes;
- ``protocol.allow=never`` and ``protocol.<name>.allow=never`` for file, git, ssh, http,
  https and ext: the environment's allow-list again, in config;
- ``submodule.recurse=false``: no command recurses into a submodule's own config;
- ``gc.auto=0``, ``maintenance.auto=false``: no automatic gc or maintenance after a commit;
- ``safe.bareRepository=explicit``: a bare repository committed inside a work tree is never
  taken for the repository.

Hooks named in config (git 2.54): ``hook.<name>.command`` runs whatever ``core.hooksPath``
says, and only ``hook.<name>.enabled=false`` stops one, by its name. So each ``Git`` of a
repository lists the ``hook.*`` names its config has, once (``git config --get-regexp``, which
runs nothing), and each of its calls turns every one off through ``GIT_CONFIG_COUNT``, whose
entries keep a name whole (``-c`` would cut one holding ``=``).

Filters and textconv drivers cannot be turned off by name (the repository's attributes name
its own), so no command dreamd runs reads a work tree file, where they act: ``hash-object
--stdin --no-filters``, ``read-tree`` without ``-u``, ``cat-file blob``, ``log --name-only``.
``alias.*`` needs nothing: an alias cannot shadow a built-in, and dreamd runs only built-ins.

``safe.directory``: git refuses a repository another user owns, since its config could run
programs. A ``Git.reading`` (the workspace, read only) passes ``safe.directory=*``: every such
program is off, and a service account may read a developer's history. A ``Git`` that writes
(``export --branch``) keeps git's check: a branch is made only in a repository of the user
running dreamd.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from daemon.core.errors import DiffError

NOWHERE = "/dev/null/none"  # below a device: no program can ever be there

ENVIRONMENT = {
    "LC_ALL": "C",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "HOME": os.devnull,
    "XDG_CONFIG_HOME": os.devnull,
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
    "GIT_PAGER": "cat",
    "GIT_EDITOR": ":",
    "GIT_SEQUENCE_EDITOR": ":",
    "GIT_ALLOW_PROTOCOL": "",
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_OPTIONAL_LOCKS": "0",
}
KEPT = ("GIT_CEILING_DIRECTORIES",)
TRANSPORTS = ("file", "git", "ssh", "http", "https", "ext")
OVERRIDES: tuple[tuple[str, str], ...] = (
    ("core.hooksPath", os.devnull),
    ("core.fsmonitor", ""),
    ("core.pager", "cat"),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("core.askPass", ""),
    ("credential.helper", ""),
    ("core.sshCommand", NOWHERE),
    ("log.showSignature", "false"),
    ("commit.gpgSign", "false"),
    ("gpg.program", NOWHERE),
    ("gpg.openpgp.program", NOWHERE),
    ("gpg.x509.program", NOWHERE),
    ("gpg.ssh.program", NOWHERE),
    ("gpg.ssh.defaultKeyCommand", NOWHERE),
    ("diff.external", ""),
    ("core.attributesFile", os.devnull),
    ("protocol.allow", "never"),
    *((f"protocol.{name}.allow", "never") for name in TRANSPORTS),
    ("submodule.recurse", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("safe.bareRepository", "explicit"),
)


def git_binary() -> str:
    found = shutil.which("git")
    if not found:
        raise DiffError("git is not installed", hint="install git: dreamd uses its diff engine")
    return found


def environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The fixed environment of every git process, with ``extra`` (the caller's own) on top."""
    kept = {name: os.environ[name] for name in KEPT if name in os.environ}
    return {"PATH": os.environ.get("PATH", os.defpath), **ENVIRONMENT, **kept, **(extra or {})}


def fence(*, any_owner: bool = False) -> list[str]:
    """The options before the subcommand: ``--no-pager`` and every ``-c`` override."""
    pairs = [*OVERRIDES, ("safe.directory", "*")] if any_owner else OVERRIDES
    return ["--no-pager", *(arg for key, value in pairs for arg in ("-c", f"{key}={value}"))]


@dataclass(frozen=True)
class Git:
    """git fenced for one folder: a repository (written into unless made with ``reading``),
    or, made with ``scratch``, a folder of dreamd's own where git looks for no repository
    above it and no config but its own can be."""

    cwd: Path
    any_owner: bool = False
    own: bool = False

    @classmethod
    def reading(cls, folder: Path) -> Git:
        """A repository only read: any user may own it (see the module's docstring)."""
        return cls(folder, any_owner=True)

    @classmethod
    def scratch(cls, folder: Path) -> Git:
        return cls(folder, own=True)

    def run(self, *args: str, data: bytes | None = None, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
        """``git ARGS`` at the folder, fenced; never raises for git's exit status."""
        return self._spawn(args, data, {**self._hooks_off, **(env or {})})

    def _spawn(self, args: tuple[str, ...], data: bytes | None, extra: Mapping[str, str]) -> subprocess.CompletedProcess[bytes]:
        if self.own:
            extra = {"GIT_CEILING_DIRECTORIES": str(self.cwd.parent), **extra}
        command = [git_binary(), "-C", str(self.cwd), *fence(any_owner=self.any_owner), *args]
        return subprocess.run(command, env=environment(extra), input=data, capture_output=True, check=False)  # noqa: S603 - fixed argv

    @cached_property
    def _hooks_off(self) -> dict[str, str]:
        """``hook.<name>.enabled=false`` for each hook name the repository's config has, as
        ``GIT_CONFIG_COUNT`` entries (none in a folder of dreamd's own)."""
        if self.own:
            return {}
        listed = self._spawn(("config", "-z", "--name-only", "--get-regexp", r"^hook\."), None, {}).stdout
        names = sorted({key[len("hook.") : key.rindex(".")] for key in listed.decode("utf-8", "surrogateescape").split("\0") if key.count(".") >= 2})
        env = {"GIT_CONFIG_COUNT": str(len(names))} if names else {}
        for i, name in enumerate(names):
            env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = f"hook.{name}.enabled", "false"
        return env
