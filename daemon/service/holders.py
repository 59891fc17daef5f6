"""Who holds a store: ``host:pid`` of a process, and whether such a process is gone.

A lease (``service/leases.py``) and a running pass (its ``runner``) name their process so;
apart from the lease code so that the no-op lane can name itself without the database layer.
"""

from __future__ import annotations

import os


def this_holder() -> str:
    return f"{_host()}:{os.getpid()}"


def _host() -> str:
    """This host's name, as ``socket.gethostname()`` gives it (both are uname's nodename;
    importing socket costs a no-op pass 5 ms)."""
    return os.uname().nodename


def holder_is_dead(holder: str) -> bool:
    """A holder on this host whose process no longer exists."""
    host, _, pid = holder.rpartition(":")
    if host != _host() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
