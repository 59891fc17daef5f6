"""A real systemd, booted as PID 1 of private namespaces, to run the shipped units in.

The tests beside this module install dreamd the way systemd/README.md says (a venv in
/opt/dreamd, the ``dreamd`` user, /etc/dreamd/config.toml, the unit files copied verbatim
into /etc/systemd/system, a ReadWritePaths= drop-in) and then start, reload, stop, kill and
time the units with systemctl. None of that may reach the machine the tests run on, which
other processes share, so the machine is built like a container:

- PID, mount, UTS, IPC and cgroup namespaces of its own (``unshare``), ``container=`` set so
  that systemd knows it is in one (and skips what only a real boot may do: remounting
  file systems read-only at shutdown, setting the clock);
- fresh tmpfs on /run, /tmp, /var/tmp, /srv and /dev (a few device nodes bound in), so
  that whatever systemd cleans or creates at boot is its own;
- /etc, /var, /opt and /usr/sbin as overlays whose writes land in RAM: the user, the
  config, the units, the state directory, the venv and cron's mailer exist only in there;
- /proc/sys and /sys read-only, and a cgroup of its own below the one pytest runs in;
- every unit a stock boot would start is masked, except journald (and cron, for the cron
  tests); the machine boots to basic.target.

Everything it holds goes away with its PID 1: ``poweroff()``, or a SIGKILL of ``unshare``
(``--kill-child``) when that hangs or pytest itself is killed, and the cgroup is removed
afterwards. ``Host`` (at the end) is one test's view of it: the paths the tests use, the
README's ``dreamd`` alias, the config, drop-ins, and the reset between tests.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

SYSTEMD_CANDIDATES = ("/lib/systemd/systemd", "/usr/lib/systemd/systemd")
PYTHON = "/usr/bin/python3"  # the service user cannot run a Python that lives under /root
CRON = "/usr/sbin/cron"
PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
REPO = Path(__file__).resolve().parents[2]

# Units that must never run in the machine even if nothing seems to want them: they write
# kernel settings, clocks, devices or host-wide state, or clean /tmp.
ALWAYS_MASKED = """
systemd-tmpfiles-setup.service systemd-tmpfiles-setup-dev.service systemd-tmpfiles-setup-dev-early.service
systemd-tmpfiles-clean.service systemd-tmpfiles-clean.timer systemd-sysctl.service systemd-modules-load.service
systemd-udevd.service systemd-udev-trigger.service systemd-udev-settle.service systemd-remount-fs.service
systemd-timesyncd.service systemd-pstore.service systemd-binfmt.service proc-sys-fs-binfmt_misc.automount
systemd-random-seed.service systemd-update-utmp.service systemd-logind.service systemd-journal-flush.service
systemd-journald-audit.socket kmod-static-nodes.service getty.target console-getty.service
systemd-networkd.service systemd-resolved.service fstrim.timer e2scrub_all.timer e2scrub_reap.service
""".split()
# What a stock boot starts that the machine needs: the journal (the units log there).
KEPT = ("systemd-journald.service", "systemd-journald.socket", "systemd-journald-dev-log.socket", "cron.service")

# Runs as PID 1 of the new namespaces, then becomes systemd. Mount propagation is made
# private first, so that no mount below reaches the machine outside.
BOOT_SCRIPT = r"""
set -eu
umask 022
systemd=$SYSTEMD kept=$KEPT always_masked=$ALWAYS_MASKED
unset SYSTEMD KEPT ALWAYS_MASKED  # PID 1's environment is no place for them
mount --make-rprivate /
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run
layers=/run/.machine-layers
mkdir -p "$layers"
for d in etc var opt usr/sbin; do
  name=$(echo "$d" | tr / -)
  mkdir -p "$layers/$name.upper" "$layers/$name.work"
  mount -t overlay overlay -o "lowerdir=/$d,upperdir=$layers/$name.upper,workdir=$layers/$name.work" "/$d"
done
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /var/tmp
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /srv

