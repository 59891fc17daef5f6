"""Shared fixtures: a hermetic environment, real stores on disk, a controllable clock, the CLI.

Everything is real: SQLite files under tmp_path, notes written to disk, git for diffs. The
autouse ``hermetic`` fixture points the XDG state directory into tmp_path and clears the
variables that would make dreamd read a user's config or database.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import structlog

from daemon import logs

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "deepcode-memory"
T0 = dt.datetime(2025, 3, 1, 12, 0, 0, tzinfo=dt.timezone.utc)  # before the real clock: CLI runs come later
FILE_MTIME_NS = 1_700_000_000 * 10**9  # every fixture file gets this mtime, so survivor choice is deterministic


# Under pytest-xdist (pyproject's addopts), the tests that share one expensive thing per session
# or module run on one worker, in their order: a booted systemd, a local model server, one
# browser over one served site whose tests build on each other's decisions.
XDIST_GROUPS = {"tests/systemd/": "systemd", "tests/e2e/": "local-model", "tests/web/test_web_browser.py": "browser"}


def _group_of(nodeid: str) -> str | None:
    return next((group for prefix, group in XDIST_GROUPS.items() if nodeid.startswith(prefix)), None)


def pytest_itemcollected(item: pytest.Item) -> None:
    """Marked as each is collected: xdist reads the groups in a collection hook of its own."""
    group = _group_of(item.nodeid)
    if group is not None:
        item.add_marker(pytest.mark.xdist_group(group))


def pytest_xdist_node_collection_finished(node: object, ids: list[str]) -> None:
    """The run stops when xdist did not take the groups into the node ids: each group would be
    spread over the workers (pytest 9.2 ignores the ids xdist 3.8 writes; see pyproject.toml)."""
    if node.config.getvalue("dist") != "loadgroup":  # type: ignore[attr-defined]
        return
    lost = [i for i in ids if _group_of(i) is not None and "@" not in i]
    if lost:
        pytest.exit(f"pytest-xdist did not group {len(lost)} tests (e.g. {lost[0]}): see the pytest pin in pyproject.toml", returncode=3)


@pytest.fixture(autouse=True)
def hermetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes a real user's state, config or database."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))  # a user's ~/.config/dreamd/config.toml is never read
    for name in ("DREAMD_CONFIG", "DREAMD_DB", "DREAMD_SURFACE", "STATE_DIRECTORY", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    structlog.reset_defaults()  # a CLI test's configure() must not filter another test's logs
    logs.reset()


class Clock:
    """A clock the test moves by hand; pass it as ``App(clock=...)``."""

    def __init__(self, start: dt.datetime = T0) -> None:
        self.now = start

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, **delta: float) -> dt.datetime:
        self.now += dt.timedelta(**delta)
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "state.db"


@pytest.fixture
def db_url(db_path: Path) -> str:
    return f"sqlite:///{db_path}"


def write_files(root: Path, files: dict[str, str | bytes], mtime_ns: int = FILE_MTIME_NS) -> Path:
    """Write ``files`` (relative path -> text or bytes) under ``root`` with a fixed mtime."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        os.utime(path, ns=(mtime_ns, mtime_ns))
    return root


@pytest.fixture
def make_store(tmp_path: Path) -> Callable[..., Path]:
    """Factory: ``make_store(files, name="store")`` writes a store folder and returns its root."""

    def make(files: dict[str, str | bytes], name: str = "store") -> Path:
        return write_files(tmp_path / name, files)

    return make


@pytest.fixture
def example_store(tmp_path: Path) -> Path:
    """A copy of examples/deepcode-memory with fixed mtimes."""
    root = tmp_path / "deepcode"
    shutil.copytree(EXAMPLE, root)
    for path in root.iterdir():
        os.utime(path, ns=(FILE_MTIME_NS, FILE_MTIME_NS))
    return root


@dataclass(frozen=True)
class FileState:
    data: bytes
    mtime_ns: int
    mode: int


def tree_state(root: Path) -> dict[str, FileState | str]:
    """Every entry below ``root`` (hidden ones too): files with bytes, mtime and mode; folders
    and symlinks by kind. Two equal results mean nothing was written, created or removed."""
    found: dict[str, FileState | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                found[rel] = f"symlink -> {os.readlink(path)}"
            elif stat.S_ISDIR(info.st_mode):
                found[rel] = f"dir mtime {info.st_mtime_ns}"
            else:
                found[rel] = FileState(path.read_bytes(), info.st_mtime_ns, info.st_mode)
    return found


def file_bytes(root: Path) -> dict[str, bytes]:
    """Relative path -> bytes of every regular file below ``root``."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


@pytest.fixture
def snapshot_tree() -> Callable[[Path], dict[str, FileState | str]]:
    return tree_state


@pytest.fixture
def read_tree() -> Callable[[Path], dict[str, bytes]]:
    return file_bytes


@pytest.fixture
def make_app(db_url: str, clock: Clock) -> Iterator[Callable[..., object]]:
    """Factory of service Apps on the test database and clock; all are closed afterwards."""
    from daemon.config import Config
    from daemon.service.context import App

    made: list[App] = []

    def make(config: Config | None = None) -> App:
        app = App(config=config or Config(), db_url=db_url, clock=clock)
        made.append(app)
        return app

    yield make
    for app in made:
        app.close()


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., Run]:
    """Run ``dreamd ARGS`` in this process (``daemon.cli.main.main``); returns code, stdout, stderr."""
    from daemon.cli.main import main

    def run(*args: str) -> Run:
        capsys.readouterr()
        with pytest.raises(SystemExit) as exited:
            main(list(args))
        captured = capsys.readouterr()
        code = exited.value.code
        return Run(code if isinstance(code, int) else (0 if code is None else 1), captured.out, captured.err)

    return run


# PostgreSQL ----------------------------------------------------------------------------
#
# The PostgreSQL tests run when DREAMD_TEST_PG_URL names a database the tests may create
# schemas in, e.g. postgresql+psycopg://dreamd:secret@127.0.0.1:5432/dreamd_test (.ci/run
# starts a server and sets it). Each test gets a fresh schema there (via search_path),
# dropped afterwards. With DREAMD_TEST_PG_REQUIRED=1 (CI) a missing URL or driver fails
# those tests instead of skipping them.

PG_ENV = "DREAMD_TEST_PG_URL"
PG_REQUIRED_ENV = "DREAMD_TEST_PG_REQUIRED"


@pytest.fixture(scope="session")
def pg_admin() -> Iterator[object]:
    """An engine on DREAMD_TEST_PG_URL (no schema of its own); skips when it is unset."""
    from sqlalchemy import create_engine

    required = os.environ.get(PG_REQUIRED_ENV) == "1"
    url = os.environ.get(PG_ENV)
    if not url:
        if required:
            pytest.fail(f"{PG_REQUIRED_ENV}=1 but {PG_ENV} is not set")
        pytest.skip(f"set {PG_ENV} to run the PostgreSQL tests")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        if required:
            raise
        pytest.skip("psycopg is not installed (pip install -e '.[postgres]')")
    admin = create_engine(url)
    yield admin
    admin.dispose()


@pytest.fixture
def pg_url(pg_admin) -> Iterator[str]:  # noqa: ANN001
    """A URL on a fresh, empty schema of the test database; the schema is dropped afterwards."""
    import uuid

    schema = f"dreamd_test_{uuid.uuid4().hex[:12]}"
    with pg_admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
    url = pg_admin.url.update_query_dict({"options": f"-csearch_path={schema}"})
    yield url.render_as_string(hide_password=False)
    with pg_admin.begin() as conn:
        conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
