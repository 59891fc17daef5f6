"""Reading a policy file: TOML, validated, with every problem tied to a line of the file.

Refused at load, whatever else the file says (the hard invariants): a rule that could accept
a lossy merge, a rule that accepts pinned notes, and any setting about pinned notes, scope or
compare-and-swap — those stay outside any policy's reach.
"""

from __future__ import annotations

import math
import os
import re
import stat
import sys
import tomllib
from pathlib import Path
from typing import Any

from daemon.core.errors import ConfigError
from daemon.core.hashing import hash_bytes
from daemon.core.spelling import did_you_mean
from daemon.core.proposals import KINDS
from daemon.policies.engine import rule_violations
from daemon.policies.model import DECISIONS, Limits, Policy, Rule

TOP_KEYS = {"name", "description", "limits", "rules"}
LIMIT_KEYS = {"max_per_pass", "max_per_day", "max_retire"}
RULE_KEYS = {"decide", "reason", "kind", "source", "min_confidence", "max_confidence", "lossy", "min_notes",
             "max_notes", "paths", "frontmatter", "min_age_days", "max_age_days", "max_changed_lines", "dangling"}  # fmt: skip
_FORBIDDEN = re.compile(r"pin|scope|compare|swap|(?:^|[_-])cas(?:$|[_-])", re.IGNORECASE)
_SYNTAX_LINE = re.compile(r"\(at line (\d+), column (\d+)\)")
_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]*\Z")


