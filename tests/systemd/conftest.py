"""Fixtures for the tests that run the shipped units under a real systemd (and cron).

``machine`` boots one systemd for the whole session and installs dreamd in it (see
realsystemd.py); ``host`` gives each test that machine back in a known state: no dreamd
unit running, no test drop-in, an empty state directory, fresh stores.

They boot a real systemd, so they run only when asked: with ``DREAMD_TEST_SYSTEMD=1``, or
where they are required (``DREAMD_TEST_SYSTEMD_REQUIRED=1``, which ``.ci/run`` sets, or
``$CI``). A developer's ``pytest`` skips them, saying how to run them. Asked for, without
root, unshare, systemd or cron they are skipped, saying why; where they are required they
fail instead, so that a runner that lost a tool cannot pass them by skipping.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from realsystemd import REPO, Host, Machine, MachineError, install_dreamd, missing_for_cron, missing_for_systemd


ASK = "DREAMD_TEST_SYSTEMD"


def required() -> bool:
    return bool(os.environ.get("CI")) or os.environ.get("DREAMD_TEST_SYSTEMD_REQUIRED") == "1"


def asked() -> bool:
    """Whether this run may boot a real systemd (and cron): asked for, or required."""
    return required() or os.environ.get(ASK) == "1"


def unless_asked() -> None:
    if not asked():
        pytest.skip(f"these tests boot a real systemd (as root, in private namespaces): {ASK}=1 runs them")


def unavailable(reason: str) -> None:
    if required():
        pytest.fail(f"{reason}; the real-systemd tests must run here (CI or DREAMD_TEST_SYSTEMD_REQUIRED=1)", pytrace=False)
    pytest.skip(f"{reason}: the tests that boot a real systemd are skipped")


@pytest.fixture(scope="session")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Machine]:
    unless_asked()
    reason = missing_for_systemd()
    if reason:
        unavailable(reason)
    booted = Machine(tmp_path_factory.mktemp("machine"))
    try:
        try:
            booted.boot()
        except MachineError as exc:
            pytest.fail(f"systemd did not boot in private namespaces: {exc}", pytrace=False)
        install_dreamd(booted, REPO)
        yield booted
    finally:
        booted.poweroff()


@pytest.fixture
def host(machine: Machine) -> Iterator[Host]:
    h = Host(machine)
    h.reset()
    yield h


@pytest.fixture
def cron_host(request: pytest.FixtureRequest) -> Host:
    unless_asked()
    reason = missing_for_cron()  # before booting anything
    if reason:
        unavailable(reason)
    return request.getfixturevalue("host")
