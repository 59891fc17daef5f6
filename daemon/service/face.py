"""A room's face: the few names the rest of dreamd may use, each imported on first use.

A room of the service (``passes``, ``apply``, ``review``) offers its face in its
``__init__``: ``from daemon.service.apply import revert`` works, while the modules behind it
stay the room's own (``tests/test_layers.py`` keeps other rooms and the faces out of them).
The face imports nothing until a name is asked for: the no-op lane imports
``daemon.service.passes.noop`` and must not pay for the pass behind it (SQLAlchemy, the
planners).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def face(package: str, names: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, whose ``names`` map each offered name
    to the module (inside the package) that defines it."""

    def getattr_(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    def dir_() -> list[str]:
        return sorted(names)

    return getattr_, dir_