# /dev: a few nodes of the real one, so that nothing created there (/dev/log, nodes from
# tmpfiles) reaches the machine's.
mkdir "$layers/dev"
mount --rbind /dev "$layers/dev"
mount -t tmpfs -o mode=0755,nosuid tmpfs /dev
for n in null zero full random urandom tty; do
  touch "/dev/$n"
  mount --bind "$layers/dev/$n" "/dev/$n"
done
umount -l "$layers/dev"
rmdir "$layers/dev"
mkdir /dev/pts /dev/shm
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /dev/pts
ln -s pts/ptmx /dev/ptmx
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm
ln -s /proc/self/fd /dev/fd
ln -s fd/0 /dev/stdin
ln -s fd/1 /dev/stdout
ln -s fd/2 /dev/stderr

# Kernel tunables and sysfs read-only (a bind remount changes this mount only, never the
# file system); a cgroup2 tree whose root is the cgroup made for this machine.
mount --bind /proc/sys /proc/sys
mount -o remount,bind,ro /proc/sys
mount -o remount,bind,ro /sys
mount -t cgroup2 cgroup2 /sys/fs/cgroup

# Mask what a stock boot would start (in the overlay: the machine's /etc is untouched).
for f in /etc/systemd/system/*.wants/* /etc/systemd/system/*.requires/* \
         /lib/systemd/system/*.wants/* /lib/systemd/system/*.requires/* \
         /usr/lib/systemd/system/*.wants/* /usr/lib/systemd/system/*.requires/*; do
  [ -e "$f" ] || [ -L "$f" ] || continue
  n=${f##*/}
  case " $kept " in *" $n "*) continue ;; esac
  ln -sfn /dev/null "/etc/systemd/system/$n"
done
for n in $always_masked; do
  ln -sfn /dev/null "/etc/systemd/system/$n"
done
exec "$systemd" --log-target=journal --log-level=info --show-status=false --unit=basic.target
"""


class MachineError(RuntimeError):
    pass


def wait_until(check: Callable[[], T], timeout: float, what: str, explain: Callable[[], str] | None = None, every: float | None = None) -> T:
    """Poll ``check`` until it returns something true; its value. Fails saying ``what``.
    Polls quickly at first, then every 0.2 s; ``every`` fixes the interval instead."""
    deadline = time.monotonic() + timeout
    delay = every or 0.02
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            detail = explain() if explain else ""
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}" + (f"\n{detail}" if detail else ""))
        time.sleep(delay)
        delay = every or min(delay * 1.5, 0.2)


def wait_for(fetch: Callable[[], T], accept: Callable[[T], object], timeout: float, what: str, explain: Callable[[], str] | None = None) -> T:
    """Poll ``fetch`` until ``accept`` takes what it returned; that value."""
    found: list[T] = []

    def check() -> bool:
        value = fetch()
        if accept(value):
            found.append(value)
            return True
        return False

    wait_until(check, timeout, what, explain)
    return found[0]


def systemd_binary() -> str | None:
    return next((p for p in SYSTEMD_CANDIDATES if os.access(p, os.X_OK)), None)


def missing_for_systemd() -> str | None:
    """Why a machine cannot be booted here, or None."""
    if os.geteuid() != 0:
        return "booting systemd in private namespaces needs root"
    for tool in ("unshare", "nsenter", "setpriv", "systemctl", "journalctl", "useradd", "runuser", "mount"):
        if not shutil.which(tool, path=PATH):
            return f"{tool} is not installed"
    if not systemd_binary():
        return f"no systemd binary ({' or '.join(SYSTEMD_CANDIDATES)}; Debian: apt-get install systemd)"
    if not os.access(PYTHON, os.X_OK):
        return f"{PYTHON} is missing (the venv for the service user is made from it)"
    probe = subprocess.run([PYTHON, "-c", "import ensurepip, venv"], capture_output=True, check=False)
    if probe.returncode != 0:
        return f"{PYTHON} cannot make venvs (Debian: apt-get install python3-venv)"
    probe = subprocess.run(["unshare", "--cgroup", "--pid", "--fork", "--mount", "--mount-proc", "--uts", "--ipc", "/bin/true"],
                           capture_output=True, text=True, check=False)  # fmt: skip
    if probe.returncode != 0:  # e.g. root in a container that may not make namespaces
        return f"cannot make private namespaces here ({probe.stderr.strip() or probe.returncode})"
    if cgroup2_mount() is None:
        return "no cgroup2 hierarchy is mounted"
    if "overlay" not in Path("/proc/filesystems").read_text(encoding="utf-8"):
        subprocess.run(["modprobe", "overlay"], capture_output=True, check=False)
        if "overlay" not in Path("/proc/filesystems").read_text(encoding="utf-8"):
            return "the kernel has no overlay file system"
    return None


def missing_for_cron() -> str | None:
    if not os.access(CRON, os.X_OK):
        return f"{CRON} is missing (Debian: apt-get install cron)"
    if not any(Path(d, "cron.service").exists() for d in ("/lib/systemd/system", "/usr/lib/systemd/system")):
        return "the cron package ships no cron.service"
    return None


def cgroup2_mount() -> Path | None:
    """The directory of this process's cgroup in the cgroup2 hierarchy."""
    own = next((line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines() if line.startswith("0::")), None)
    if own is None:
        return None
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields = left.split()
        if right.split()[:1] == ["cgroup2"]:
            root, mountpoint = fields[3], fields[4]
            relative = os.path.relpath(own, root) if own.startswith(root) else own.lstrip("/")
            path = Path(mountpoint) / ("" if relative == "." else relative)
            if path.is_dir():
                return path
    return None


