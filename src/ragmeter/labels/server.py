"""The labelling page, served from this machine with the standard library's HTTP server.

Bound to 127.0.0.1 by default. Any other address reaches other machines, so it is refused
unless a token is given, and then every request must carry it (``?token=`` on the page's
address, which the page sends on as the ``X-Ragmeter-Token`` header). Without a token the
server answers only requests addressed to a loopback name (127.0.0.1, localhost, ::1) at its
port (a page elsewhere cannot reach it through a name of its own), and it takes answers only as
JSON from its own page, which a form on another site cannot send. A refused request closes its
connection, so that nothing in its body is read as a request of its own.

The page is one HTML file with its script and style inline, under a content security policy
that lets no other script run: every text of the run is put on the page as text (``textContent``),
so an answer holding ``<script>`` is shown, not run.
"""

from __future__ import annotations

import hmac
import json
import secrets
import socket
import sys
import threading
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from ragmeter.labels.session import LabelSession
from ragmeter.labels.store import NAME_LIMIT, NOTE_LIMIT

LOOPBACK = ("127.0.0.1", "localhost", "::1")
TOKEN_HEADER = "X-Ragmeter-Token"
BODY_LIMIT = 64 * 1024
"""The largest request body taken: an answer with its note."""
ERROR_LIMIT = 200
"""Characters of an unexpected error the page is told; the terminal shows all of it."""


TOKEN_LEAST = 16
"""The shortest token another machine may be served with: a short one can be guessed."""


def check_binding(host: str, token: str | None) -> None:
    """Refuse to serve on an address other machines can reach without a token, or with one
    short enough to guess."""
    if host in LOOPBACK:
        return
    if not token:
        raise ValueError(
            f"--host {host} lets other machines reach the labels: give --token auto as well "
            "(every request must then carry it), or keep the default 127.0.0.1"
        )
    if len(token) < TOKEN_LEAST:
        raise ValueError(
            f"--host {host}: a token of {len(token)} characters can be guessed; give one of at "
            f"least {TOKEN_LEAST}, or --token auto for a random one"
        )


def _page() -> str:
    """The page with its script, style and the store's limits inline; ``__NONCE__`` is filled
    in per response."""
    static = resources.files("ragmeter.labels") / "static"
    filled = {
        "/*STYLE*/": (static / "label.css").read_text(encoding="utf-8"),
        "/*SCRIPT*/": (static / "label.js").read_text(encoding="utf-8"),
        "__NAME_LIMIT__": str(NAME_LIMIT),
        "__NOTE_LIMIT__": str(NOTE_LIMIT),
    }
    page = (static / "label.html").read_text(encoding="utf-8")
    for mark, text in filled.items():
        page = page.replace(mark, text)
    return page


class LabelServer(ThreadingHTTPServer):
    """Serves ``session`` on (``host``, ``port``); port 0 takes a free one (``url`` says
    which)."""

    daemon_threads = True

    def __init__(
        self,
        session: LabelSession,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
    ) -> None:
        check_binding(host, token)
        if ":" in host:
            self.address_family = socket.AF_INET6
        super().__init__((host, port), LabelHandler)
        self.session = session
        self.host = host
        self.token = token or None
        self.page = _page()
        self.writing = threading.Lock()
        """One answer at a time from this server: a person's keystrokes are kept in order."""

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        base = f"http://{host}:{self.port}/"
        return f"{base}?{urlencode({'token': self.token})}" if self.token else base

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet for a browser that dropped its connection (a closed tab, a reload): the
        terminal is the person's. Anything else is printed as the standard library does."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    def hosts(self) -> set[str]:
        """The Host headers a request without a token may carry."""
        names = set(LOOPBACK) if self.host in LOOPBACK else {self.host}
        return {f"[{name}]:{self.port}" if ":" in name else f"{name}:{self.port}" for name in names}


