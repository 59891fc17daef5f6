"""Who may use ``dreamd serve``: the access token it prints, the cookie it becomes, and each form's CSRF token.

The access token is random per process and printed once, in the URL to open (as Jupyter
does); presented once, it becomes an HttpOnly, SameSite=Strict cookie, so the address bar
and history lose it. Every form carries a token of its own: the time it was issued, a
random nonce and an HMAC, under a per-process secret, of those and what the form does
("accept:12"). A form token is good for ``FORM_LIFETIME`` and for one post: a token of
another form, of another server process, an old one or one already used is refused.

Every request must also name the address served in its Host header (``answers_to``): a page of
another site whose name an attacker pointed at this machine (DNS rebinding) sends its own name
there, and is refused before the token is looked at.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import ipaddress
import re
import secrets
import socket
from collections.abc import Callable
from dataclasses import dataclass, field

FORM_LIFETIME = dt.timedelta(hours=8)
LOOPBACK_NAMES = ("localhost",)
EVERY_ADDRESS = ("0.0.0.0", "::", "")
_HOST = re.compile(r"(?P<name>\[[0-9a-f:.]+\]|[^:\[\]]+)(?::(?P<port>\d{1,5}))?")  # an IPv6 address only in brackets


@dataclass
class Access:
    token: str = field(repr=False)
    secret: bytes = field(repr=False)
    clock: Callable[[], dt.datetime]
    used: dict[str, dt.datetime] = field(default_factory=dict, repr=False)  # form token -> when it stops mattering

    @classmethod
    def new(cls, clock: Callable[[], dt.datetime]) -> Access:
        return cls(secrets.token_urlsafe(32), secrets.token_bytes(32), clock)

    @property
    def cookie_name(self) -> str:
        """Named after the token, so two servers on one host (cookies ignore ports) keep apart."""
        return "dreamd-" + hashlib.sha256(self.token.encode()).hexdigest()[:12]

    def admits(self, presented: str | None) -> bool:
        """Whether ``presented`` (from the URL or the cookie) is this process's access token."""
        return presented is not None and hmac.compare_digest(presented.encode(), self.token.encode())

    def _mac(self, issued: str, nonce: str, form: str) -> str:
        return hmac.new(self.secret, f"{issued}|{nonce}|{form}".encode(), hashlib.sha256).hexdigest()

    def form_token(self, form: str) -> str:
        issued, nonce = str(int(self.clock().timestamp())), secrets.token_hex(8)
        return f"{issued}.{nonce}.{self._mac(issued, nonce, form)}"

    def refusal(self, presented: str | None, form: str) -> str | None:
        """Why the form token ``presented`` may not post ``form``, or None (then it is used up)."""
        now = self.clock()
        self.used = {token: until for token, until in self.used.items() if until > now}
        issued_text, _, rest = (presented or "").partition(".")
        nonce, _, mac = rest.partition(".")
        if not (issued_text.isdigit() and len(issued_text) <= 12) or not hmac.compare_digest(mac.encode(), self._mac(issued_text, nonce, form).encode()):
            return "this form was not issued by this server for this action; reload the page"
        issued = dt.datetime.fromtimestamp(int(issued_text), dt.timezone.utc)
        if now - issued > FORM_LIFETIME:
            return "this form is too old; reload the page"
        if presented in self.used:
            return "this form was sent already; reload the page"
        self.used[presented] = issued + FORM_LIFETIME  # type: ignore[index]
        return None


def answers_to(header: str, host: str, port: int) -> bool:
    """Whether a request whose Host header is ``header`` is for the server on ``host:port``:
    the same port (80 when it names none), and the address served, or ``localhost`` when that
    is a loopback address, or, when every address is served, any address or this machine's name."""
    found = _HOST.fullmatch(header.lower())
    if found is None or int(found["port"] or 80) != port:
        return False
    name = found["name"].removesuffix(".")
    address = _address(name[1:-1]) if name.startswith("[") else _address(name)
    if name.startswith("[") and address is None:
        return False
    if host in EVERY_ADDRESS:
        return address is not None or name in (*LOOPBACK_NAMES, socket.gethostname().lower())
    served = _address(host)
    if served is None:
        return name == host.lower().removesuffix(".")
    return address == served or (served.is_loopback and name in LOOPBACK_NAMES)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None
