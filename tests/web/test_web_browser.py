"""``dreamd serve`` in a real browser: Debian's chromium, driven by Selenium through its chromedriver.

The server is a real ``dreamd serve`` process over a real store and SQLite file. Screenshots
of the index and of a proposal page go to ``$DREAMD_TEST_ARTIFACTS``, else ``test-artifacts/``
at the repository root. Without chromium the tests skip, unless DREAMD_TEST_BROWSER_REQUIRED=1
(CI), where they fail.
"""

from __future__ import annotations

import importlib.util
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.error import HTTPError
from urllib.request import urlopen

import pytest

from .helpers import serving

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
REQUIRED_ENV = "DREAMD_TEST_BROWSER_REQUIRED"


def _missing() -> str | None:
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            return f"{path} is missing (apt-get install chromium chromium-driver)"
    if importlib.util.find_spec("selenium") is None:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


@pytest.fixture(scope="module")
def driver() -> Iterator[object]:
    """A headless chromium, found at its Debian paths (Selenium Manager has nothing to look up)."""
    why = _missing()
    if why and os.environ.get(REQUIRED_ENV) == "1":
        pytest.fail(f"{REQUIRED_ENV}=1 but {why}")
    if why:
        pytest.skip(why)
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1400"):
        options.add_argument(argument)
    browser = webdriver.Chrome(service=webdriver.ChromeService(executable_path=str(CHROMEDRIVER)), options=options)
    browser.set_page_load_timeout(20)
    yield browser
    browser.quit()


@pytest.fixture
def artifacts() -> Path:
    folder = Path(os.environ.get("DREAMD_TEST_ARTIFACTS") or REPO / "test-artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _states(db_path: Path) -> dict[int, tuple[str, list[tuple[str, str, str | None]]]]:
    """Each proposal's state and its decisions (decision, surface, reason), read from the SQLite file."""
    with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True) as conn:
        states = dict(conn.execute("SELECT id, state FROM proposals"))
        decisions = conn.execute("SELECT proposal_id, decision, surface, reason FROM decisions ORDER BY id").fetchall()
    return {pid: (state, [(d, s, r) for p, d, s, r in decisions if p == pid]) for pid, state in states.items()}


def _wait_for(browser, condition, what: str):  # noqa: ANN001, ANN202
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, 10).until(condition, what)


def test_a_person_accepts_one_proposal_and_rejects_another_in_the_browser(reviewed, db_url, db_path, driver, artifacts, tmp_path):
    """Opening the printed URL, accepting one proposal and rejecting the other with a reason records both in the database."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen

    started = time.monotonic()
    with serving(db_url, tmp_path / "serve.log") as server:
        driver.get(server.url)
        assert driver.current_url == f"{server.base}/"  # the token is now a cookie, not in the address bar
        assert driver.find_element(By.TAG_NAME, "h1").text == "2 pending proposals"
        driver.save_screenshot(str(artifacts / "web-index.png"))

        driver.find_element(By.LINK_TEXT, f"#{reviewed.build}").click()
        _wait_for(driver, seen.url_to_be(f"{server.base}/proposals/{reviewed.build}"), "the proposal page")
        driver.save_screenshot(str(artifacts / "web-proposal.png"))
        driver.find_element(By.ID, "accept").click()
        _wait_for(driver, seen.url_contains("done=accepted"), "the accepted page")
        assert driver.find_element(By.ID, "notice").text == f"#{reviewed.build} accepted; dreamd apply writes it"

        driver.get(f"{server.base}/proposals/{reviewed.hostile}")
        driver.find_element(By.ID, "reason").send_keys("both notes are needed")
        driver.find_element(By.ID, "reject").click()
        _wait_for(driver, seen.url_contains("done=rejected"), "the rejected page")
        assert driver.find_element(By.ID, "state").text == "rejected"
    assert server.process.returncode == 0
    assert _states(db_path) == {
        reviewed.build: ("accepted", [("accept", "web", None)]),
        reviewed.hostile: ("rejected", [("reject", "web", "both notes are needed")]),
    }
    assert time.monotonic() - started < 30


def test_a_request_without_the_token_and_a_form_from_an_earlier_server_are_refused(reviewed, db_url, db_path, driver, tmp_path):
    """Without the token the server answers 403; a form left open across a restart of dreamd serve is refused and decides nothing."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen

    log = tmp_path / "serve.log"
    with serving(db_url, log) as first:
        with pytest.raises(HTTPError) as refused:
            urlopen(f"{first.base}/proposals/{reviewed.build}", timeout=10)
        assert refused.value.code == 403
        driver.get(f"{first.base}/")
        assert driver.find_element(By.TAG_NAME, "h1").text == "Forbidden"
        driver.get(first.url)
        driver.get(f"{first.base}/proposals/{reviewed.build}")
        left_open = driver.current_window_handle
    with serving(db_url, log, port=first.port) as second:
        driver.switch_to.new_window("tab")
        driver.get(second.url)  # signed in to the new server
        driver.switch_to.window(left_open)
        driver.find_element(By.ID, "accept").click()  # a form the first server issued
        notice = _wait_for(driver, seen.presence_of_element_located((By.ID, "notice")), "the refusal")
        assert notice.text == "this form was not issued by this server for this action; reload the page; nothing was accepted"
    assert _states(db_path)[reviewed.build] == ("pending", [])
