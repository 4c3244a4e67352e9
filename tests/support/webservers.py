"""Real static web servers for tests: Debian's Apache httpd and nginx, each started as a
subprocess with a config file of the test's own on a random port of 127.0.0.1.

The configs keep what a stock Debian install decides about file types (Apache:
``/etc/mime.types`` through ``mods-available/mime.conf``, with mod_negotiation loaded;
nginx: ``/etc/nginx/mime.types`` and ``default_type application/octet-stream``), because
that decides what a browser is sent for each file. Nothing here touches the system's
own server instances (their services may run or not) or their config files.
When the test runs as root, both servers serve as ``nobody``, so the served folder must be
readable by everyone (``public_copy`` makes such a copy).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

APACHE = "/usr/sbin/apache2"
APACHE_MODULES = Path("/usr/lib/apache2/modules")
APACHE_MIME_CONF = Path("/etc/apache2/mods-available/mime.conf")
NGINX = "/usr/sbin/nginx"
NGINX_MIME_TYPES = Path("/etc/nginx/mime.types")


def apache_missing() -> str | None:
    """Why Apache cannot run here, or None."""
    for needed in (Path(APACHE), APACHE_MODULES / "mod_mime.so", APACHE_MIME_CONF, Path("/etc/mime.types")):
        if not needed.exists():
            return f"{needed} is missing (apt-get install apache2)"
    return None


def nginx_missing() -> str | None:
    """Why nginx cannot run here, or None."""
    for needed in (Path(NGINX), NGINX_MIME_TYPES):
        if not needed.exists():
            return f"{needed} is missing (apt-get install nginx)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def public_copy(folder: Path) -> Path:
    """A copy of ``folder`` that every user may read (a server's ``nobody`` worker too)."""
    root = Path(tempfile.mkdtemp(prefix="listlib-www-"))
    root.chmod(0o755)
    shutil.copytree(folder, root / "www", symlinks=True)
    for dirpath, _dirnames, filenames in os.walk(root / "www"):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            if not os.path.islink(os.path.join(dirpath, name)):
                os.chmod(os.path.join(dirpath, name), 0o644)
    return root / "www"


class WebServer:
    """One server process serving ``docroot``; ``url`` ends with ``/``."""

    def __init__(self, name: str, command: list[str], port: int, log: Path) -> None:
        self.name = name
        self.url = f"http://127.0.0.1:{port}/"
        self.log = log
        self.proc = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 20
        while True:
            if self.proc.poll() is not None:
                output = self.proc.stdout.read().decode(errors="replace") if self.proc.stdout else ""
                raise RuntimeError(f"{name} exited with {self.proc.returncode}: {output}\n{self.errors()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"{name} did not listen on port {port}: {self.errors()}") from None
                time.sleep(0.05)

    def errors(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()


def start_apache(docroot: Path, work: Path, *, modules: tuple[str, ...] = (), extra: str = "") -> WebServer:
    """Apache httpd in the foreground (``-X``: one process) with Debian's stock type config;
    ``modules``, ``extra``: more modules to load and more configuration lines."""
    port = free_port()
    modules = ("mpm_event", "authz_core", "mime", "dir", "negotiation", *modules)
    user = "User nobody\nGroup nogroup\n" if os.geteuid() == 0 else ""
    config = work / "apache.conf"
    config.write_text(
        f'ServerRoot "{work}"\n'
        f'DefaultRuntimeDir "{work}"\n'
        f'PidFile "{work}/apache.pid"\n'
        f'ErrorLog "{work}/apache-error.log"\n'
        "LogLevel warn\n"
        "ServerName 127.0.0.1\n"
        f"Listen 127.0.0.1:{port}\n"
        + "".join(f"LoadModule {m}_module {APACHE_MODULES}/mod_{m}.so\n" for m in modules)
        + user
        + f'Include "{APACHE_MIME_CONF}"\n'
        f'DocumentRoot "{docroot}"\n'
        f'<Directory "{docroot}">\n'
        "  Options FollowSymLinks\n  AllowOverride None\n  Require all granted\n</Directory>\n"
        "DirectoryIndex index.html\n" + extra
    )
    return WebServer("apache", [APACHE, "-X", "-f", str(config)], port, work / "apache-error.log")


def start_nginx(docroot: Path, work: Path, *, http: str = "", server: str = "") -> WebServer:
    """nginx in the foreground with Debian's stock ``mime.types`` and ``default_type``;
    ``http``, ``server``: more lines for the ``http`` and ``server`` blocks."""
    port = free_port()
    user = "user nobody nogroup;\n" if os.geteuid() == 0 else ""
    temp = "".join(
        f"  {kind}_temp_path {work}/nginx-{kind};\n" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    config = work / "nginx.conf"
    config.write_text(
        f"{user}daemon off;\n"
        f"pid {work}/nginx.pid;\n"
        f"error_log {work}/nginx-error.log warn;\n"
        "events { worker_connections 64; }\n"
        "http {\n"
        f"  include {NGINX_MIME_TYPES};\n"
        "  default_type application/octet-stream;\n"
        "  access_log off;\n"
        f"{temp}{http}"
        f"  server {{\n    listen 127.0.0.1:{port};\n    root {docroot};\n    index index.html;\n{server}  }}\n"
        "}\n"
    )
    log = work / "nginx-error.log"
    return WebServer("nginx", [NGINX, "-p", str(work), "-e", str(log), "-c", str(config)], port, log)