def remove_stale_cgroups(parent: Path) -> None:
    """Remove the cgroups of machines whose session was killed before it could: only trees
    named by a pytest process that is gone, and holding no process at all."""
    for tree in parent.glob("dreamd-test-*"):
        owner = tree.name.split("-")[2]
        if not owner.isdigit() or Path(f"/proc/{owner}").exists():
            continue
        folders = sorted((p for p in tree.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True) + [tree]
        try:
            if any((folder / "cgroup.procs").read_text().strip() for folder in folders):
                continue
            for folder in folders:
                folder.rmdir()
        except OSError:
            continue


class Machine:
    """A booted systemd in private namespaces; commands run in it through ``nsenter``."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.boot_log = workdir / "boot.log"
        self.cgroup: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.pid = 0  # systemd's PID as the machine outside sees it

    # -- life -----------------------------------------------------------------------------

    def boot(self, timeout: float = 60) -> None:
        parent = cgroup2_mount()
        assert parent is not None
        remove_stale_cgroups(parent)
        self.cgroup = parent / f"dreamd-test-{os.getpid()}-{secrets.token_hex(3)}"
        self.cgroup.mkdir()
        env = {"container": "dreamd-test", "PATH": PATH, "LANG": "C.UTF-8", "SYSTEMD": systemd_binary() or "",
               "KEPT": " ".join(KEPT), "ALWAYS_MASKED": " ".join(ALWAYS_MASKED)}  # fmt: skip
        # The shell joins the new cgroup before unshare, so that the cgroup namespace's root
        # is that cgroup and everything systemd creates lives below it.
        launcher = 'echo $$ > "$1/cgroup.procs" && exec unshare --cgroup --pid --fork --kill-child --mount --mount-proc --uts --ipc /bin/sh -c "$2"'
        # setpriv --pdeathsig: should pytest itself be killed, unshare gets SIGKILL, and so
        # (--kill-child) does the whole machine; nothing outlives the session.
        with open(self.boot_log, "wb") as log:
            self.process = subprocess.Popen(["setpriv", "--pdeathsig", "KILL", "--", "/bin/sh", "-c", launcher, "sh", str(self.cgroup), BOOT_SCRIPT], env=env,
                                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        self.pid = wait_until(self._init_pid, 15, "unshare to start PID 1", self.diagnose)
        state = wait_until(self._booted, timeout, "systemd to finish booting", self.diagnose)
        if state != "running":
            raise MachineError(f"the machine booted {state}:\n{self.systemctl('--failed', '--no-legend', check=False).stdout}")

    def _init_pid(self) -> int:
        if self.process is None or self.process.poll() is not None:
            raise MachineError(f"unshare exited {self.process and self.process.returncode}:\n{self.diagnose()}")
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        try:
            found = children.read_text().split()
        except OSError:
            return 0
        if not found:
            return 0
        pid = int(found[0])
        try:  # PID 1 has become systemd (before that it is the boot script's shell)
            return pid if Path(f"/proc/{pid}/exe").resolve().name == "systemd" else 0
        except OSError:
            return 0

    def _booted(self) -> str:
        if self.process is None or self.process.poll() is not None:
            raise MachineError(f"the machine stopped while booting:\n{self.diagnose()}")
        done = self.run("systemctl", "is-system-running", check=False, timeout=10)
        state = done.stdout.strip()
        return state if state in ("running", "degraded") else ""

    def poweroff(self, timeout: float = 30) -> None:
        """``systemctl poweroff``; SIGKILL for the whole machine if it does not end in time."""
        if self.process is not None and self.process.poll() is None:
            if self.pid:
                # SIGTERM would only make PID 1 re-execute itself
                self.run("systemctl", "poweroff", "--no-block", check=False, timeout=10)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()  # unshare --kill-child: PID 1 gets SIGKILL, and with it every process in the namespace
                self.process.wait(10)
        self._remove_cgroup()

    def _remove_cgroup(self) -> None:
        if self.cgroup is None or not self.cgroup.exists():
            return
        kill = self.cgroup / "cgroup.kill"

        def removed() -> bool:
            if kill.exists():  # anything still in there is the machine's: end it (Linux 5.14+)
                try:
                    kill.write_text("1")
                except OSError:
                    pass
            for folder in sorted((p for p in self.cgroup.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True) + [self.cgroup]:
                try:
                    folder.rmdir()
                except OSError:
                    pass
            return not self.cgroup.exists()

        wait_until(removed, 20, f"the machine's cgroup {self.cgroup} to empty")

    def diagnose(self) -> str:
        parts = []
        try:
            parts.append("boot log:\n" + self.boot_log.read_text(errors="replace")[-3000:])
        except OSError:
            pass
        if self.pid and self.process is not None and self.process.poll() is None:
            done = self.run("journalctl", "--no-pager", "-n", "60", "-o", "short-monotonic", check=False, timeout=10)
            parts.append("journal:\n" + done.stdout[-6000:])
        return "\n".join(parts)

    # -- commands -------------------------------------------------------------------------

    def path(self, inside: str | Path) -> Path:
        """A path of the machine, reached from outside through its PID 1's root."""
        return Path(f"/proc/{self.pid}/root") / str(inside).lstrip("/")

    def run(self, *argv: str, user: str | None = None, env: dict[str, str] | None = None, input: str | None = None,
            check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:  # fmt: skip
        """Run a command in the machine (as root, or as ``user`` through runuser)."""
        base = {"PATH": PATH, "LANG": "C.UTF-8", "HOME": "/root", "SYSTEMD_PAGER": "", "SYSTEMD_COLORS": "0"}
        command = ["nsenter", f"--target={self.pid}", "--mount", "--pid", "--uts", "--ipc", "--cgroup", "--",
                   "env", "-i", *(f"{k}={v}" for k, v in base.items())]  # fmt: skip
        if user:
            command += ["runuser", "-u", user, "--"]
        command += ["env", *(f"{k}={v}" for k, v in (env or {}).items()), *argv]
        done = subprocess.run(command, input=input, capture_output=True, text=True, timeout=timeout, check=False)
        if check and done.returncode != 0:
            raise MachineError(f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        return done

    def systemctl(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return self.run("systemctl", *args, check=check, timeout=timeout)

    def show(self, unit: str, *properties: str) -> dict[str, str]:
        done = self.systemctl("show", unit, *(f"--property={p}" for p in properties))
        return dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)

    def prop(self, unit: str, name: str) -> str:
        return self.show(unit, name).get(name, "")

    def journal(self, unit: str | None = None, *, since: str | None = None) -> list[str]:
        """The journal's messages (``-o cat``), of one unit or all."""
        args = ["journalctl", "--no-pager", "-o", "cat", "--quiet"]
        args += ["-u", unit] if unit else []
        args += ["--after-cursor", since] if since else []
        return self.run(*args, check=False, timeout=30).stdout.splitlines()

    def cursor(self) -> str:
        """A journal position; ``journal(since=...)`` shows only what came after it."""
        # the last entry's cursor: --after-cursor leaves that entry out too
        done = self.run("journalctl", "--no-pager", "-n", "1", "-o", "cat", "--show-cursor", "--quiet", check=False, timeout=30)
        found = re.search(r"-- cursor: (\S+)", done.stdout)
        return found.group(1) if found else ""

    def json_lines(self, unit: str, since: str | None = None) -> list[dict[str, Any]]:
        """The unit's log lines that are JSON objects (dreamd logs one per event)."""
        out = []
        for line in self.journal(unit, since=since):
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
        return out

    def cgroup_pids(self, unit: str) -> list[int]:
        """The unit's processes, by the PIDs the machine outside sees (to signal them)."""
        assert self.cgroup is not None
        procs = self.cgroup / "system.slice" / unit / "cgroup.procs"
        try:
            return [int(p) for p in procs.read_text().split()]
        except (OSError, ValueError):
            return []

    def write(self, inside: str, text: str, mode: int = 0o644, owner: str | None = None) -> Path:
        path = self.path(inside)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        path.chmod(mode)
        if owner:
            uid, gid = self.ids(owner)
            os.chown(path, uid, gid)
        return path

    def ids(self, user: str) -> tuple[int, int]:
        """A user's uid and gid in the machine (no user namespace: the same numbers outside)."""
        for line in self.path("/etc/passwd").read_text().splitlines():
            fields = line.split(":")
            if fields[0] == user:
                return int(fields[2]), int(fields[3])
        raise KeyError(user)

    def chown_tree(self, inside: str, user: str) -> None:
        uid, gid = self.ids(user)
        root = self.path(inside)
        for folder, dirs, files in os.walk(root):
            os.chown(folder, uid, gid)
            for name in files:
                os.chown(os.path.join(folder, name), uid, gid, follow_symlinks=False)

    def copy_tree(self, source: Path, inside: str, ignore: Iterable[str] = ("__pycache__", "*.pyc")) -> None:
        target = self.path(inside)
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(source, target, ignore=shutil.ignore_patterns(*ignore), symlinks=True)


# -- dreamd, installed as systemd/README.md says -----------------------------------------

SOURCES = ("pyproject.toml", "README.md", "daemon", "prompts", "policies")  # what building dreamd reads
UNIT_FILES = ("dreamd.service", "dreamd-pass@.service", "dreamd-pass@.timer")
# What pip may need to reach a package registry from inside the machine.
PIP_ENV_PREFIXES = ("PIP_",)
PIP_ENV_NAMES = {"http_proxy", "https_proxy", "no_proxy", "all_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"}


def pip_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith(PIP_ENV_PREFIXES) or k in PIP_ENV_NAMES or k.lower() in PIP_ENV_NAMES}


def pip_can_target() -> bool:
    """Whether the running interpreter has a pip that installs into another one (22.3+)."""
    done = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True, text=True, check=False)
    found = re.match(r"pip (\d+)\.(\d+)", done.stdout)
    return done.returncode == 0 and found is not None and (int(found.group(1)), int(found.group(2))) >= (22, 3)


def install_dreamd(machine: Machine, repo: Path) -> None:
    """Steps 1, 2 and 5 of systemd/README.md: /opt/dreamd, the dreamd user, the units.

    Step 1 installs from requirements.lock, which adds litellm and psycopg (~40 s more to
    install); these tests configure no model and use SQLite, so dreamd's own dependencies
    are installed, from the checkout as it is (uncommitted changes included).
    """
    machine.run("useradd", "--system", "--home-dir", "/var/lib/dreamd", "--shell", "/usr/sbin/nologin", "dreamd")
    source = "/var/tmp/dreamd-source"
    machine.path(source).mkdir(parents=True)
    for name in SOURCES:
        origin = repo / name
        if origin.is_dir():
            machine.copy_tree(origin, f"{source}/{name}")
        else:
            shutil.copy(origin, machine.path(f"{source}/{name}"))
    pip = ("install", "--quiet", "--disable-pip-version-check", source)
    # the test session's interpreter is seen in the machine only if it lives outside the
    # folders the machine mounts afresh (a checkout under /tmp is not)
    if pip_can_target() and machine.run("test", "-x", sys.executable, check=False).returncode == 0:
        # ensurepip alone takes ~7 s: this session's own pip installs into the new venv instead
        machine.run(PYTHON, "-m", "venv", "--without-pip", "/opt/dreamd")
        machine.run(sys.executable, "-m", "pip", "--python", "/opt/dreamd/bin/python", *pip, env=pip_env(), timeout=900)
    else:
        machine.run(PYTHON, "-m", "venv", "/opt/dreamd")
        machine.run("/opt/dreamd/bin/pip", *pip, env=pip_env(), timeout=900)
    shutil.rmtree(machine.path(source))
    for name in UNIT_FILES:
        shutil.copy(repo / "systemd" / name, machine.path(f"/etc/systemd/system/{name}"))
        machine.path(f"/etc/systemd/system/{name}").chmod(0o644)
    machine.systemctl("daemon-reload")


# -- one test's view of the machine ------------------------------------------------------

EXAMPLE = REPO / "examples" / "deepcode-memory"
FILE_MTIME_NS = 1_700_000_000 * 10**9  # one time for every note: survivors are chosen by path, not by copy order

CONFIG = "/etc/dreamd/config.toml"
STATE = "/var/lib/dreamd"
STORES = "/srv/stores"
NOTES = f"{STORES}/notes"  # a copy of the example store: duplicates, drift, proposals to make
CLEAN = f"{STORES}/clean"  # a store with nothing to propose
OUTSIDE = "/srv/outside"  # writable by the dreamd user, but not listed in ReadWritePaths=
MAIL = "/run/dreamd-test-mail"  # where the sendmail stand-in keeps what cron mails
TEST_DROP_IN = "zz-test.conf"  # a test's own drop-ins; the README's override.conf stays
DREAMD_UNITS = ("dreamd.service", "dreamd-pass@*.timer", "dreamd-pass@*.service", "cron.service")

# systemd/README.md step 6, for the stores the tests write to.
README_DROP_IN = f"[Service]\nReadWritePaths=\nReadWritePaths={NOTES}\nReadWritePaths={CLEAN}\n"

CLEAN_FILES = {
    "MEMORY.md": "# Project memory\n\n- [Architecture](architecture.md) — how the parts fit\n- [Style rules](style-rules.md) — house style\n",
    "architecture.md": (EXAMPLE / "architecture.md").read_text(encoding="utf-8"),
    "style-rules.md": (EXAMPLE / "style-rules.md").read_text(encoding="utf-8"),
}


def store_config(name: str, path: str, extra: str = "") -> str:
    return f'[[stores]]\nname = "{name}"\npath = "{path}"\npreset = "deepcode"\njitter = "0s"\n{extra}\n'


class Host:
    """The session's machine, as one test uses it."""

    def __init__(self, machine: Machine) -> None:
        self.m = machine
        self.since = ""  # the journal's position when the test began: older lines are not its own

    def __getattr__(self, name: str):  # run, systemctl, show, path… of the machine
        return getattr(self.m, name)

    def journal(self, unit: str | None = None, *, since: str | None = None) -> list[str]:
        """What was logged since the test began (or since ``since``)."""
        return self.m.journal(unit, since=since or self.since or None)

    def json_lines(self, unit: str, since: str | None = None) -> list[dict[str, Any]]:
        return self.m.json_lines(unit, since=since or self.since or None)

    def dreamd(self, *args: str, check: bool = True, env: dict[str, str] | None = None):
        """The README's alias: dreamd as the service user, with its state directory and config."""
        return self.m.run("/opt/dreamd/bin/dreamd", "--config", CONFIG, *args, user="dreamd", check=check,
                          env={"STATE_DIRECTORY": STATE, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **(env or {})})  # fmt: skip

    def write_config(self, text: str) -> None:
        """/etc/dreamd/config.toml as systemd/README.md step 3 installs it: root's, group dreamd, 0640."""
        path = self.m.write(CONFIG, text, mode=0o640)
        os.chown(path, 0, self.m.ids("dreamd")[1])

    def drop_in(self, unit: str, text: str, name: str = TEST_DROP_IN) -> None:
        self.m.write(f"/etc/systemd/system/{unit}.d/{name}", text)
        self.m.systemctl("daemon-reload")

    def make_store(self, inside: str, files: dict[str, str] | None = None, owner: str = "dreamd") -> Path:
        root = self.m.path(inside)
        if root.exists():
            shutil.rmtree(root)
        if files is None:
            shutil.copytree(EXAMPLE, root)
        else:
            root.mkdir(parents=True)
            for rel, text in files.items():
                (root / rel).write_text(text, encoding="utf-8")
        for path in root.rglob("*"):
            os.utime(path, ns=(FILE_MTIME_NS, FILE_MTIME_NS))
        self.m.chown_tree(inside, owner)  # step 4: the service user may write its stores
        return root

    def status_text(self, unit: str = "dreamd.service") -> str:
        return self.m.prop(unit, "StatusText")

    def wait_status(self, needle: str, timeout: float = 60, unit: str = "dreamd.service") -> str:
        return wait_for(lambda: self.status_text(unit), lambda text: needle in text, timeout,
                        f"{unit}'s STATUS= line to say {needle!r}", lambda: self.explain(unit))  # fmt: skip

    def wait_state(self, active: str, timeout: float = 60, unit: str = "dreamd.service") -> dict[str, str]:
        props = ("ActiveState", "SubState", "Result", "MainPID", "NRestarts", "ExecMainCode", "ExecMainStatus", "StatusText")
        return wait_for(lambda: self.m.show(unit, *props), lambda shown: shown["ActiveState"] == active, timeout,
                        f"{unit} to be {active}", lambda: self.explain(unit))  # fmt: skip

    def explain(self, unit: str = "dreamd.service") -> str:
        shown = self.m.systemctl("status", "--no-pager", "--lines=0", unit, check=False).stdout
        return f"{shown}\njournal of {unit}:\n" + "\n".join(self.journal(unit)[-40:])

    def reset(self) -> None:
        m = self.m
        # SIGKILL first: a pass a test left frozen or draining must not hold up the next test
        m.systemctl("kill", "--signal=SIGKILL", *DREAMD_UNITS, check=False)
        m.systemctl("stop", *DREAMD_UNITS, check=False)
        m.systemctl("disable", "dreamd.service", "dreamd-pass@notes.timer", check=False)
        for drop_in in m.path("/etc/systemd/system").glob(f"*.d/{TEST_DROP_IN}"):
            drop_in.unlink()
        for name in ("dreamd.service", "dreamd-pass@.service"):
            m.write(f"/etc/systemd/system/{name}.d/override.conf", README_DROP_IN)
        m.systemctl("daemon-reload")
        m.systemctl("reset-failed", check=False)  # also forgets the start rate limit's count
        for inside in (STATE, STORES, OUTSIDE, MAIL, "/run/crond.reboot", "/etc/cron.d/dreamd"):
            path = m.path(inside)
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
        self.make_store(NOTES)
        self.make_store(CLEAN, CLEAN_FILES)
        self.write_config(store_config("notes", NOTES))
        self.since = m.cursor()


