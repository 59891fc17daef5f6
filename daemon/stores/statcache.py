"""The stat cache: a file unchanged since a pass read it is not read or hashed again.

As git's index does: a pass records each file's size, mtime, inode and ctime with its
hash; a later scan that finds all four the same takes the recorded hash. Any write
changes mtime and ctime, a replaced file has another inode, and ctime cannot be set back
(``touch -d`` or ``rsync -t`` restore mtime, never ctime). What four equal fields cannot
show is a write in the same clock tick as the reading: a file whose mtime or ctime is not
clearly older than the scan that read it is "racily clean" and is read again, every pass,
until a reading comes clearly after its last change.

The cache only lets a pass conclude "nothing changed" without reading: a pass that plans
reads every file from its bytes (``service.workspace.read_whole``), and apply, revert and
recovery re-hash every file they touch (``service.journal``, ``stores.files``), so a
change the cache missed is noticed there and nothing is written over it.
"""

from __future__ import annotations

from typing import NamedTuple

# How much older than the reading scan a file's mtime and ctime must be to be trusted. A
# file system's timestamps come from the kernel's coarse clock (a tick, up to 10 ms, behind
# the wall clock a scan reads) and are truncated to its granularity (2 s on FAT, 1 s on
# some network file systems), so a write just after a scan began can look older than it.
RACY_NS = 2_000_000_000


class Seen(NamedTuple):
    """A file as a scan read it: its stat, its hash, and when that scan began (wall clock)."""

    size: int
    mtime_ns: int
    ino: int
    ctime_ns: int
    hash: str
    scanned_ns: int

    def trusted(self) -> bool:
        """Whether the file was last changed clearly before it was read (not racily clean)."""
        return max(self.mtime_ns, self.ctime_ns) < self.scanned_ns - RACY_NS
