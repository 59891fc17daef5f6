"""Schedules: durations, crontab meaning (0 = Sunday), and clear refusals."""

from __future__ import annotations

import datetime as dt

import pytest

from daemon.config import parse_config
from daemon.core.errors import ConfigError
from daemon.schedules import DEFAULT_EVERY, Schedule, cron_fields, parse_duration, parse_schedule

MONDAY_NOON = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)


def _fires(expression: str, count: int = 3, start: dt.datetime = MONDAY_NOON) -> list[dt.datetime]:
    trigger = Schedule(every=None, cron=expression, jitter=0).trigger(dt.timezone.utc)
    times, previous, now = [], None, start
    for _ in range(count):
        previous = trigger.get_next_fire_time(previous, now)
        times.append(previous)
        now = previous + dt.timedelta(seconds=1)
    return times


@pytest.mark.parametrize("text,seconds", [("6h", 21600), ("30m", 1800), ("1h30m", 5400), ("45s", 45), ("2d", 172800), (" 1H ", 3600)])
def test_durations(text, seconds):
    assert parse_duration(text, "every") == seconds


@pytest.mark.parametrize("text", ["6", "h", "6 hours", "-1h", "1.5h", 6, ""])
def test_bad_durations_are_refused_with_an_example(text):
    with pytest.raises(ConfigError, match=r'every must be a duration like "6h"'):
        parse_duration(text, "every")


def test_sunday_is_zero_as_in_crontab():
    """APScheduler alone would read 0 as Monday; dreamd keeps crontab's meaning."""
    fires = _fires("0 3 * * 0")
    assert [f.strftime("%A %H:%M") for f in fires] == ["Sunday 03:00"] * 3
    assert _fires("0 3 * * 7") == fires
    assert _fires("0 3 * * sun") == fires


@pytest.mark.parametrize(
    "field,days",
    [
        ("1-5", "mon,tue,wed,thu,fri"),
        ("*/2", "tue,thu,sat,sun"),  # 0,2,4,6 in cron numbering
        ("5-7", "fri,sat,sun"),
        ("sat,sun", "sat,sun"),
        ("0,6", "sat,sun"),
        ("mon-wed", "mon,tue,wed"),
        ("1/3", "mon,thu,sun"),
        ("*", "*"),
    ],
)
def test_day_of_week_fields_translate_to_day_names(field, days):
    assert cron_fields(f"0 0 * * {field}")["day_of_week"] == days


def test_weekdays_fire_monday_to_friday_only():
    fires = _fires("30 8 * * 1-5", count=7)
    assert {f.strftime("%a") for f in fires} == {"Mon", "Tue", "Wed", "Thu", "Fri"}


def test_macros():
    assert cron_fields("@weekly") == {"minute": "0", "hour": "0", "day": "*", "month": "*", "day_of_week": "sun"}
    assert _fires("@daily", 2)[1] - _fires("@daily", 2)[0] == dt.timedelta(days=1)


@pytest.mark.parametrize(
    "expression,message",
    [
        ("0 3 * *", "needs 5 fields"),
        ("0 3 1 * 1", "restricts both day-of-month and day-of-week"),
        ("0 3 * * 8", "is not a day"),
        ("0 3 * * 5-1", "runs backwards"),
        ("0 3 * * */0", "step must be at least 1"),
        ("@reboot", "is not supported"),
        ("61 * * * *", "cron '61 \\* \\* \\* \\*'"),
        ("0 25 * * *", "cron '0 25"),
    ],
)
def test_bad_cron_is_a_config_error(expression, message):
    with pytest.raises(ConfigError, match=message):
        parse_schedule({"cron": expression}, "store 'a'")


def test_both_day_fields_are_refused_with_advice_that_keeps_one_store_per_folder():
    """The advice is one day field here and a crontab line or timer for the rest, never a second store of the same folder."""
    with pytest.raises(ConfigError) as refused:
        parse_schedule({"cron": "0 3 1 * 1"}, "store 'a'")
    assert refused.value.hint == "restrict only one of the two fields, and pass on the other days from a crontab line or a systemd timer running dreamd pass NAME (a folder is one store, with one schedule)"


def test_every_and_cron_together_are_refused():
    with pytest.raises(ConfigError, match="either 'every' or 'cron'"):
        parse_schedule({"every": "1h", "cron": "0 * * * *"}, "store 'a'")


def test_defaults_and_description():
    assert parse_schedule({}, "s") == Schedule(every=DEFAULT_EVERY, cron=None, jitter=60)
    assert parse_schedule({"every": "90m", "jitter": "0s"}, "s").describe() == "every 1h30m"
    assert parse_schedule({"cron": "0 3 * * 0", "jitter": "5m"}, "s").describe() == "cron 0 3 * * 0 (jitter 5m)"


def test_interval_trigger_fires_at_the_interval():
    trigger = Schedule(every=600, jitter=0).trigger(dt.timezone.utc)
    first = trigger.get_next_fire_time(None, MONDAY_NOON)
    assert trigger.get_next_fire_time(first, first) - first == dt.timedelta(minutes=10)


def test_jitter_delays_within_its_bound():
    trigger = Schedule(every=None, cron="0 3 * * *", jitter=300).trigger(dt.timezone.utc)
    fires = {trigger.get_next_fire_time(None, MONDAY_NOON) for _ in range(30)}
    base = dt.datetime(2026, 12, 1, 3, 0, tzinfo=dt.timezone.utc)
    assert all(base <= f <= base + dt.timedelta(seconds=300) for f in fires)
    assert len(fires) > 1


def test_the_config_carries_each_stores_schedule(tmp_path):
    raw = {"stores": [
        {"name": "a", "path": str(tmp_path / "a"), "preset": "generic", "cron": "0 3 * * 0"},
        {"name": "b", "path": str(tmp_path / "b"), "preset": "generic", "every": "2h", "jitter": "1m"},
    ]}  # fmt: skip
    config = parse_config(raw)
    assert config.stores["a"].schedule.cron == "0 3 * * 0"
    assert config.stores["b"].schedule == Schedule(every=7200, cron=None, jitter=60)
    raw["stores"][0]["cron"] = "0 3 * * 9"
    with pytest.raises(ConfigError, match="store 'a'.*is not a day"):
        parse_config(raw)