class PolicyError(ConfigError):
    """A policy file that cannot be used; ``problems`` are ``FILE:LINE: message`` lines."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(problems[0] + more, hint="dreamd policy check FILE lists every problem")


SHIPPED = ("default", "strict", "trusting")


def shipped_policy(name: str) -> Path | None:
    """The file of a policy shipped with dreamd: the checkout's policies/, else where a
    wheel installs them (<prefix>/share/dreamd/policies)."""
    if name not in SHIPPED:
        return None
    checkout = Path(__file__).resolve().parents[2] / "policies" / f"{name}.toml"
    return checkout if checkout.is_file() else Path(sys.prefix) / "share" / "dreamd" / "policies" / f"{name}.toml"


def policy_file(given: str, base: Path) -> Path:
    """The file ``given`` names: a shipped policy by name, else a path (relative to ``base``).
    A bare name that is neither (no folder, no .toml, no such file) is a misspelt name: one
    ConfigError naming the shipped ones, not a file that cannot be read."""
    shipped = shipped_policy(given)
    if shipped is not None:
        return shipped
    path = (base / Path(given).expanduser()).resolve()
    if "/" not in given and not given.endswith(".toml") and not path.exists():
        raise ConfigError(f"policy {given!r} is neither a shipped policy nor a file{did_you_mean(given, SHIPPED)}",
                          hint=f"shipped policies: {', '.join(SHIPPED)}; or give the path of a policy file")  # fmt: skip
    return path


class NotRegularFileError(OSError):
    """A path that names a FIFO, a device, a socket or a folder where a file was expected."""

    def __init__(self, path: Path, kind: str) -> None:
        super().__init__(f"{path} is {kind}, not a regular file")
        self.kind = kind


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))  # fmt: skip


def _refuse_unless_regular(path: Path, mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise NotRegularFileError(path, next((kind for test, kind in _KINDS if test(mode)), "not a file"))


def read_regular_file(path: Path) -> bytes:
    """The bytes of the regular file at ``path``; NotRegularFileError for anything else.

    A config or policy named by mistake as a FIFO would block a plain read forever (until
    a writer comes), a device could never end. So the path is looked at first, opened
    non-blocking (opening a FIFO then returns at once) and looked at again on the open
    descriptor, in case it was swapped in between: no byte is read from anything else.
    """
    _refuse_unless_regular(path, os.stat(path).st_mode)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    with open(fd, "rb", closefd=True) as file:
        _refuse_unless_regular(path, os.fstat(fd).st_mode)
        return file.read()


def load_policy(path: str | Path) -> Policy:
    """Read and validate the policy at ``path``; raise PolicyError with every problem found."""
    path = Path(path)
    try:
        data = read_regular_file(path)
    except NotRegularFileError as exc:
        raise PolicyError([f"{path}: cannot read: it is {exc.kind}, not a regular file"]) from None
    except OSError as exc:
        raise PolicyError([f"{path}: cannot read: {exc.strerror or exc}"]) from None
    return parse_policy(data, str(path))


def parse_policy(data: bytes, label: str = "<policy>") -> Policy:
    try:
        text = data.decode("utf-8")
        doc = tomllib.loads(text)
    except UnicodeDecodeError:
        raise PolicyError([f"{label}:1: not UTF-8 text"]) from None
    except tomllib.TOMLDecodeError as exc:
        found = _SYNTAX_LINE.search(str(exc))
        line = found.group(1) if found else "1"
        raise PolicyError([f"{label}:{line}: TOML syntax: {_SYNTAX_LINE.sub('', str(exc)).strip()}"]) from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise PolicyError([f"{label}:1: TOML nests arrays or tables too deeply to read"]) from None
    lines = Lines(text)
    problems: list[tuple[int, str]] = []
    policy = _policy(doc, lines, problems, hash_bytes(data)[:12])
    if problems:
        raise PolicyError([f"{label}:{n}: {msg}" for n, msg in sorted(problems, key=lambda p: p[0])])
    return policy


class Lines:
    """Where things are in the file's text: the n-th ``[[rules]]``, ``[limits]``, a key within."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.rules = [i + 1 for i, ln in enumerate(self.lines) if re.match(r"\s*\[\[\s*rules\s*\]\]", ln)]
        heads = [i + 1 for i, ln in enumerate(self.lines) if re.match(r"\s*\[", ln)]
        self.heads = heads
        self.limits = next((i + 1 for i, ln in enumerate(self.lines) if re.match(r"\s*\[\s*limits\s*\]", ln)), None)

    def rule(self, index: int) -> int:
        return self.rules[index] if index < len(self.rules) else 1

    def key(self, key: str, section: int | None) -> int:
        """The line of ``key =`` inside the section starting at line ``section`` (0/None: top level)."""
        start = section or 0
        end = next((h for h in self.heads if h > start), len(self.lines) + 1) - 1
        pattern = re.compile(rf"\s*[\"']?{re.escape(key)}[\"']?\s*[=.]")
        for n in range(start + 1 if section else 1, end + 1):
            if pattern.match(self.lines[n - 1]):
                return n
        return section or 1


def _policy(doc: dict[str, Any], lines: Lines, problems: list[tuple[int, str]], digest: str) -> Policy:
    for key in doc:
        if key not in TOP_KEYS:
            problems.append((lines.key(key, None), _unknown(key, "policy", TOP_KEYS)))
    name = doc.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        problems.append((lines.key("name", None), "name = \"...\" is required: letters, digits, '.', '_', '-'"))
        name = "unnamed"
    limits = _limits(doc.get("limits", {}), lines, problems)
    raw_rules = doc.get("rules", [])
    if not isinstance(raw_rules, list) or not all(isinstance(r, dict) for r in raw_rules):
        problems.append((lines.key("rules", None), "rules must be [[rules]] tables"))
        raw_rules = []
    rules = tuple(_rule(raw, i, lines, problems) for i, raw in enumerate(raw_rules))
    return Policy(name=name, rules=rules, limits=limits, digest=digest)


def _unknown(key: str, where: str, known: set[str]) -> str:
    if _FORBIDDEN.search(key):
        return (f"{key}: pinned notes, scope and compare-and-swap are hard invariants; "
                "no policy can change them")  # fmt: skip
    return f"unknown {where} key {key!r} (known: {', '.join(sorted(known))})"


