"""Run a command under the seccomp filters a unit's sandbox would install, rebuilt with libseccomp.

    python seccomp_sandbox.py UNIT -- COMMAND [ARG...]

systemd turns ``SystemCallFilter=``, ``MemoryDenyWriteExecute=`` and
``RestrictAddressFamilies=`` into seccomp filters when it starts a service. Without a
running systemd to start the unit, this script installs equivalent filters in its own
process (the rules of systemd 252's seccomp-util.c, with the system call groups that
``systemd-analyze syscall-filter`` lists) and then executes COMMAND, so a test can show
what dreamd does under them: a filtered system call kills the process with SIGSYS, as
systemd's default action does; W+X memory fails with EPERM; other socket families with
EAFNOSUPPORT. The rest of the sandbox (mounts, users, namespaces) is not reproduced.

Exit 77 (and a line on stderr): seccomp filters cannot be installed on this machine.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import socket
import subprocess
import sys
from pathlib import Path

from unitfile import parse, value, values  # run as a script: this folder is on sys.path

UNAVAILABLE = 77

SCMP_ACT_KILL_PROCESS = 0x80000000
SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_EQ, SCMP_CMP_GT, SCMP_CMP_MASKED_EQ = 4, 6, 7
PROT_WRITE, PROT_EXEC, SHM_EXEC = 0x2, 0x4, 0o100000


def scmp_act_errno(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


class ArgCmp(ctypes.Structure):
    """struct scmp_arg_cmp"""

    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]


def unavailable(why: str) -> None:
    print(f"seccomp_sandbox: {why}", file=sys.stderr)
    raise SystemExit(UNAVAILABLE)


def libseccomp() -> ctypes.CDLL:
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError as exc:
        unavailable(f"libseccomp cannot be loaded ({exc})")
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint, ctypes.POINTER(ArgCmp)]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    return lib


class Filter:
    def __init__(self, lib: ctypes.CDLL, default_action: int) -> None:
        self.lib = lib
        self.ctx = lib.seccomp_init(default_action)
        if not self.ctx:
            unavailable("seccomp_init failed")

    def add(self, action: int, name: str, *cmps: tuple[int, int, int, int]) -> None:
        number = self.lib.seccomp_syscall_resolve_name(name.encode())
        if number < 0:  # not a system call of this architecture (e.g. setuid32 on x86-64)
            return
        array = (ArgCmp * max(1, len(cmps)))(*(ArgCmp(*c) for c in cmps))
        rc = self.lib.seccomp_rule_add_array(self.ctx, action, number, len(cmps), array)
        if rc != 0:
            raise SystemExit(f"seccomp_sandbox: cannot add a rule for {name}: {os.strerror(-rc)}")

    def load(self) -> None:
        rc = self.lib.seccomp_load(self.ctx)
        self.lib.seccomp_release(self.ctx)
        if rc != 0:
            unavailable(f"seccomp_load failed: {os.strerror(-rc)}")


def syscall_groups() -> dict[str, list[str]]:
    """``@group`` -> its members (names and nested groups), as systemd-analyze lists them."""
    listing = subprocess.run(["systemd-analyze", "syscall-filter", "--no-pager"], capture_output=True, text=True, check=True).stdout
    groups: dict[str, list[str]] = {}
    current = None
    for line in listing.splitlines():
        if line.startswith("@"):
            current = groups.setdefault(line.strip(), [])
        elif current is not None and line.strip() and not line.strip().startswith("#"):
            current.append(line.strip())
    return groups


def expand(groups: dict[str, list[str]], items: list[str]) -> set[str]:
    out: set[str] = set()
    for item in items:
        out |= expand(groups, groups[item]) if item.startswith("@") else {item}
    return out


def allowed_syscalls(assignments: list[str], groups: dict[str, list[str]]) -> set[str]:
    """The allow list systemd builds from SystemCallFilter= lines (the first one not "~")."""
    allowed: set[str] | None = None
    for assignment in assignments:
        if not assignment:
            allowed = None
            continue
        deny = assignment.startswith("~")
        names = expand(groups, assignment.lstrip("~").split())
        if allowed is None:
            if deny:
                raise SystemExit("seccomp_sandbox: only allow lists are rebuilt (a first SystemCallFilter= without ~)")
            allowed = expand(groups, ["@default"])  # systemd adds @default to every allow list
        allowed = allowed - names if deny else allowed | names
    if allowed is None:
        raise SystemExit("seccomp_sandbox: the unit sets no SystemCallFilter=")
    return allowed


def main() -> None:
    args = sys.argv[1:]
    if len(args) < 3 or args[1] != "--":
        raise SystemExit(__doc__)
    unit, command = Path(args[0]), args[2:]
    directives = parse(unit)
    lib = libseccomp()

    # Argument filters first: once the allow list is loaded, seccomp() itself is refused.
    args_filter = Filter(lib, SCMP_ACT_ALLOW)
    families = values(directives, "Service", "RestrictAddressFamilies")
    if families:
        allowed = {getattr(socket, name) for name in families[-1].split()}
        for family in range(max(allowed)):
            if family not in allowed:
                args_filter.add(scmp_act_errno(errno.EAFNOSUPPORT), "socket", (0, SCMP_CMP_EQ, family, 0))
        args_filter.add(scmp_act_errno(errno.EAFNOSUPPORT), "socket", (0, SCMP_CMP_GT, max(allowed), 0))
    if value(directives, "Service", "MemoryDenyWriteExecute") in ("yes", "true", "1", "on"):
        eperm = scmp_act_errno(errno.EPERM)
        args_filter.add(eperm, "mmap", (2, SCMP_CMP_MASKED_EQ, PROT_WRITE | PROT_EXEC, PROT_WRITE | PROT_EXEC))
        args_filter.add(eperm, "mprotect", (2, SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC))
        args_filter.add(eperm, "pkey_mprotect", (2, SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC))
        args_filter.add(eperm, "shmat", (2, SCMP_CMP_MASKED_EQ, SHM_EXEC, SHM_EXEC))
    args_filter.load()

    error_number = value(directives, "Service", "SystemCallErrorNumber")
    default = scmp_act_errno(getattr(errno, error_number)) if error_number else SCMP_ACT_KILL_PROCESS
    allow_list = Filter(lib, default)
    for name in sorted(allowed_syscalls(values(directives, "Service", "SystemCallFilter"), syscall_groups())):
        allow_list.add(SCMP_ACT_ALLOW, name)
    allow_list.load()
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
