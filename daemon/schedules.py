"""When a store's pass runs: ``every = "6h"`` or ``cron = "0 3 * * 0"``, with ``jitter``.

A cron expression means what it means in crontab(5), in the host's local time. APScheduler
reads a numeric day-of-week with 0 as Monday, so that field is expanded here into day names
(``0 3 * * 0`` is Sunday, as in crontab), and the one cron rule APScheduler cannot express —
a day-of-month and a day-of-week both restricted, which cron ORs — is refused, not guessed.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, NamedTuple

from daemon.core.errors import ConfigError

DEFAULT_EVERY = 6 * 3600
DEFAULT_JITTER = 60  # seconds; spreads stores (and hosts) that share a schedule
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"(\d+)([smhd])")
_MACROS = {
    "@hourly": "0 * * * *", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0", "@monthly": "0 0 1 * *", "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *",
}  # fmt: skip
_CRON_DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]  # cron's numbering: 0 (and 7) is Sunday
_WEEK_ORDER = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]


class Schedule(NamedTuple):
    every: int | None = DEFAULT_EVERY  # seconds between passes, or None for cron
    cron: str | None = None  # five crontab fields
    jitter: int = DEFAULT_JITTER  # seconds of random delay added to each run

    def describe(self) -> str:
        base = f"every {format_duration(self.every)}" if self.every else f"cron {self.cron}"
        return f"{base} (jitter {format_duration(self.jitter)})" if self.jitter else base

    def trigger(self, timezone: Any = None) -> Any:
        """The APScheduler trigger; ``timezone`` None means the host's local zone."""
        from apscheduler.triggers.cron import CronTrigger
        from apscheduler.triggers.interval import IntervalTrigger

        jitter = self.jitter or None
        if self.every:
            return IntervalTrigger(seconds=self.every, jitter=jitter, timezone=timezone)
        return CronTrigger(**cron_fields(self.cron or ""), jitter=jitter, timezone=timezone)


def parse_duration(value: Any, what: str) -> int:
    """``"6h"``, ``"90m"``, ``"1h30m"``, ``"45s"``, ``"2d"`` → seconds."""
    text = value.strip().lower().replace(" ", "") if isinstance(value, str) else ""
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ConfigError(f"{what} must be a duration like \"6h\", \"30m\", \"1h30m\" or \"45s\", not {value!r}")
    return sum(int(n) * _UNITS[u] for n, u in parts)


def format_duration(seconds: int) -> str:
    out = ""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size:
            out += f"{seconds // size}{unit}"
            seconds %= size
    return out or "0s"


def parse_schedule(entry: dict[str, Any], where: str) -> Schedule:
    """A store entry's ``every``/``cron``/``jitter`` keys; neither means every 6 hours."""
    if "every" in entry and "cron" in entry:
        raise ConfigError(f"{where}: give either 'every' or 'cron', not both")
    jitter = parse_duration(entry["jitter"], f"{where}: jitter") if "jitter" in entry else DEFAULT_JITTER
    if "cron" in entry:
        if not isinstance(entry["cron"], str):
            raise ConfigError(f"{where}: cron must be a string like \"0 3 * * 0\"")
        expression = " ".join(entry["cron"].split())
        schedule = Schedule(every=None, cron=expression, jitter=jitter)
        try:
            schedule.trigger(dt.timezone.utc)  # APScheduler checks every field's range
        except ValueError as exc:
            raise ConfigError(f"{where}: cron {expression!r}: {exc}") from None
        except ConfigError as exc:
            raise ConfigError(f"{where}: cron: {exc}", hint=exc.hint or None) from None
        return schedule
    every = parse_duration(entry["every"], f"{where}: every") if "every" in entry else DEFAULT_EVERY
    if every < 1:
        raise ConfigError(f"{where}: every must be at least 1s")
    return Schedule(every=every, cron=None, jitter=jitter)


def cron_fields(expression: str) -> dict[str, str]:
    """CronTrigger keyword arguments for a crontab expression (or an @macro)."""
    text = _MACROS.get(expression.strip().lower(), expression)
    if text.startswith("@"):
        raise ConfigError(f"{expression!r} is not supported (use one of {', '.join(sorted(_MACROS))})")
    fields = text.split()
    if len(fields) != 5:
        raise ConfigError(f"{expression!r} needs 5 fields: minute hour day-of-month month day-of-week")
    minute, hour, day, month, weekday = fields
    if day not in ("*", "?") and weekday not in ("*", "?"):
        raise ConfigError(
            f"{expression!r} restricts both day-of-month and day-of-week; cron runs on either, "
            "which dreamd cannot express", hint="restrict only one of the two fields, and pass on the other days from a crontab line or a systemd timer running dreamd pass NAME (a folder is one store, with one schedule)")
    return {"minute": minute, "hour": hour, "day": "*" if day == "?" else day, "month": month, "day_of_week": _weekdays(weekday)}


def _weekdays(field: str) -> str:
    """crontab's day-of-week field (0 or 7 = Sunday, names, ranges, steps) as day names."""
    if field in ("*", "?"):
        return "*"
    days: set[int] = set()
    for part in field.lower().split(","):
        base, _, step_text = part.partition("/")
        if step_text and not step_text.isdigit():
            raise ConfigError(f"day-of-week {field!r}: bad step {step_text!r}")
        step = int(step_text) if step_text else 1
        if step < 1:
            raise ConfigError(f"day-of-week {field!r}: step must be at least 1")
        if base == "*":
            first, last = 0, 6
        elif "-" in base:
            low, high = base.split("-", 1)
            first, last = _day(low, field), _day(high, field)
            if first > last:
                raise ConfigError(f"day-of-week {field!r}: range {base!r} runs backwards")
        else:
            first = _day(base, field)
            last = 7 if step_text else first  # "1/2": from Monday on, every other day
        days.update(d % 7 for d in range(first, last + 1, step))
    return ",".join(name for name in _WEEK_ORDER if _CRON_DAYS.index(name) in days)


def _day(token: str, field: str) -> int:
    if token in _CRON_DAYS:
        return _CRON_DAYS.index(token)
    if token.isdigit() and 0 <= int(token) <= 7:
        return int(token)
    raise ConfigError(f"day-of-week {field!r}: {token!r} is not a day (0-7 or sun-sat)")