def _limits(raw: Any, lines: Lines, problems: list[tuple[int, str]]) -> Limits:
    if not isinstance(raw, dict):
        problems.append((lines.key("limits", None), "limits must be a table"))
        return Limits()
    values: dict[str, int] = {}
    for key, value in raw.items():
        line = lines.key(key, lines.limits)
        if key not in LIMIT_KEYS:
            problems.append((line, _unknown(key, "limits", LIMIT_KEYS)))
        elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
            problems.append((line, f"limits.{key} must be a whole number >= 0, not {value!r}"))
        else:
            values[key] = value
    return Limits(**values)


def _rule(raw: dict[str, Any], index: int, lines: Lines, problems: list[tuple[int, str]]) -> Rule:
    head = lines.rule(index)
    found: list[tuple[int, str]] = []
    values: dict[str, Any] = {}
    for key, value in raw.items():
        line = lines.key(key, head)
        if key not in RULE_KEYS:
            found.append((line, _unknown(key, "rule", RULE_KEYS)))
            continue
        try:
            values.update(_value(key, value))
        except ValueError as exc:
            found.append((line, f"{key}: {exc}"))
    if "decide" not in raw:
        found.append((head, f"rule {index + 1} needs decide = \"accept\" | \"reject\" | \"hold\""))
    for low, high in (("min_confidence", "max_confidence"), ("min_notes", "max_notes"), ("min_age_days", "max_age_days")):
        if values.get(low) is not None and values.get(high) is not None and values[low] > values[high]:
            found.append((lines.key(low, head), f"{low} is above {high}: the rule can never match"))
    if found:
        problems.extend(found)
        return Rule(decide="hold", line=head)
    rule = Rule(line=head, **values)
    for message in rule_violations(rule):
        problems.append((head, f"rule {index + 1} refused: {message}"))
    return rule


def _strings(value: Any, allowed: tuple[str, ...] | None = None) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or not all(isinstance(v, str) and v for v in items):
        raise ValueError(f"must be a string or a non-empty list of strings, not {value!r}")
    for item in items:
        if allowed is not None and item not in allowed:
            raise ValueError(f"{item!r} is not one of {', '.join(allowed)}")
    return tuple(items)


def _number(value: Any, low: float, high: float = math.inf, whole: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)) or not low <= value <= high:
        kind = "a whole number" if whole else "a number"
        bound = f"{low}..{high}" if high != math.inf else f">= {low}"
        raise ValueError(f"must be {kind} {bound}, not {value!r}")
    return value


def _value(key: str, value: Any) -> dict[str, Any]:
    if key == "decide":
        if value not in DECISIONS:
            raise ValueError(f"must be one of {', '.join(DECISIONS)}, not {value!r}")
        return {"decide": value}
    if key == "reason":
        if not isinstance(value, str):
            raise ValueError("must be a string")
        return {"reason": value}
    if key in ("kind", "source", "paths"):
        return {{"kind": "kinds", "source": "sources"}.get(key, key): _strings(value, KINDS if key == "kind" else None)}
    if key in ("min_confidence", "max_confidence"):
        return {key: float(_number(value, 0.0, 1.0))}
    if key in ("lossy", "dangling"):
        if not isinstance(value, bool):
            raise ValueError(f"must be true or false, not {value!r}")
        return {key: value}
    if key in ("min_notes", "max_notes", "max_changed_lines"):
        return {key: int(_number(value, 0, whole=True))}
    if key in ("min_age_days", "max_age_days"):
        return {key: float(_number(value, 0))}
    return {"frontmatter": _frontmatter(value)}


def _frontmatter(value: Any) -> dict[str, tuple[Any, ...]]:
    if not isinstance(value, dict) or not value:
        raise ValueError("must be a table of key = allowed value(s), e.g. { type = [\"feedback\"] }")
    table: dict[str, tuple[Any, ...]] = {}
    for key, allowed in value.items():
        items = allowed if isinstance(allowed, list) else [allowed]
        if not items or not all(isinstance(v, (str, int, float, bool)) for v in items):
            raise ValueError(f"{key}: allowed values must be a scalar or a non-empty list of scalars")
        table[key] = tuple(items)
    return table
