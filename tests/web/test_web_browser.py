"""``dreamd serve`` in a real browser: Debian's chromium, driven by Selenium through its chromedriver.

One real ``dreamd serve`` process serves the module, over real stores and a SQLite file; the
keyboard flow, an apply and a long diff's layout are driven through it (the last test starts
servers of its own: it restarts one). Screenshots go to ``$DREAMD_TEST_ARTIFACTS``, else
``test-artifacts/`` at the repository root. Without chromium the tests skip, unless DREAMD_TEST_BROWSER_REQUIRED=1
(CI), where they fail.
"""

from __future__ import annotations

import importlib.util
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.error import HTTPError
from urllib.request import urlopen

import pytest

from .helpers import Served, pass_over, serving

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


@dataclass(frozen=True)
class Site:
    """One ``dreamd serve`` for the module, over two stores: four pairs of copies (four merges,
    in id order) and an index of 600 entries, 200 of them dangling and the whole past what
    DeepCode loads (a reindex and a compaction of every line)."""

    server: Served
    db_path: Path
    small: Path
    merges: list[int]
    retired: str  # the note the last merge retires
    compaction: int


def _files(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def _note(name: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: {name.lower()}\ntype: reference\n---\n\n{body}\n"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    from daemon.config import Config
    from daemon.service.context import App
    from daemon.service.proposals import list_proposals

    top = tmp_path_factory.mktemp("site")
    notes = {f"{name}.md": _note(name.title(), f"{name.title()} runs with make {name}.") for name in ("alpha", "beta", "gamma", "delta")}
    copies = {name.replace(".md", "-copy.md"): text for name, text in notes.items()}
    hooks = "".join(f"- [{name[:-3].title()}]({name}) — {name[:-3]}, " + "and the long story of how it came to be " * (4 if name == "alpha-copy.md" else 0) + "in short\n" for name in sorted({**notes, **copies}))
    small = _files(top / "a-small", {"MEMORY.md": f"# Memory\n\n{hooks}", **notes, **copies})
    entries = "".join(f"- [Note {i}](note-{i:03d}.md) — what note {i} is about, in a few words\n" for i in range(600))
    large = _files(top / "b-large", {"MEMORY.md": f"# Memory\n\n{entries}", **{f"note-{i:03d}.md": _note(f"Note {i}", f"Note {i}.") for i in range(600) if i % 3}})
    db_path = top / "state.db"
    app = App(config=Config(), db_url=f"sqlite:///{db_path}")
    for root in (small, large):
        pass_over(app, root)
    views = list_proposals(app)
    app.close()
    merges = sorted(v.id for v in views if v.store == str(small))
    (compaction,) = [v.id for v in views if v.source.startswith("detector:index-limit@")]
    assert len(merges) == 4
    (retired,) = [path for v in views if v.id == merges[-1] for path, digest in v.result.items() if digest is None]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DREAMD_")} | {"XDG_STATE_HOME": str(top / "xdg-state"), "XDG_CONFIG_HOME": str(top / "xdg-config")}
    with serving(f"sqlite:///{db_path}", top / "serve.log", env=env) as server:
        yield Site(server, db_path, small, merges, retired, compaction)
    assert server.process.returncode == 0


def _press(browser, *keys: str) -> None:  # noqa: ANN001
    from selenium.webdriver.common.action_chains import ActionChains

    for key in keys:
        ActionChains(browser).send_keys(key).perform()


def test_a_person_reviews_with_the_keyboard_alone(site, driver, artifacts):
    """j opens the first proposal, a accepts and the next comes up, u undoes, a again, r types a reason and Ctrl+Enter rejects, ? shows the keys."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as seen

    first, second, third, _ = site.merges
    base = site.server.base
    driver.get(site.server.url)
    _press(driver, "j")
    _wait_for(driver, seen.url_to_be(f"{base}/proposals/{first}"), "the first proposal")
    driver.save_screenshot(str(artifacts / "web-proposal.png"))
    _press(driver, "a")
    _wait_for(driver, seen.url_to_be(f"{base}/proposals/{second}?done=accepted&of={first}"), "the next proposal")
    assert driver.find_element(By.ID, "notice").text.startswith(f"#{first} accepted")
    _press(driver, "u")
    _wait_for(driver, seen.url_to_be(f"{base}/proposals/{first}?done=unaccepted&of={first}"), "the proposal taken back")
    assert driver.find_element(By.ID, "state").text == "pending"
    _press(driver, "a")
    _wait_for(driver, seen.url_contains(f"/proposals/{second}?"), "the next proposal again")
    _press(driver, "r")
    assert driver.switch_to.active_element.get_attribute("id") == "reason"
    _press(driver, "both are needed")
    ActionChains(driver).key_down(Keys.CONTROL).send_keys(Keys.ENTER).key_up(Keys.CONTROL).perform()
    _wait_for(driver, seen.url_to_be(f"{base}/proposals/{third}?done=rejected&of={second}"), "the proposal after the rejected one")
    help_box = driver.find_element(By.ID, "help")
    assert not help_box.is_displayed()
    _press(driver, "?")
    assert help_box.is_displayed()
    driver.save_screenshot(str(artifacts / "web-keys.png"))
    _press(driver, Keys.ESCAPE)
    assert not help_box.is_displayed()
    states = _states(site.db_path)
    assert states[first] == ("accepted", [("accept", "web", None), ("unaccept", "web", None), ("accept", "web", None)])
    assert states[second] == ("rejected", [("reject", "web", "both are needed")])


def test_a_person_accepts_and_then_applies_from_the_index(site, driver):
    """Accept on a proposal's page, then its Apply button on the index: the copy leaves the notes folder for the archive."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen

    last = site.merges[-1]
    driver.get(f"{site.server.base}/proposals/{last}")
    driver.find_element(By.ID, "accept").click()
    _wait_for(driver, seen.url_contains(f"done=accepted&of={last}"), "the page after the accept")
    driver.get(f"{site.server.base}/")
    driver.find_element(By.ID, f"apply-{last}").click()
    _wait_for(driver, seen.url_contains(f"done=applied&of={last}"), "the index after the apply")
    assert driver.find_element(By.ID, "notice").text == f"#{last} applied; dreamd revert {last} undoes it"
    assert _states(site.db_path)[last][0] == "applied"
    assert not (site.small / site.retired).exists() and (site.small / ".dreamd-archive" / site.retired).is_file()


_BOXES = """
const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; };
return [...document.querySelectorAll(arguments[0])].slice(0, arguments[1]).map((row) => [...row.children].map(box));
"""


def test_a_long_diff_is_a_page_to_read_and_its_side_by_side_rows_align(site, driver, artifacts):
    """An index compaction rewriting 600 lines: the page stays short, changed words are marked, and each side-by-side row's four cells share top and height, the two halves equally wide, row under row."""
    from selenium.webdriver.common.by import By

    driver.get(f"{site.server.base}/proposals/{site.compaction}")
    height = driver.execute_script("return document.documentElement.scrollHeight")
    assert height < 12_000, height
    assert len(driver.find_elements(By.CSS_SELECTOR, "#unified del")) >= 100  # each entry's hook, cut
    driver.find_element(By.CSS_SELECTOR, "#side-by-side > summary").click()
    rows = driver.execute_script(_BOXES, "#side-by-side .diff > .pair", 150)
    assert len(rows) == 150
    for (no_left, left, no_right, right) in rows:
        assert {round(cell[1]) for cell in (no_left, left, no_right, right)} == {round(left[1])}  # one top
        assert {round(cell[3]) for cell in (no_left, left, no_right, right)} == {round(left[3])}  # one height
        assert (round(left[2]), round(no_left[2])) == (round(right[2]), round(no_right[2]))  # equal halves
    assert all(round(below[0][1]) == round(above[0][1] + above[0][3]) for above, below in zip(rows, rows[1:]))  # no gap between rows
    unified = driver.execute_script(_BOXES, "#unified .diff > .row", 150)
    assert all(len({round(cell[1]) for cell in row}) == 1 and len({round(cell[3]) for cell in row}) == 1 for row in unified)
    driver.execute_script("document.querySelector('#side-by-side').scrollIntoView()")
    driver.save_screenshot(str(artifacts / "web-side-by-side.png"))


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
