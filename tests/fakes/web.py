"""The web as GroBot's web tools see it, on 127.0.0.1, speaking the real protocols.

- :class:`FakeWeb`: an HTTP proxy (``CONNECT`` for HTTPS, absolute URLs for HTTP) that is itself
  every site it knows: it ends TLS with a certificate of its own test CA (give its
  :attr:`FakeWeb.ca_file` to the client that verifies), and answers as the real site would.
  Known sites: DuckDuckGo's HTML endpoint (``html.duckduckgo.com/html/``, what the ``ddgs``
  library's ``duckduckgo`` engine posts to) and the pages given to :meth:`FakeWeb.page`. Every
  other host is refused at ``CONNECT`` (502), as a proxy with no route does: nothing ever leaves
  127.0.0.1.
- :class:`FakeSearxng`: a SearXNG instance's JSON API (``GET /search?q=...&format=json``).

Both record what they were asked, and can be told to fail (rate limits, silence).
"""

from __future__ import annotations

import datetime
import html
import json
import socket
import ssl
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

DDG_HOST = "html.duckduckgo.com"


@dataclass
class Hit:
    title: str
    url: str
    snippet: str


@dataclass
class Page:
    body: bytes
    content_type: str = "text/html; charset=utf-8"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


def _make_ca(hosts: list[str], folder: Path) -> tuple[Path, Path, Path]:
    """A test CA and a server certificate for ``hosts`` signed by it: (ca.pem, cert.pem, key.pem)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "GroBot test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
          .not_valid_after(now + datetime.timedelta(days=30))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(h) for h in hosts]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    ca_file, cert_file, key_file = folder / "ca.pem", folder / "cert.pem", folder / "key.pem"
    ca_file.write_bytes(ca.public_bytes(pem))
    cert_file.write_bytes(cert.public_bytes(pem) + ca.public_bytes(pem))
    key_file.write_bytes(key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return ca_file, cert_file, key_file


def ddg_html(hits: list[Hit]) -> bytes:
    """A results page as ``html.duckduckgo.com/html/`` sends it (the parts ddgs reads)."""
    items = []
    for hit in hits:
        url, title, snippet = html.escape(hit.url), html.escape(hit.title), html.escape(hit.snippet)
        items.append(
            '<div class="result results_links results_links_deep web-result ">'
            '<div class="links_main links_deep result__body">'
            f'<h2 class="result__title"><a rel="nofollow" class="result__a" href="{url}">{title}</a></h2>'
            f'<a class="result__snippet" href="{url}">{snippet}</a>'
            '</div></div>')
    return ("<!DOCTYPE html><html><head><title>DuckDuckGo</title></head><body>"
            '<div id="links" class="results">' + "".join(items) + "</div></body></html>").encode()


class FakeWeb:
    """A proxy on 127.0.0.1 that is DuckDuckGo and the pages it is given (see the module)."""

    def __init__(self, hosts: tuple[str, ...] = ("news.example", "docs.example", "slow.example")) -> None:
        self.hosts = (DDG_HOST, *hosts)
        self._dir = tempfile.TemporaryDirectory(prefix="fake-web-")
        self.ca_file, cert, key = _make_ca(list(self.hosts), Path(self._dir.name))
        self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._tls.load_cert_chain(cert, key)
        self._tls.set_alpn_protocols(["http/1.1"])
        self.hits: list[Hit] = []
        self.pages: dict[str, Page] = {}
        self.searches: list[str] = []  # the queries DuckDuckGo was sent
        self.requests: list[str] = []  # every URL asked for (``CONNECT host`` for refused tunnels)
        self.ddg_status = 200  # 202 / 429: DuckDuckGo's answers to a client it limits
        self.hang = threading.Event()  # set: the sites never answer (until the test ends)
        self._stop = threading.Event()
        web = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def do_CONNECT(self) -> None:
                host = self.path.rsplit(":", 1)[0]
                if host not in web.hosts:
                    web.requests.append(f"CONNECT {host}")
                    self.send_response(502, "No route")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200, "Connection established")
                self.end_headers()
                self.wfile.flush()
                try:
                    tls = web._tls.wrap_socket(self.connection, server_side=True)
                except (ssl.SSLError, OSError):
                    self.close_connection = True
                    return
                try:
                    Site(tls, self.client_address, self.server, scheme="https", host=host)
                finally:
                    self.close_connection = True
                    try:
                        tls.close()
                    except OSError:
                        pass

            def _plain(self) -> None:  # an http:// URL through the proxy
                parts = urlsplit(self.path)
                if parts.scheme != "http" or parts.hostname not in web.hosts:
                    web.requests.append(self.path)
                    self.send_response(502, "No route")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                web._answer(self, f"http://{parts.netloc}{parts.path}" + (f"?{parts.query}" if parts.query else ""))

            do_GET = do_POST = do_HEAD = _plain

        class Site(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def __init__(self, sock: Any, address: Any, server: Any, *, scheme: str, host: str) -> None:
                self.scheme, self.site = scheme, host
                super().__init__(sock, address, server)

            def setup(self) -> None:  # a socket already connected and wrapped
                self.connection = self.request
                self.rfile = self.connection.makefile("rb", -1)
                self.wfile = self.connection.makefile("wb", 0)

            def log_message(self, *args: Any) -> None:
                pass

            def _any(self) -> None:
                web._answer(self, f"{self.scheme}://{self.site}{self.path}")

            do_GET = do_POST = do_HEAD = _any

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.proxy_url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    # -- what the sites say ---------------------------------------------------------------------
    def page(self, url: str, text: str | bytes, *, content_type: str = "text/html; charset=utf-8", status: int = 200,
             headers: dict[str, str] | None = None) -> None:
        self.pages[url] = Page(text.encode() if isinstance(text, str) else text, content_type, status, dict(headers or {}))

    def _answer(self, handler: BaseHTTPRequestHandler, url: str) -> None:
        self.requests.append(url)
        length = int(handler.headers.get("content-length") or 0)
        body = handler.rfile.read(length) if length else b""
        while self.hang.is_set() and not self._stop.is_set():
            time.sleep(0.05)
        parts = urlsplit(url)
        if parts.hostname == DDG_HOST and parts.path.startswith("/html"):
            form = parse_qs(body.decode("utf-8", "replace")) if body else parse_qs(parts.query)
            self.searches.append((form.get("q") or [""])[0])
            if self.ddg_status != 200:
                page = Page(b"<html><body>anomaly: too many requests</body></html>", status=self.ddg_status)
            else:
                page = Page(ddg_html(self.hits))
        else:
            page = self.pages.get(url) or Page(b"<html><body>Not found</body></html>", status=404)
        handler.send_response(page.status)
        handler.send_header("Content-Type", page.content_type)
        handler.send_header("Content-Length", str(len(page.body)))
        for name, value in page.headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(page.body)

    def __enter__(self) -> FakeWeb:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self._dir.cleanup()


class FakeSearxng:
    """A SearXNG instance's JSON API on 127.0.0.1 (``/search?q=...&format=json``)."""

    def __init__(self) -> None:
        self.hits: list[Hit] = []
        self.queries: list[dict[str, list[str]]] = []
        self.status = 200  # 429: SearXNG's limiter; 403: the JSON format is not enabled
        self.hang = threading.Event()
        self._stop = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = parse_qs(parts.query)
                fake.queries.append(query)
                while fake.hang.is_set() and not fake._stop.is_set():
                    time.sleep(0.05)
                if parts.path != "/search":
                    status, body, kind = 404, b"Not Found", "text/plain"
                elif fake.status != 200:
                    status, body, kind = fake.status, b"Too Many Requests", "text/plain"
                elif (query.get("format") or [""])[0] != "json":
                    status, body, kind = 200, b"<html><body>results</body></html>", "text/html"
                else:
                    q = (query.get("q") or [""])[0]
                    results = [{"url": h.url, "title": h.title, "content": h.snippet, "engine": "duckduckgo",
                                "engines": ["duckduckgo"], "score": 1.0, "category": "general"} for h in fake.hits]
                    status, kind = 200, "application/json"
                    body = json.dumps({"query": q, "number_of_results": len(results), "results": results,
                                       "answers": [], "corrections": [], "infoboxes": [], "suggestions": [],
                                       "unresponsive_engines": []}).encode()
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeSearxng:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def closed_port() -> str:
    """An address on 127.0.0.1 where nothing listens (a proxy or service that is down)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"