class LabelHandler(BaseHTTPRequestHandler):
    server: LabelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the terminal is the person's, and answers are in the log file."""

    # -- access ----------------------------------------------------------------------------

    def _allowed(self) -> bool:
        token = self.server.token
        if token is None:
            if self.headers.get("Host", "") not in self.server.hosts():
                self._send_json({"error": "unknown host"}, HTTPStatus.FORBIDDEN)
                return False
            return True
        given = self.headers.get(TOKEN_HEADER) or _query(self.path).get("token", "")
        if not hmac.compare_digest(given.encode(), token.encode()):
            self._send_json({"error": "this page needs its token"}, HTTPStatus.FORBIDDEN)
            return False
        return True

    # -- requests --------------------------------------------------------------------------

    def do_GET(self) -> None:
        if not self._allowed():
            return
        path = urlsplit(self.path).path
        if path == "/":
            self._send_page()
        elif path == "/favicon.ico":  # asked for by every browser; the page has none
            self.send_response(HTTPStatus.NO_CONTENT)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path == "/api/state":
            annotator = _query(self.path).get("annotator") or None
            self._call(lambda: self.server.session.state(annotator))
        else:
            self._send_json({"error": "not found"}, HTTPStatus.NOT_FOUND)

    def do_POST(self) -> None:
        if not self._allowed():
            return
        if self.headers.get_content_type() != "application/json":
            self._send_json({"error": "send JSON"}, HTTPStatus.UNSUPPORTED_MEDIA_TYPE)
            return
        origin = self.headers.get("Origin")
        if origin is not None and urlsplit(origin).netloc != self.headers.get("Host", ""):
            self._send_json({"error": "another site's page"}, HTTPStatus.FORBIDDEN)
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = BODY_LIMIT + 1
        if not 0 <= length <= BODY_LIMIT:
            self._send_json({"error": "too large"}, HTTPStatus.REQUEST_ENTITY_TOO_LARGE)
            return
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except (ValueError, UnicodeDecodeError):
            self._send_json({"error": "not JSON"}, HTTPStatus.BAD_REQUEST)
            return
        if not isinstance(body, dict):
            self._send_json({"error": "send a JSON object"}, HTTPStatus.BAD_REQUEST)
            return
        session, who = self.server.session, body.get("annotator")
        actions = {
            "/api/answer": lambda: session.answer(
                who, body.get("item", ""), body.get("value"), body.get("note") or ""
            ),
            "/api/skip": lambda: session.skip(who, body.get("item", "")),
            "/api/undo": lambda: session.undo(who),
        }
        action = actions.get(urlsplit(self.path).path)
        if action is None:
            self._send_json({"error": "not found"}, HTTPStatus.NOT_FOUND)
            return
        with self.server.writing:
            self._call(action)

    def _call(self, action: Any) -> None:
        try:
            found = action()
        except ValueError as exc:  # what the request asked cannot be done: it says why
            self._send_json({"error": str(exc)}, HTTPStatus.BAD_REQUEST)
        except OSError as exc:  # the log cannot be written: say so, the page keeps the answer
            self._send_json({"error": str(exc)}, HTTPStatus.SERVICE_UNAVAILABLE)
        except Exception as exc:  # a fault of ours: answered, so the page says it, not retries
            traceback.print_exc(file=sys.stderr)  # the whole of it, for a bug report
            said = f"{type(exc).__name__}: {exc}"
            self._send_json(
                {
                    "error": f"the labelling server failed ({said[:ERROR_LIMIT]}); it is still "
                    "running, and the terminal that started it shows the details"
                },
                HTTPStatus.INTERNAL_SERVER_ERROR,
            )
        else:
            self._send_json(found)

    # -- responses -------------------------------------------------------------------------

    def _headers(self, kind: str, length: int, status: HTTPStatus, nonce: str = "") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(length))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Frame-Options", "DENY")
        if status >= HTTPStatus.BAD_REQUEST:
            # A refused request's body may be unread. On a kept-alive connection it would be
            # read as the next request, one a page elsewhere could write as a plain-text body
            # (no preflight) with JSON and this server's Host inside: so the connection closes.
            self.send_header("Connection", "close")
        if nonce:
            self.send_header(
                "Content-Security-Policy",
                f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
                "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
                "frame-ancestors 'none'",
            )
        self.end_headers()

    def _send_page(self) -> None:
        nonce = secrets.token_urlsafe(16)
        body = self.server.page.replace("__NONCE__", nonce).encode("utf-8")
        self._headers("text/html; charset=utf-8", len(body), HTTPStatus.OK, nonce)
        self.wfile.write(body)

    def _send_json(self, data: Any, status: HTTPStatus = HTTPStatus.OK) -> None:
        body = json.dumps(data).encode("utf-8")
        self._headers("application/json", len(body), status)
        self.wfile.write(body)


def _query(path: str) -> dict[str, str]:
    return {name: values[-1] for name, values in parse_qs(urlsplit(path).query).items()}
