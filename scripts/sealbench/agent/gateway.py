"""A forwarding gateway: a real provider's API for a sandboxed agent, the key kept outside.

An agent entry with ``upstream`` (docs/agents.md, "A real provider")::

    agents:
      claude:
        client: claude-code
        model: claude-sonnet-4-5
        endpoint: "127.0.0.1:4000"             # what the client inside the sandbox is pointed at
        upstream: https://api.anthropic.com    # where its requests go, from outside the sandbox
        key_env: ANTHROPIC_API_KEY             # the harness's variable holding the key

``run_agent`` starts a :class:`Gateway` outside the sandbox on a free loopback port; the bridge
(:mod:`sealbench.agent.bridge`) forwards the sandbox's ``endpoint`` to it and meters the replies
as for any server. The gateway sends each request on to ``upstream`` with the key added in the
provider's own header (:data:`KEY_HEADERS`) and every credential the client sent removed (it has
only the preset's dummy key), and streams the reply back unchanged (one request per connection,
the body read to its end: event streams pass through as they come). The key is read from the
harness's environment when the run starts and never enters the sandbox: not its environment, not
its files, not a reply.

Standard library only (``http.server``, ``http.client``, ``ssl`` with the system's CA store).
"""

from __future__ import annotations

import http.client
import os
import ssl
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

#: The header each provider reads its key from, by the bridge's wire name (agent.clients ``wire``);
#: ``Authorization: Bearer`` for any other.
KEY_HEADERS = {"anthropic-messages": ("x-api-key", "{key}"), "gemini": ("x-goog-api-key", "{key}"),
               "openai-chat": ("authorization", "Bearer {key}"),
               "openai-responses": ("authorization", "Bearer {key}")}
#: Credentials a client may send (its dummy key): never forwarded.
CREDENTIAL_HEADERS = frozenset({"authorization", "x-api-key", "x-goog-api-key", "api-key", "proxy-authorization"})
#: Hop-by-hop headers (RFC 9110 §7.6.1), not forwarded either way; the gateway sets its own.
HOP_HEADERS = frozenset({"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
                         "upgrade", "host", "content-length"})


class GatewayError(Exception):
    """The gateway cannot start (no key in the harness's environment, a bad upstream URL)."""


def upstream_key(key_env: str | None) -> str | None:
    """The key from the harness's environment variable ``key_env`` (None: no key is added)."""
    if not key_env:
        return None
    key = os.environ.get(key_env)
    if not key:
        raise GatewayError(f"the agent's key_env {key_env} is not set in the environment sealbench runs in: "
                           f"export {key_env}=... before running (the key stays outside the sandbox)")
    return key


class Gateway:
    """Outside the sandbox: a loopback HTTP server forwarding to ``upstream`` with ``key``."""

    def __init__(self, upstream: str, key: str | None, wire: str = "", host: str = "127.0.0.1", port: int = 0):
        url = urllib.parse.urlsplit(upstream)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise GatewayError(f"upstream {upstream!r}: an http(s) URL is needed (e.g. https://api.anthropic.com)")
        self.upstream, self.wire = upstream, wire
        self._url, self._key = url, key
        self.forwarded = 0
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"   # one request per connection: a reply ends when it closes

            def log_message(self, *_args) -> None:
                pass

            def _forward(self) -> None:
                gateway._forward(self)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _forward

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def _headers(self, incoming) -> dict[str, str]:
        out = {k: v for k, v in incoming.items() if k.lower() not in HOP_HEADERS | CREDENTIAL_HEADERS}
        if self._key is not None:
            name, fmt = KEY_HEADERS.get(self.wire, ("authorization", "Bearer {key}"))
            out[name] = fmt.format(key=self._key)
        return out

    def _path(self, path: str) -> str:
        """The request's path under the upstream's own (``https://host/base`` + ``/v1/...``), with
        a ``key=`` query parameter (Gemini's other way of sending a key) dropped."""
        parts = urllib.parse.urlsplit(path)
        query = urllib.parse.urlencode([(k, v) for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
                                        if k != "key"])
        base = self._url.path.rstrip("/")
        return f"{base}{parts.path}" + (f"?{query}" if query else "")

    def _forward(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else None
        url = self._url
        conn_cls = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
        kwargs = {"context": ssl.create_default_context()} if url.scheme == "https" else {}
        conn = conn_cls(url.hostname, url.port, timeout=600, **kwargs)
        try:
            conn.request(h.command, self._path(h.path), body=body, headers=self._headers(h.headers))
            resp = conn.getresponse()
        except OSError as exc:
            h.send_error(502, f"sealbench gateway: the upstream {url.scheme}://{url.netloc} cannot be reached: {exc}")
            conn.close()
            return
        self.forwarded += 1
        try:
            h.send_response_only(resp.status, resp.reason)
            for k, v in resp.getheaders():
                if k.lower() not in HOP_HEADERS or (k.lower() == "content-length" and not resp.chunked):
                    h.send_header(k, v)
            h.send_header("Connection", "close")
            h.end_headers()
            if h.command != "HEAD":
                while True:
                    chunk = resp.read1(1 << 16)
                    if not chunk:
                        break
                    h.wfile.write(chunk)
                    h.wfile.flush()
        except OSError:
            pass        # the client hung up: the bridge counts the reply cut short
        finally:
            conn.close()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
