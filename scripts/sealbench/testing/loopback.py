"""What the scripted model servers share: a threading HTTP server on 127.0.0.1 (port 0: a free
one), started and closed, or used as a context manager. A server's request handler reaches the
server object as ``self.server.owner``."""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class LoopbackServer:
    """A scripted server's lifecycle; subclasses add what they serve and record."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], port: int = 0) -> None:
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.httpd.daemon_threads = True
        self.httpd.owner = self  # type: ignore[attr-defined]
        self.port = self.httpd.server_address[1]
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def endpoint(self) -> str:
        """The server's ``host:port`` (an agent's ``endpoint``)."""
        return f"127.0.0.1:{self.port}"

    def serve_until_stopped(self, report: Callable[[], None]) -> None:
        """Serve in this thread until Ctrl-C or ``kill PID``, then close and ``report`` (what a
        standalone server prints: the totals it reported)."""
        def _interrupt(*_: object) -> None:
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, _interrupt)
        try:
            self.httpd.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            self.httpd.server_close()
            report()


class JSONHandler(BaseHTTPRequestHandler):
    """A quiet HTTP/1.1 handler that reads and writes JSON bodies."""

    protocol_version = "HTTP/1.1"
    content_type = "application/json"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _json(self, code: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", self.content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> Any:
        """The request's JSON body (None: not JSON)."""
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return None
