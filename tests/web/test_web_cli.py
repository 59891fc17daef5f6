"""``dreamd serve`` as a command: the URL it prints, how it stops, and its one-line refusals."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from http.cookiejar import CookieJar
from urllib.error import HTTPError
from urllib.request import HTTPCookieProcessor, build_opener, urlopen

import pytest

from .helpers import DREAMD, serving


def test_the_printed_url_admits_and_the_bare_address_refuses(reviewed, db_url, tmp_path):
    """Opening the printed URL (keeping its cookie) shows the pending proposals; the same host without the token answers 403; SIGTERM ends it with exit 0."""
    with serving(db_url, tmp_path / "serve.log") as server:
        browser = build_opener(HTTPCookieProcessor(CookieJar()))
        with browser.open(server.url, timeout=10) as page:
            assert (page.status, page.url) == (200, f"{server.base}/")
            assert "<h1>2 pending proposals</h1>" in page.read().decode()
        with browser.open(f"{server.base}/proposals/{reviewed.build}", timeout=10) as page:
            assert page.status == 200
        with pytest.raises(HTTPError) as refused:
            urlopen(f"{server.base}/", timeout=10)
        assert refused.value.code == 403
    assert server.process.returncode == 0


def test_a_request_for_another_name_of_this_machine_is_refused(reviewed, db_url, tmp_path):
    """DNS rebinding: a request to the served port whose Host is another name, with the token, answers 400 and sets no cookie."""
    from urllib.request import Request

    with serving(db_url, tmp_path / "serve.log") as server:
        rebound = Request(server.url, headers={"Host": f"rebound.example:{server.port}"})
        with pytest.raises(HTTPError) as refused:
            urlopen(rebound, timeout=10)
        assert (refused.value.code, refused.value.headers.get("set-cookie")) == (400, None)


def test_a_port_in_use_is_refused_in_one_line(db_url):
    """Serving on a port another socket listens on exits 2 with one line naming the address."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([DREAMD, "--db", db_url, "serve", "--port", str(port)], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"error[config]: cannot listen on 127.0.0.1:{port}: Address already in use (choose another --host or --port)\n"


def test_without_the_serve_extra_serve_says_what_to_install(db_url):
    """With Starlette missing, serve exits 2 with one line naming it and the extra to install."""
    script = "import sys; sys.modules['starlette'] = None; from daemon.cli.main import main; main(sys.argv[1:])"
    done = subprocess.run([sys.executable, "-c", script, "--db", db_url, "serve"], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (2, "error[config]: dreamd serve needs starlette, which is not installed (pip install 'dreamd[serve]')\n")


def test_the_cli_loads_no_web_module_until_serve_runs():
    """Importing the CLI (what ``dreamd --help`` does) imports neither Starlette nor uvicorn."""
    script = "import sys; import daemon.cli.main; print(sorted(m for m in ('starlette', 'uvicorn') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout == "[]\n"


def test_ctrl_c_right_after_the_url_stops_serve_with_exit_0(db_url):
    """SIGINT the moment the URL is printed (before the server runs, or as it starts) stops it cleanly: exit 0, nothing on stderr."""
    process = subprocess.Popen([DREAMD, "--db", db_url, "serve"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout.readline().startswith("dreamd serve: open http://127.0.0.1:")  # type: ignore[union-attr]
    process.send_signal(signal.SIGINT)
    _, errors = process.communicate(timeout=30)
    assert (process.returncode, errors) == (0, "")
