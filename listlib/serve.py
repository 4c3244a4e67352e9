"""``listlib serve``: build the site, serve ``output/``, rebuild on change, reload browsers.

The dev server binds its socket first (a taken port is a clear error before any work),
builds with the same ``build_site`` as ``listlib build``, then serves ``output/`` from
threads (``serve_http``) while the main thread watches ``content/``, the site's theme
folders and ``listlib.toml`` with watchfiles and rebuilds incrementally after each
burst of changes (debounced: an import or an editor's save is one rebuild).

Never serves a half-built site: a rebuild holds the write side of a ``SiteGate``
from start to end, and requests wait on its read side until the rebuild is over
(see ``SiteGate``). A failed rebuild (a template error, a broken listlib.toml) keeps
the server running: the error goes to the ``error`` callback and to the browsers'
overlay, and the next change triggers a rebuild that recovers by itself.

Ctrl-C (SIGINT) and SIGTERM stop the server from the main thread: a rebuild in
progress is interrupted the way an interrupted ``listlib build`` is (its writer
removes its temporary file; the next build finishes the job), build workers forked
from this process ignore the signal and are shut down by the pool. Library code:
reports through the ``log``/``error`` callbacks, never prints.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import socket
import threading
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from watchfiles import Change, DefaultFilter, watch

from .build import build_site
from .config import Config
from .errors import ListlibError, ServeError
from .serve_http import DevHTTPServer, SiteGate

__all__ = ["DevServer", "ServeOptions", "watched_paths"]

_STEP_MS = 100
"""A burst of changes ends after this long without a new one..."""
_DEBOUNCE_MS = 1000
"""...or after this long in all, whichever comes first."""
_POLL_MS = 300
"""How often listlib.toml is compared with what the last build read (an editor that
saves by renaming a new file over it ends a watch on the file itself)."""

Log = Callable[[str], None]


@dataclass(frozen=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 8000
    live_reload: bool = True
    """Watch for changes, rebuild, and add the reload script to pages."""
    workers: int | None = None
    """Build worker processes (None: every core)."""


def watched_paths(config: Config) -> list[Path]:
    """What a change in should rebuild the site: the store, the theme folders of the
    site (not the packaged default theme) and the configuration file."""
    paths = [config.site.content_dir]
    if config.theme.dir is not None:
        paths.append(config.theme.dir)
    if config.theme.name != "default":
        paths.append(config.root / "themes" / config.theme.name)
    return [path for path in paths if path.exists()] + [config.path]


class _ChangeFilter(DefaultFilter):
    """watchfiles' defaults (editor swap and backup files, VCS folders), and never the
    build's own output and cache, nor the store's dot-folders (its index, lock and
    temporary files change on every read; the messages it files are what matters)."""

    def __init__(self, config: Config) -> None:
        super().__init__(ignore_paths=(config.site.output_dir, config.site.cache_dir))
        self.config_path = str(config.path)
        self.content = str(config.site.content_dir) + os.sep

    def __call__(self, change: Change, path: str) -> bool:
        if path == self.config_path:
            return True
        inside = path[len(self.content) :] if path.startswith(self.content) else ""
        if any(part.startswith(".") for part in inside.split(os.sep)):
            return False
        return super().__call__(change, path)


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


class DevServer:
    """One ``listlib serve``: a bound HTTP server, the rebuild loop, the live-reload status."""

    def __init__(
        self, config: Config, load: Callable[[], Config], options: ServeOptions, *, log: Log, error: Log
    ) -> None:
        """``load`` reads listlib.toml again (before every build, so changes apply)."""
        self._load = load
        self.options = options
        self._log = log
        self._error = error
        self.config = config
        self.gate = SiteGate(self.config.site.output_dir)
        self.httpd = _bind(options, self.gate)
        host, port = self.httpd.server_address[:2]
        shown = f"[{host}]" if ":" in str(host) else host
        self.url = f"http://{shown}:{port}/"
        self._config_bytes = _read_bytes(self.config.path)

    def run(self, on_ready: Callable[[str], None]) -> None:
        """Build, call ``on_ready`` with the URL, then serve until interrupted
        (KeyboardInterrupt, also for SIGTERM); always closes the server."""
        thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
        stream: _Stream | None = None
        with _interrupts():
            try:
                thread.start()
                # Watching starts before the first build, so nothing changed during
                # it goes unnoticed.
                stream = _start_watch(self.config)[0] if self.options.live_reload else None
                self.rebuild()
                on_ready(self.url)
                if stream is not None:
                    self._watch(stream)
                else:
                    while True:
                        signal.pause()
            finally:
                if stream is not None:
                    stream.close()
                self.gate.stop()
                if thread.is_alive():
                    self.httpd.shutdown()
                self.httpd.server_close()
                thread.join(5)

    def rebuild(self, changed: str = "") -> bool:
        """Reload the configuration and build; True when the build succeeded."""
        self._config_bytes = _read_bytes(self.config.path)
        try:
            config = self._load()
            with self.gate.writing():
                if changed:
                    self._log(f"{changed}: rebuilding")
                self.gate.set_output(config.site.output_dir)
                report = build_site(config, workers=self.options.workers)
        except ListlibError as exc:
            self._fail(str(exc))
            return False
        except OSError as exc:
            self._fail(f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else ""))
            return False
        except Exception as exc:  # a bug in a build must not stop the dev server; say what it was
            self._fail(f"the build failed unexpectedly: {type(exc).__name__}: {exc}")
            return False
        self.config = config
        before = self.gate.status.version
        status = self.gate.publish(changed=bool(report.written or report.removed), error=None)
        reload = " (reloading pages)" if changed and self.options.live_reload and status.version != before else ""
        self._log(f"{report.summary()}{reload}")
        return True

    def _fail(self, message: str) -> None:
        self.gate.publish(changed=False, error=message)
        self._error(message)

    def _watch(self, stream: _Stream) -> None:
        """Rebuild after every burst of changes, until interrupted."""
        config = self.config
        pending: set[tuple[Change, str]] = set()
        try:
            while True:
                changes = pending or next(stream)
                pending = set()
                config_changed = _read_bytes(config.path) != self._config_bytes
                if not changes and not config_changed:
                    continue
                self.rebuild(_describe(changes, config, config_changed))
                if config_changed:
                    # Watch again: the configuration may name other folders, and the
                    # file itself may be a new one (saved by rename). The old watch
                    # runs until the new one does, so no change falls between them.
                    config = self.config
                    fresh, pending = _start_watch(config)
                    pending |= next(stream)
                    stream.close()
                    stream = fresh
        finally:
            stream.close()


_Stream = Generator[set[tuple[Change, str]], None, None]


def _start_watch(config: Config) -> tuple[_Stream, set[tuple[Change, str]]]:
    """A running watch of the site's inputs, and the changes seen while starting it.
    (watchfiles starts watching at the first ``next``, which returns after at most
    ``_POLL_MS``: from then on, every change is reported.)"""
    config.site.content_dir.mkdir(parents=True, exist_ok=True)
    stream = watch(
        *watched_paths(config),
        watch_filter=_ChangeFilter(config),
        debounce=_DEBOUNCE_MS,
        step=_STEP_MS,
        rust_timeout=_POLL_MS,
        yield_on_timeout=True,
        raise_interrupt=True,
    )
    return stream, next(stream)


def _describe(changes: set[tuple[Change, str]], config: Config, config_changed: bool) -> str:
    names = sorted({_relative(path, config.root) for _change, path in changes})
    if config_changed and config.path.name not in names:
        names.insert(0, config.path.name)
    if not names:
        return "changes"
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"changed {shown}"


def _relative(path: str, root: Path) -> str:
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return path


def _bind(options: ServeOptions, gate: SiteGate) -> DevHTTPServer:
    address = (options.host, options.port)
    try:
        return DevHTTPServer(address, gate, live_reload=options.live_reload)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            free = _next_free_port(options.host, options.port)
            hint = f"; port {free} is free: try --port {free}" if free else "; try another --port"
            raise ServeError(f"{options.host}:{options.port} is already in use{hint}") from None
        raise ServeError(f"cannot listen on {options.host}:{options.port}: {exc.strerror or exc}") from None


def _next_free_port(host: str, port: int) -> int | None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for candidate in range(port + 1, min(port + 100, 65536)):
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, candidate))
            except OSError:
                continue
            return candidate
    return None


@contextlib.contextmanager
def _interrupts() -> Iterator[None]:
    """SIGINT and SIGTERM raise KeyboardInterrupt in this process only: the build
    workers it forks inherit the handler and ignore the signal (a Ctrl-C reaches the
    whole process group), so they never die with a traceback; the pool stops them."""
    owner = os.getpid()

    def interrupt(_signum: int, _frame: FrameType | None) -> None:
        if os.getpid() == owner:
            raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
