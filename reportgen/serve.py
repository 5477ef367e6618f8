"""`reportgen watch --serve`: the site over HTTP on this machine, each page refreshing itself once the
site has been built again.

The files on disk stay exactly what `reportgen build` writes: the few lines that make a page refresh
itself are added to each HTML page as it is sent, and the build's number is answered from memory at
VERSION_PATH (never a file in the site). Loopback only unless a host is asked for.
"""

from __future__ import annotations

import json
import re
import socket
import threading
from datetime import tzinfo
from functools import partial
from html import escape as escape_html
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from reportgen.errors import ReportgenError

DEFAULT_HOST = "127.0.0.1"
VERSION_PATH = "/__reportgen/version"
# How often an open page asks whether the site was built again, in milliseconds.
POLL_MS = 1000

# Added before </body> of every page sent: ask for the build's number, reload when it changes. A page
# opened before the first build waits for it; a server gone (Ctrl-C) is asked again, quietly.
REFRESH = (
    "<script>/* reportgen watch: this page reloads itself when the site is built again */"
    "(function () { var seen = null; function ask() {"
    f" fetch('{VERSION_PATH}', {{cache: 'no-store'}}).then(function (r) {{ return r.json(); }})"
    ".then(function (d) { if (seen !== null && d.version !== seen) { location.reload(); return; } seen = d.version;"
    f" setTimeout(ask, {POLL_MS}); }}).catch(function () {{ setTimeout(ask, {POLL_MS}); }}); }} ask(); }})();</script>"
)
_BODY_END = re.compile(rb"</body\s*>", re.IGNORECASE)


class Builds:
    """How many times the site was built (0: not yet), and why the last attempt failed, if it did;
    shared by the watcher, which counts, and the server's threads, which read."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.version = 0
        self.failure: str | None = None
        self.alerted: set[str] = set()  # the keys of the last build's alerts, said on the terminal (the watcher's alone)
        self.zone: tzinfo | None = None  # the plan's time zone, once a build has read it (the watcher's alone)

    def built(self) -> None:
        with self._lock:
            self.version += 1
            self.failure = None

    def failed(self, why: str) -> None:
        with self._lock:
            self.failure = why

    def state(self) -> dict:
        with self._lock:
            return {"version": self.version, "failure": self.failure}


def parse_address(text: str) -> tuple[str, int]:
    """`PORT`, `HOST:PORT` or `[IPv6]:PORT` -> (host, port); the host is loopback unless given."""
    host, _, port = text.rpartition(":")
    host = host.strip("[]") or DEFAULT_HOST
    if not (port.isascii() and port.isdigit()) or not 0 <= int(port) <= 65535:
        raise ReportgenError(f"--serve {text}: give a port (8000), or a host and a port (0.0.0.0:8000)")
    return host, int(port)


def with_refresh(html: bytes) -> bytes:
    """A page as served: the refresh script before its </body> (at its end when it has none)."""
    script = REFRESH.encode()
    found = None
    for found in _BODY_END.finditer(html):
        pass
    return html + script if found is None else html[:found.start()] + script + html[found.start():]


class _Handler(SimpleHTTPRequestHandler):
    """Files of the site folder; HTML pages with the refresh script added, never cached; the build's number."""

    builds: Builds

    def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
        self._answer(body=True)

    def do_HEAD(self) -> None:  # noqa: N802
        self._answer(body=False)

    def _answer(self, body: bool) -> None:
        """What GET sends, or with `body` False its headers alone (HEAD): the same length either way."""
        route = self.path.split("?", 1)[0].split("#", 1)[0]
        if route == VERSION_PATH:
            self._send(200, "application/json", json.dumps(self.builds.state()).encode(), body)
            return
        if any(part.startswith(".") for part in route.split("/")):
            self.send_error(404)  # the site's own marker files and the like are not pages
            return
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        if path.suffix == ".html" and path.is_file():
            try:
                html = path.read_bytes()
            except OSError:  # replaced by a build between the two calls: the next poll reloads
                self.send_error(404)
                return
            self._send(200, "text/html; charset=utf-8", with_refresh(html), body)
            return
        if not path.exists() and self.builds.state()["version"] == 0:
            failure = self.builds.state()["failure"] or "the first build is running."
            page = f"<!doctype html><title>reportgen watch</title><p>No site yet:</p><pre>{escape_html(failure)}</pre></body>"
            self._send(503, "text/html; charset=utf-8", with_refresh(page.encode()), body)
            return
        if route.endswith(".html"):  # a page not in this build (a run's, before its first rows): it reloads with the next
            page = ("<!doctype html><title>Not found · reportgen watch</title><p>This page is not in the site as built now; "
                    "it opens by itself when a build makes it.</p></body>")
            self._send(404, "text/html; charset=utf-8", with_refresh(page.encode()), body)
            return
        if not path.is_file():
            self.send_error(404)  # no folder listings
            return
        super().do_GET() if body else super().do_HEAD()

    def _send(self, status: int, kind: str, content: bytes, body: bool = True) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(content)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if body:
            self.wfile.write(content)

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (http.server's name)
        pass  # the terminal is for builds; requests are not logged


def start_server(site: Path, address: tuple[str, int], builds: Builds) -> ThreadingHTTPServer:
    """Serve `site` at `address` on threads of its own; `server.server_address` gives the port when 0 was
    asked. Stop it with server.shutdown()."""
    handler = type("Handler", (_Handler,), {"builds": builds})
    server_class = ThreadingHTTPServer
    if ":" in address[0]:  # an IPv6 address
        server_class = type("Server6", (ThreadingHTTPServer,), {"address_family": socket.AF_INET6})
    try:
        server = server_class(address, partial(handler, directory=str(site)))
    except OSError as exc:
        raise ReportgenError(f"--serve {address[0]}:{address[1]}: cannot listen there ({exc.strerror})") from None
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="reportgen-serve", daemon=True).start()
    return server
