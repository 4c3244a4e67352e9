"""The ``listlib`` command line: the only place that prints, reads the
environment, and turns errors into exit codes.

Exit codes: 0 success; 1 an error the user can fix (the message says what);
2 bad usage; 130 interrupted. Tracebacks only with ``--debug``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import re
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from . import __version__
from .config import CONFIG_NAME, Config, find_config, load_config
from .controls import terminal_text
from .errors import DeliveryError, FetchError, ListlibError, LockTimeoutError
from .values import Month, is_call_number, plural

# Each command imports the layers it needs when it runs: 'listlib import' in a cron job
# should not pay for loading the renderer, nor 'listlib build' for the POP3 client.
if TYPE_CHECKING:
    from .build import BuildReport
    from .fetch import FetchReport
    from .filing import FilingReport
    from .store import Store
    from .threadset import ThreadSet
    from .unrouted import UnroutedReport

# Delivery is imported by the commands that use it, when they run (cron runs of
# 'listlib build' should not load it).
if TYPE_CHECKING:
    from .delivery.intake import Intake
    from .delivery.queue import Outbound

log = logging.getLogger("listlib")

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class _Context:
    config_path: Path | None = None
    debug: bool = False
    quiet: bool = False

    def load(self) -> Config:
        path = self.config_path or find_config(Path.cwd())
        if path is None:
            raise click.ClickException(
                f"no {CONFIG_NAME} in {Path.cwd()} or its parents; run 'listlib init' or pass --config"
            )
        config = load_config(path)
        for warning in config.warnings:
            _echo(f"warning: {config.path}: {warning}", err=True)
        return config


def _echo(message: str = "", err: bool = False) -> None:
    """Print a line (or lines). Every output of mail-derived text (subjects, Message-IDs,
    file names, SMTP replies, error messages quoting them) goes through here, so none of
    it can drive the terminal: its control characters show as symbols (``terminal_text``)."""
    click.echo(terminal_text(message), err=err)


_JSON_RAW_RE = re.compile("[\x7f-\x9f\ud800-\udfff]")


def _echo_json(data: object, **options: Any) -> None:
    """Print data as JSON (``json.dumps`` with these options; see ``_echo_json_text``)."""
    _echo_json_text(json.dumps(data, **options))


def _echo_json_text(text: str) -> None:
    """Print a JSON text. ``json`` escapes C0 controls itself (``\\u001b``); DEL, C1
    controls and lone surrogates it leaves raw (with ``ensure_ascii=False``), so they
    are escaped here: the terminal sees none of them, and the data read back is exact."""
    click.echo(_JSON_RAW_RE.sub(lambda found: f"\\u{ord(found.group()):04x}", text))


def _echo_error(message: str) -> None:
    _echo(f"Error: {message}", err=True)


def _wait_option(help_text: str) -> Callable[[F], F]:
    """``--wait SECONDS``: how long a cron command waits for a run already in progress."""
    return click.option(
        "--wait", type=click.FloatRange(min=0), default=10.0, show_default=True, metavar="SECONDS", help=help_text
    )


def _build_option(func: F) -> F:
    """``--build``: a command that files mail then builds the website, in one process."""
    return click.option(
        "--build",
        "then_build",
        is_flag=True,
        help="Then bring the website up to date, as 'listlib build' does (in this process).",
    )(func)


def _handle_errors(func: F) -> F:
    """Run a command body, turning listlib errors into clear messages and exit codes."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        state = ctx.find_object(_Context)
        debug = bool(state and state.debug)
        try:
            return func(*args, **kwargs)
        except ListlibError as exc:
            if debug:
                traceback.print_exc()
            _echo_error(str(exc))
            sys.exit(1)
        except BrokenPipeError:
            # Output piped into 'head' and the like: stop quietly, as other tools do.
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keep Python's exit flush quiet
            sys.exit(0)
        except OSError as exc:
            # A file-system problem outside what listlib anticipates (a read-only
            # content folder, a full disk): say what and where, without a traceback.
            if debug:
                traceback.print_exc()
            where = f": {exc.filename}" if exc.filename else ""
            _echo_error(f"{exc.strerror or exc}{where}")
            sys.exit(1)
        except KeyboardInterrupt:
            _echo("Interrupted.", err=True)
            sys.exit(130)

    return wrapper  # type: ignore[return-value]


_CONFIG_HELP = f"Site configuration file (default: {CONFIG_NAME} in the current folder or a parent)."
_QUIET_HELP = "Print only problems and the final summary."
_DEBUG_HELP = "Show tracebacks for errors."


def _state(ctx: click.Context) -> _Context:
    return ctx.ensure_object(_Context)


def _set_config(ctx: click.Context, _param: click.Parameter, value: Path | None) -> None:
    if value is not None:  # the subcommand's --config wins over the group's
        _state(ctx).config_path = value


def _set_quiet(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        _state(ctx).quiet = True


def _set_debug(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        _state(ctx).debug = True
        logging.getLogger().setLevel(logging.DEBUG)


def _common_options(quiet_help: str = _QUIET_HELP) -> Callable[[F], F]:
    """``-c/--config``, ``-q/--quiet`` and ``--debug``, accepted after the command name
    as well as before it (``listlib build -q`` is ``listlib -q build``): each sets the
    shared context object, a subcommand's --config overriding the group's."""

    def decorate(func: F) -> F:
        options = [
            click.option(
                "-c",
                "--config",
                type=click.Path(path_type=Path, dir_okay=False),
                expose_value=False,
                callback=_set_config,
                help=_CONFIG_HELP,
            ),
            click.option("-q", "--quiet", is_flag=True, expose_value=False, callback=_set_quiet, help=quiet_help),
            click.option("--debug", is_flag=True, expose_value=False, callback=_set_debug, help=_DEBUG_HELP),
        ]
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@_common_options()
@click.version_option(__version__, prog_name="listlib")
def main() -> None:
    """listlib: a static-site generator for mailing-list archives.

    File mail from mbox files, Pipermail archives, maildirs and message folders
    into a call-numbered store (content/), then build a permanent static website
    from it.

    -c/--config, -q/--quiet and --debug may also be given after the command name.
    """
    debug = _state(click.get_current_context()).debug
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, format="%(levelname)s: %(message)s")


@main.command()
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False), default=".")
@click.option("--title", default="Mailing list archive", show_default=True, help="Site title.")
@click.option("--base-url", default="https://lists.example.org/", show_default=True, help="Public URL of the site.")
@_common_options(quiet_help="Print only the last line (what to do next).")
@click.pass_obj
@_handle_errors
def init(obj: _Context, directory: Path, title: str, base_url: str) -> None:
    """Create a new site skeleton in DIRECTORY (default: here).

    Writes a commented listlib.toml, an empty content/ store, a themes/ folder
    for overrides and a .gitignore. Refuses to overwrite an existing listlib.toml.
    (--config does not apply: the new configuration is DIRECTORY/listlib.toml.)
    """
    from .skeleton import write_skeleton

    if obj.config_path is not None:
        raise click.UsageError(f"init writes DIRECTORY/{CONFIG_NAME}; give the site's folder instead of --config")
    written = write_skeleton(directory, title=title, base_url=base_url)
    for path in written:
        if not obj.quiet:
            _echo(f"created {path}")
    _echo(f"Next: edit {directory / CONFIG_NAME}, then run 'listlib import MBOX_OR_FOLDER'.")


class _Progress:
    """A progress bar on a terminal, silence elsewhere."""

    # click estimates the time left from the average so far: until this share of the work
    # is done and this many seconds have passed, that average is mostly start-up (workers
    # forking, the theme loading) and the estimate is wildly off, so none is shown.
    ETA_AFTER_SHARE = 0.05
    ETA_AFTER_SECONDS = 2.0

    def __init__(self, enabled: bool, unit: str = "messages") -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.unit = unit
        self.bar: Any = None
        self.last = 0
        self.messages = 0
        self.of: int | None = None
        self.started = time.monotonic()

    @contextmanager
    def running(self, label: str) -> Iterator[_Progress]:
        if not self.enabled:
            yield self
            return
        with click.progressbar(
            length=1,
            label=label,
            file=sys.stderr,
            show_eta=False,
            show_percent=True,
            item_show_func=lambda _: f"{self.messages}{f' of {self.of}' if self.of is not None else ''} {self.unit}",
        ) as bar:
            self.bar = bar
            self.started = time.monotonic()
            yield self

    def __call__(self, done: int, total: int, messages: int, of: int | None = None) -> None:
        if self.bar is None:
            return
        self.messages = messages
        self.of = of
        self.bar.length = max(total, 1)
        self.bar.show_eta = (
            done >= total * self.ETA_AFTER_SHARE and time.monotonic() - self.started >= self.ETA_AFTER_SECONDS
        )
        self.bar.update(done - self.last, messages)
        self.last = done


def _failure(item: dict[str, object]) -> str:
    detail = f" ({item['detail']})" if item.get("detail") else ""
    return f"{item['origin']}: {item['reason']}{detail}"


def _print_report(report: FilingReport, quiet: bool) -> None:
    if not quiet:
        if report.skipped_files:
            shown = ", ".join(report.skipped_files[:5])
            more = f" and {len(report.skipped_files) - 5} more" if len(report.skipped_files) > 5 else ""
            verb = "is" if len(report.skipped_files) == 1 else "are"
            _echo(f"skipped {plural(len(report.skipped_files), 'file')} that {verb} not mail: {shown}{more}", err=True)
        for item in report.collision_details[:20]:
            _echo(
                f"Message-ID collision: <{item['message_id']}> from {item['origin']} differs from "
                f"{', '.join(map(str, item['others']))}; kept as {item['call']}",
                err=True,
            )
        if len(report.collision_details) > 20:
            _echo(f"... and {len(report.collision_details) - 20} more collisions (see --json)", err=True)
        for item in report.failures[:20]:
            _echo(f"failed: {_failure(item)} (kept as _failed/{item['call']}.eml)", err=True)
    _echo(report.summary())


def _print_unrouted_hint(count: int, *, dry_run: bool = False) -> None:
    """Mail in _no_list is never shown on the site: say so, and where to look next."""
    if count:
        what = "1 message" if count == 1 else f"{count} messages"
        verb = "would match" if dry_run else "matched"
        _echo(f"{what} {verb} no list (kept in _no_list, not published): see 'listlib unrouted'", err=True)


@main.command("import")
@click.argument("sources", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-l", "--list", "list_slug", metavar="SLUG", help="File every message under this list, ignoring routing.")
@click.option("-n", "--dry-run", is_flag=True, help="Report what would be filed; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON (for scripts and cron).")
@click.option(
    "--mbox-format",
    type=click.Choice(["auto", "mboxo", "mboxrd"]),
    default="auto",
    show_default=True,
    help="How to read '>From ' lines in mbox files; auto means mboxrd for 'From mboxrd@z' files, else mboxo.",
)
@click.option(
    "--deliver",
    "for_delivery",
    is_flag=True,
    help="Also queue the messages of lists with deliver = true for 'listlib deliver' (posts, not old archives).",
)
@_build_option
@_common_options()
@click.pass_obj
@_handle_errors
def import_(
    obj: _Context,
    sources: tuple[Path, ...],
    list_slug: str | None,
    dry_run: bool,
    as_json: bool,
    mbox_format: str,
    for_delivery: bool,
    then_build: bool,
) -> None:
    """File the mail in SOURCES into the store.

    Each SOURCE is '-' (one message or an mbox on standard input, e.g. from an
    MTA alias), an mbox file (mboxo, mboxrd, mboxcl/cl2; gzip, bzip2 or xz
    compressed), a Pipermail .txt/.txt.gz month or a folder of them, a maildir
    (with sub-folders), or a folder of message files. Mail is routed to lists by
    List-Id, then by To/Cc/Delivered-To addresses; unmatched mail goes to
    _no_list, and mail that cannot be filed to _failed with its reason.
    Importing the same mail again files nothing twice. With --deliver, the
    messages of lists with deliver = true are also queued for their
    subscribers (each message once, however often it is imported).
    With --build, the website is then brought up to date as 'listlib build'
    does, in the same process (an MTA alias publishes each post at once).
    """
    if then_build and dry_run:
        raise click.UsageError("--build cannot be used with --dry-run")
    config = obj.load()
    if list_slug is not None and config.get_list(list_slug) is None:
        known = ", ".join(lst.slug for lst in config.lists) or "none"
        raise click.BadParameter(f"unknown list slug {list_slug!r} (configured lists: {known})", param_hint="--list")
    if for_delivery and not any(lst.delivery for lst in config.lists):
        raise ListlibError(f"{config.path}: --deliver: no list has deliver = true")
    from .filing import file_sources
    from .store import Store

    progress = _Progress(enabled=not (as_json or obj.quiet))
    fault = _fault_from_env()
    with Store(config.site.content_dir, fault=fault).open() as store, progress.running("Importing") as bar:
        intake = _intake(config, store, fault) if for_delivery and not dry_run else None
        report = file_sources(
            store,
            config.lists,
            list(sources),
            forced_list=list_slug,
            dry_run=dry_run,
            mbox_format=mbox_format,  # type: ignore[arg-type]
            progress=bar,
            stdin=sys.stdin.buffer if "-" in map(str, sources) else None,
            after_filing=intake,
        )
    if not as_json:
        _print_report(report, obj.quiet)
        if not obj.quiet:
            _print_unrouted_hint(report.no_list, dry_run=dry_run)
        if intake is not None:
            _print_intake(intake, obj.quiet)
    for item in report.unreadable:
        _echo_error(f"{item['path']}: {item['reason']}")
    # A file that could not be read: the rest is filed, but the import is not complete.
    built = _run_build(config, quiet=obj.quiet, as_json=as_json) if then_build and not report.unreadable else None
    if as_json:
        data = report.to_dict()
        if intake is not None:
            data["delivery"] = asdict(intake.report)
        if built is not None:
            data["build"] = built.to_dict()
        _echo_json(data, indent=2, sort_keys=True)
    if report.unreadable:
        sys.exit(1)


@main.command()
@click.option("--plan", "plan_only", is_flag=True, help="Print what would be rebuilt; write nothing.")
@click.option("--clean", is_flag=True, help="Empty output/ and the build records, then build everything.")
@click.option(
    "--verify",
    is_flag=True,
    help="Also find files edited in place in output/ (a stat of every file; deleted or replaced ones are always).",
)
@click.option(
    "-j", "--jobs", "workers", type=click.IntRange(min=1), metavar="N", help="Worker processes (default: all cores)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary (and with --plan, the jobs) as JSON.")
@click.option("--files", "with_files", is_flag=True, help="With --json: list every file written and removed.")
@_common_options(quiet_help="Print nothing unless files were written or removed.")
@click.pass_obj
@_handle_errors
def build(
    obj: _Context,
    plan_only: bool,
    clean: bool,
    verify: bool,
    workers: int | None,
    as_json: bool,
    with_files: bool,
) -> None:
    """Build the website in output/ from content/, the theme and listlib.toml.

    Only files whose inputs changed are rewritten, and files that no longer
    belong are removed: a build with nothing new writes nothing. Threads are
    brought up to date first (see 'listlib threads'). Every file is replaced
    atomically, so the site is always readable while it builds.
    """
    from .build import plan_site

    config = obj.load()
    if plan_only:
        report = plan_site(config)
        if as_json:
            _echo_json(report.to_dict(), indent=2)
            return
        for item in report.planned:
            if "remove" in item:
                _echo(f"remove  {item['job']}" + "".join(f"\n        {path}" for path in item["remove"]))
            else:
                made = item["files"]
                _echo(f"render  {item['job']}" + (f" ({plural(len(made), 'file')})" if made else " (new)"))
        _echo(f"{plural(report.jobs_run, 'job')} to run, {report.jobs_kept} unchanged")
        return
    report = _run_build(config, workers=workers, clean=clean, verify=verify, quiet=obj.quiet, as_json=as_json)
    if as_json:
        _echo_json(report.to_dict(with_files=with_files), indent=2)


def _run_build(
    config: Config,
    *,
    workers: int | None = None,
    clean: bool = False,
    verify: bool = False,
    quiet: bool,
    as_json: bool,
) -> BuildReport:
    """Build the site with a progress bar on a terminal; print the summary unless
    ``as_json`` (or ``quiet`` and nothing changed)."""
    from .build import build_site

    progress = _Progress(enabled=not (as_json or quiet), unit="jobs")
    with progress.running("Building") as bar:
        report = build_site(
            config,
            workers=workers,
            clean=clean,
            verify=verify,
            progress=bar,
            fault=_fault_from_env(),
        )
    if not as_json and (not quiet or report.written or report.removed):
        _echo(report.summary())
    return report


@main.command()
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to listen on (loopback: only this machine)."
)
@click.option(
    "-p", "--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="Port (0: any free one)."
)
@click.option("--no-reload", is_flag=True, help="Do not watch for changes, rebuild or reload pages; just serve.")
@click.option("--open", "open_browser", is_flag=True, help="Open the site in a web browser once it is built.")
@click.option(
    "-j",
    "--jobs",
    "workers",
    type=click.IntRange(min=1),
    metavar="N",
    help="Build worker processes (default: all cores).",
)
@_common_options()
@click.pass_obj
@_handle_errors
def serve(obj: _Context, host: str, port: int, no_reload: bool, open_browser: bool, workers: int | None) -> None:
    """Build the site, serve output/ over HTTP, and rebuild it as you work.

    Watches content/, the site's theme folders and listlib.toml; after each burst
    of changes (an import, a saved template) rebuilds incrementally and every open
    page reloads itself. A failed rebuild keeps the server running and shows the
    error in the browser; fixing the file recovers. Requests wait while a rebuild
    runs, so a half-built site is never served. The reload script is added to
    pages as they are sent: files in output/ are never changed. Ctrl-C stops.
    """
    import webbrowser

    from .serve import DevServer, ServeOptions

    config = obj.load()

    def load() -> Config:
        fresh = load_config(config.path)
        for warning in fresh.warnings:
            _echo(f"warning: {fresh.path}: {warning}", err=True)
        return fresh

    options = ServeOptions(host=host, port=port, live_reload=not no_reload, workers=workers)
    server = DevServer(config, load, options, log=_echo, error=_echo_error)
    if host not in ("127.0.0.1", "localhost", "::1"):
        _echo(f"warning: listening on {host}: anyone who can reach this machine can read the site", err=True)

    def ready(url: str) -> None:
        what = "watching for changes" if options.live_reload else "not watching for changes"
        _echo(f"Serving {config.site.output_dir} at {url} ({what}; Ctrl-C to stop)")
        if open_browser and not webbrowser.open(url):
            _echo(f"warning: no web browser found; open {url} yourself", err=True)

    try:
        server.run(ready)
    except KeyboardInterrupt:
        _echo("Stopped.")


@main.command()
@click.argument("query", nargs=-1, required=True)
@click.option("-l", "--list", "list_slug", metavar="SLUG", help="Only messages of this list.")
@click.option("--json", "as_json", is_flag=True, help="Print the hits as JSON.")
@click.option("-n", "--limit", type=click.IntRange(min=1), default=10, show_default=True, help="How many hits.")
@click.option("--offset", type=click.IntRange(min=0), default=0, help="Skip this many hits (paging).")
@_common_options()
@click.pass_obj
@_handle_errors
def search(
    obj: _Context, query: tuple[str, ...], list_slug: str | None, as_json: bool, limit: int, offset: int
) -> None:
    """Search the archive with the index the last build wrote (output/search/).

    Gives the same answers as the site's search page. QUERY: words (all must
    match), "exact phrases" (quote them for the shell too), -excluded, prefix*,
    from:NAME, subject:WORD, list:SLUG, after:YYYY[-MM[-DD]], before:YYYY[-MM[-DD]].
    Put -- before a query that excludes words: listlib search -- bitmap -journal
    """
    from .search.reader import Source
    from .search.reader import search as run_search
    from .search.update import SEARCH_DIR

    config = obj.load()
    results = run_search(
        Source(config.site.output_dir / SEARCH_DIR),
        " ".join(query),
        offset=offset,
        limit=limit,
        lists=[list_slug] if list_slug else None,
    )
    base = config.site.base_url
    if as_json:
        hits = [
            {
                "message_id": hit.message_id,
                "call": hit.call,
                "list": hit.list,
                "url": base + hit.url,
                "subject": hit.subject,
                "author": hit.author,
                "date": datetime.fromtimestamp(hit.date, UTC).isoformat(),
                "score": hit.score,
            }
            for hit in results.hits
        ]
        _echo_json({"total": results.total, "hits": hits}, indent=2, ensure_ascii=False)
        return
    for hit in results.hits:
        day = datetime.fromtimestamp(hit.date, UTC).strftime("%Y-%m-%d")
        _echo(f"{day}  {hit.list}  {hit.subject or '(no subject)'}  ({hit.author})")
        _echo(f"    {base + hit.url}")
    shown = f"{offset + 1}-{offset + len(results.hits)} of " if results.hits else ""
    _echo(shown + plural(results.total, "message"))


@main.command()
@click.argument("accounts", nargs=-1, metavar="[ACCOUNT]...")
@_wait_option("How long to wait for another 'listlib fetch' of the same account before skipping it.")
@click.option("--json", "as_json", is_flag=True, help="Print the reports as JSON (for scripts).")
@_build_option
@_common_options(quiet_help="Print nothing unless mail came or something failed.")
@click.pass_obj
@_handle_errors
def fetch(obj: _Context, accounts: tuple[str, ...], wait: float, as_json: bool, then_build: bool) -> None:
    """Fetch the mail of the POP3 ACCOUNTs (default: all) into the store.

    Each message is filed like 'listlib import' files it, and deleted on the
    server only once it is safely on disk (unless the account sets
    keep_on_server; then its UIDL is remembered so it is fetched once). Made
    for cron: runs never collide (a second run for the same account waits
    --wait seconds, then skips it), and with --quiet it prints nothing unless
    something happened. Exits 1 when an account cannot be reached, logged
    into or read. Posts for lists with deliver = true are queued for
    'listlib deliver' as they are filed. With --build, the website is then
    brought up to date as 'listlib build' does, even when an account failed
    (whatever was fetched is published; the exit status still says it failed).
    """
    config = obj.load()
    quiet = obj.quiet
    if not config.pop3:
        raise ListlibError(f"{config.path}: no POP3 accounts to fetch; add a [pop3.<name>] table (see the README)")
    chosen = []
    for name in accounts:
        account = config.get_account(name)
        if account is None:
            known = ", ".join(a.name for a in config.pop3)
            raise click.BadParameter(f"no POP3 account {name!r} (configured: {known})", param_hint="ACCOUNT")
        chosen.append(account)
    from .fetch import fetch_account, resolve_password
    from .store import Store

    fault = _fault_from_env()
    reports: list[FetchReport] = []
    failed = False
    with Store(config.site.content_dir, fault=fault).open() as store:
        intake = _intake(config, store, fault)
        for account in chosen or config.pop3:
            progress = _Progress(enabled=not (as_json or quiet))
            try:
                password = resolve_password(account, os.environ)
                with progress.running(f"Fetching {account.name}") as bar:
                    report = fetch_account(
                        store,
                        config.lists,
                        account,
                        password,
                        lock_wait=wait,
                        progress=bar,
                        fault=fault,
                        after_filing=intake,
                    )
            except FetchError as exc:
                _echo_error(str(exc))
                failed = True
                continue
            reports.append(report)
            failed = failed or report.error is not None
            if not as_json:
                _print_fetch_report(report, quiet)
    if not (as_json or quiet):
        _print_unrouted_hint(sum(r.filing.no_list for r in reports))
    if intake is not None and not as_json:
        _print_intake(intake, quiet)
    built = _run_build(config, quiet=quiet, as_json=as_json) if then_build else None
    if as_json:
        fetched = [r.to_dict() for r in reports]
        data = fetched if built is None else {"accounts": fetched, "build": built.to_dict()}
        _echo_json(data, indent=2, sort_keys=True)
    if failed:
        sys.exit(1)


def _print_fetch_report(report: FetchReport, quiet: bool) -> None:
    if quiet and not report.eventful:
        return
    for warning in report.warnings:
        _echo(f"warning: {report.account}: {warning}", err=True)
    for item in report.filing.failures[:20]:
        _echo(f"failed: {_failure(item)} (kept as _failed/{item['call']}.eml)", err=True)
    for item in report.not_retrieved:
        _echo(
            f"warning: {report.account}: message {item['number']} ({item['uidl']}) could not be retrieved and stays "
            f"on the server: {item['error']}",
            err=True,
        )
    for item in report.not_deleted:
        _echo(
            f"warning: {report.account}: message {item['number']} is filed but the server refused to delete it: "
            f"{item['error']}",
            err=True,
        )
    _echo(report.summary())
    if report.error:
        _echo_error(report.error)


@main.command()
@click.option("--repair", is_flag=True, help="Rebuild the index from the files and remove leftovers.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@_common_options()
@click.pass_obj
@_handle_errors
def check(obj: _Context, repair: bool, as_json: bool) -> None:
    """Verify the store: every file indexed, every index row backed by a file,
    call numbers unique, no leftover temporary files, every file readable.

    Exits 1 when there are problems. With --repair, rebuilds the index from
    the files (the files are the truth) and removes leftovers, then checks again.
    """
    from .store import Store
    from .verify import check_store, repair_store

    config = obj.load()
    with Store(config.site.content_dir).open(discard_damaged_index=repair) as store:
        actions = repair_store(store) if repair else []
        report = check_store(store)
    if as_json:
        _echo_json(
            {
                "ok": report.ok,
                "messages": report.messages,
                "problems": report.problems,
                "leftovers": report.leftovers,
                "repaired": actions,
            },
            indent=2,
        )
    else:
        for action in actions:
            _echo(action)
        for line in report.problems + report.leftovers:
            _echo(f"problem: {line}", err=True)
        verdict = "clean" if report.ok else plural(len(report.problems) + len(report.leftovers), "problem")
        _echo(f"{plural(report.messages, 'message')} in {config.site.content_dir}: {verdict}")
    if not report.ok:
        sys.exit(1)


@main.command()
@click.option("--refile", is_flag=True, help="Move the mail the current lists now match out of _no_list into them.")
@click.option("-n", "--dry-run", is_flag=True, help="With --refile: report what would move; move nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (for scripts).")
@_common_options(quiet_help="Print only the count and what to do next, not each List-Id and address.")
@click.pass_obj
@_handle_errors
def unrouted(obj: _Context, refile: bool, dry_run: bool, as_json: bool) -> None:
    """Show the mail that matched no list (_no_list), and what would route it.

    _no_list is not published (mail not sent to a list the site archives may be
    private; [site] publish_unrouted = true publishes it as "Unsorted mail").
    Prints each List-Id and each recipient address (To, Cc, Delivered-To, ...)
    found in it with its number of messages, first and last date, an example
    subject and the listlib.toml lines that would route it. Once a list is
    added, --refile moves the matching mail into it (crash-safe; mail its list
    already has is not filed twice).
    """
    from .store import Store
    from .unrouted import refile_unrouted, unrouted_report

    if dry_run and not refile:
        raise click.UsageError("--dry-run goes with --refile")
    config = obj.load()
    with Store(config.site.content_dir, fault=_fault_from_env()).open() as store:
        if refile:
            moved = refile_unrouted(store, config, dry_run=dry_run)
            if as_json:
                _echo_json(moved.to_dict(), indent=2)
            else:
                _echo(moved.summary())
            return
        report = unrouted_report(store, config)
    if as_json:
        _echo_json(report.to_dict(), indent=2, ensure_ascii=False)
        return
    _print_unrouted(report, obj.quiet)


def _print_unrouted(report: UnroutedReport, quiet: bool) -> None:
    lines = [f"{_messages(report.messages)} in _no_list (not published)"]
    if not quiet:
        for title, routes in (("List-Ids", report.list_ids), ("Recipient addresses", report.addresses)):
            if routes:
                lines.append(f"\n{title}:")
            for route in routes:
                first, last = (time.strftime("%Y-%m-%d", time.gmtime(t)) for t in (route.first, route.last))
                lines.append(
                    f'  {route.value}: {_messages(route.messages)}, {first} .. {last}, e.g. "{route.example_subject}"'
                )
                if route.routed_to:
                    lines.append(f"    routed to list {route.routed_to} now: 'listlib unrouted --refile' moves them")
                    continue
                where = f" (add to the existing [lists.{route.slug}] table)" if route.slug_exists else ""
                lines.append(f"    listlib.toml{where}:")
                lines.extend(f"      {line}" for line in route.snippet.splitlines())
        if report.unaddressed:
            lines.append(f"\n{_messages(report.unaddressed)} with no List-Id and no recipient address")
    if len(lines) > 1:
        lines.append("")
    for slug, count in sorted(report.routable.items()):
        lines.append(f"{_messages(count)} now match list {slug}: run 'listlib unrouted --refile' to move them")
    if report.messages and not report.routable:
        lines.append("Add a list to listlib.toml, then run 'listlib unrouted --refile' to move its mail.")
    _echo("\n".join(lines))


def _messages(count: int) -> str:
    return "1 message" if count == 1 else f"{count} messages"


@main.command()
@click.option("-l", "--list", "list_slug", metavar="SLUG", help="Only this list.")
@click.option("-m", "--month", metavar="YYYY-MM", help="Only threads with messages in this month.")
@click.option("--message", metavar="CALL|MESSAGE-ID", help="Only the thread holding this message.")
@click.option("--json", "as_json", is_flag=True, help="Print the trees as JSON.")
@_common_options()
@click.pass_obj
@_handle_errors
def threads(obj: _Context, list_slug: str | None, month: str | None, message: str | None, as_json: bool) -> None:
    """Print thread trees: call number, date, subject and Message-ID of each
    message, answers indented under what they answer.

    Brings the thread cache up to date first (only months whose messages
    changed are threaded again). A placeholder line stands for a message that
    several answers refer to but the archive does not have.
    """
    from .store import Store
    from .threadset import ThreadSet
    from .threadview import dumps_json, format_thread, thread_view

    config = obj.load()
    wanted_month = _parse_month(month) if month else None
    with Store(config.site.content_dir).open() as store, ThreadSet(config.site.cache_dir).open() as threadset:
        threadset.update(store.index)
        slugs = threadset.slugs()
        if list_slug is not None:
            if list_slug not in slugs:
                raise click.BadParameter(f"no threaded messages in list {list_slug!r}", param_hint="--list")
            slugs = [list_slug]
        found = []
        for slug in slugs:
            ids = _select_threads(threadset, store, slug, wanted_month, message)
            entries = threadset.threads(slug, ids)
            rows = {
                row.call: row for row in store.index.rows_by_call(c for e in entries.values() for c, _, _ in e.messages)
            }
            found.extend(thread_view(slug, entries[i], rows) for i in sorted(entries, key=lambda i: entries[i].first))
    if message is not None and not found:
        raise ListlibError(f"no filed message has call number or Message-ID {message!r}")
    if as_json:
        _echo_json_text(dumps_json({"threads": found}))  # json.dumps recurses once per reply
        return
    for view in found:
        _echo(format_thread(view))


def _parse_month(text: str) -> Month:
    try:
        year, month = (int(part) for part in text.split("-"))
        if not 1 <= month <= 12:
            raise ValueError
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a month like 2024-03", param_hint="--month") from None
    return Month(year, month)


def _select_threads(
    threadset: ThreadSet, store: Store, slug: str, month: Month | None, message: str | None
) -> list[str]:
    if message is not None:
        calls = [message] if is_call_number(message) else []
        calls += [row.call for row in store.index.rows_by_message_id(slug, message.strip("<>"))]
        found = {threadset.thread_of(slug, call) for call in calls}
        return sorted(t for t in found if t is not None)
    if month is not None:
        return [thread_id for thread_id, _ in threadset.month(slug, month).threads]
    return threadset.thread_ids(slug)


@main.command()
@click.option("--status", is_flag=True, help="Print the queue (new, retry, failed, held posts) and send nothing.")
@click.option("--release", metavar="ID", multiple=True, help="Let a held post go out (to new/); repeatable.")
@click.option("--drop", metavar="ID", multiple=True, help="Remove a held, failed or damaged post for good; repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print the report (or with --status, the queue) as JSON.")
@_wait_option("How long to wait for another 'listlib deliver' before skipping this run.")
@_common_options(quiet_help="Print nothing unless something was sent or failed.")
@click.pass_obj
@_handle_errors
def deliver(
    obj: _Context,
    status: bool,
    release: tuple[str, ...],
    drop: tuple[str, ...],
    as_json: bool,
    wait: float,
) -> None:
    """Send queued posts to the subscribers of their list through the [smtp] server.

    Posts are queued when 'listlib fetch' (or 'listlib import --deliver') files
    mail for a list with deliver = true. New posts go first, then retries that
    are due. Each recipient is marked done, durably, as soon as the server
    accepts it, so a kill or a crash never sends a post to anyone twice (except
    the one transaction in flight). Temporary failures (4xx, server down) are
    retried with a growing wait; permanent ones (5xx) move the post to failed/
    with the reply. A damaged post (a file missing, unreadable or changed) goes
    to failed/ with the reason and is sent to nobody; the others still go out.
    Runs never overlap. With --status, prints the queue.
    """
    from .delivery.queue import Outbound
    from .delivery.runner import DeliverReport, Runner
    from .delivery.transport import SmtpSession
    from .delivery.transport import resolve_password as resolve_smtp_password

    config = obj.load()
    quiet = obj.quiet
    assert config.site.queue_dir is not None
    fault = _fault_from_env()
    outbound = Outbound(config.site.queue_dir, fault=fault)
    if status:
        _print_queue(outbound, as_json)
        return
    outbound.open()
    if release or drop:
        _release_or_drop(outbound, release, drop, wait)
        return
    if config.smtp is None:
        raise ListlibError(f"{config.path}: no [smtp] table: 'listlib deliver' needs a server to send through")
    clock = _clock_from_env()
    try:
        with outbound.running(wait):
            password = resolve_smtp_password(config.smtp, os.environ)
            progress = _Progress(enabled=not (as_json or quiet), unit="recipients")
            with SmtpSession(config.smtp, password) as session, progress.running("Delivering") as bar:
                runner = Runner(
                    outbound,
                    config.delivery,
                    session,
                    max_recipients=config.smtp.max_recipients,
                    clock=clock,
                    fault=fault,
                    progress=bar,
                )
                report = runner.run()
    except LockTimeoutError:
        report = DeliverReport(busy=True)
    if as_json:
        _echo_json(report.to_dict(), indent=2, sort_keys=True)
        return
    if quiet and not report.eventful:
        return
    _echo(report.summary())
    for item in report.damaged:
        _echo(
            f"warning: post {item['id']} is damaged: {item['reason']}; moved to failed/ and not sent "
            f"('listlib deliver --drop {item['id']}' removes it)",
            err=True,
        )
    if report.error:
        _echo(f"warning: {report.error}; the posts stay queued and are retried later", err=True)


def _release_or_drop(outbound: Outbound, release: tuple[str, ...], drop: tuple[str, ...], wait: float) -> None:
    with outbound.running(wait):
        for post_id in release:
            stage = outbound.find(post_id)
            if stage != "held":
                raise DeliveryError(f"no held post {post_id!r}" + (f" (it is in {stage}/)" if stage else ""))
            post = outbound.load("held", post_id)
            if post.damage is not None:
                raise DeliveryError(f"held post {post_id} is damaged: {post.damage.reason}; --drop it")
            with outbound.state_lock():
                outbound.move(post, "new")
            _echo(f"released {post_id}: it goes out with the next 'listlib deliver'")
        for post_id in drop:
            stage = outbound.find(post_id)
            post = outbound.load(stage, post_id) if stage is not None else None
            if post is None or (stage not in ("held", "failed") and post.message() is not None):
                raise DeliveryError(f"no held or failed post {post_id!r}" + (f" (it is in {stage}/)" if stage else ""))
            outbound.remove(post)
            _echo(f"dropped {post_id} from {stage}/")


def _print_queue(outbound: Outbound, as_json: bool) -> None:
    from .delivery.queue import STAGES, QueuedPost

    posts: list[QueuedPost] = []
    if outbound.root.is_dir():
        for stage in STAGES:
            posts.extend(outbound.iter_stage(stage))
    if as_json:
        _echo_json([post.to_dict() for post in posts], indent=2, sort_keys=True)
        return
    for post in posts:
        info = post.to_dict()
        line = (
            f"{post.stage:<6}  {post.id}  {post.slug}  {info['message_id'] or '(no Message-ID)'}  "
            f"{plural(info['recipients'], 'recipient')}: {info['done']} done, {info['failed']} failed, "
            f"{info['pending']} pending"
        )
        if post.stage == "retry":
            when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(post.next_try))
            line += f"; try {post.attempts + 1} at {when}"
        if post.stage == "held":
            line += f"; held: {info['held_reason']}"
        if post.damage is not None:
            line += f"; damaged: {post.damage.reason}"
        _echo(line)
        for recipient, reply in list(info["failures"].items())[:20]:
            _echo(f"        failed  {recipient}: {reply}")
        for recipient, reply in list(info["temporary"].items())[:5]:
            _echo(f"        pending {recipient}: {reply}")
    counts = {stage: sum(1 for p in posts if p.stage == stage) for stage in STAGES}
    _echo(f"{plural(len(posts), 'post')} queued: " + ", ".join(f"{counts[s]} {s}" for s in STAGES))


@main.command()
@click.option("-l", "--list", "list_slug", metavar="SLUG", help="Only this list.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@_common_options()
@click.pass_obj
@_handle_errors
def bounces(obj: _Context, list_slug: str | None, as_json: bool) -> None:
    """List subscribers whose mail bounced: how often, first and last time.

    Bounces are recognised when 'listlib fetch' (or 'import --deliver') files
    them: by their VERP address ([delivery] verp = true) or as a standard
    delivery status notification to the list's bounce address. Nobody is
    unsubscribed automatically.
    """
    from .delivery.bounce import BounceLog

    config = obj.load()
    assert config.site.queue_dir is not None
    rows = BounceLog(config.site.queue_dir).report(list_slug)
    if as_json:
        _echo_json(rows, indent=2)
        return
    for row in rows:
        first = time.strftime("%Y-%m-%d", time.gmtime(float(row["first"])))  # type: ignore[arg-type]
        last = time.strftime("%Y-%m-%d", time.gmtime(float(row["last"])))  # type: ignore[arg-type]
        bounced = plural(int(row["bounces"]), "bounce")  # type: ignore[call-overload]
        _echo(f"{row['list']}  {row['address']}  {bounced} ({first} .. {last})")
    _echo(f"{plural(len(rows), 'bouncing subscriber')}")


def _intake(config: Config, store: Store, fault: Callable[[str], None] | None) -> Intake | None:
    """The filing hook that queues posts of lists with deliver = true, or None when there are none."""
    if not any(lst.delivery for lst in config.lists):
        return None
    from .delivery.intake import Intake
    from .delivery.queue import Outbound

    assert config.site.queue_dir is not None
    outbound = Outbound(config.site.queue_dir, fault=fault).open()
    return Intake(store, config, outbound, _clock_from_env())


def _print_intake(intake: Intake, quiet: bool) -> None:
    report = intake.report
    if quiet and not report.eventful:
        return
    for item in report.held:
        _echo(f"held: {item['list']}/{item['id']}: {item['reason']} (see 'listlib deliver --status')", err=True)
    for item in report.loops:
        _echo(f"not forwarded: {item['list']}/{item['id']}: {item['reason']}", err=True)
    _echo(report.summary())


def _clock_from_env() -> Callable[[], float]:
    """The delivery clock: the real one, or LISTLIB_NOW (Unix seconds) so tests can move time forward."""
    fixed = os.environ.get("LISTLIB_NOW")
    if not fixed:
        return time.time
    try:
        value = float(fixed)
    except ValueError:
        raise ListlibError(f"LISTLIB_NOW={fixed!r} is not a number of seconds") from None
    return lambda: value


def _fault_from_env() -> Callable[[str], None] | None:
    """Crash tests set LISTLIB_CRASH_AT=POINT:N to SIGKILL this process the N-th time
    it reaches POINT (a real kill -9 at an exact moment; see tests/test_crash.py), or
    LISTLIB_STOP_AT=POINT:N to SIGSTOP it there (the test then breaks something, such
    as the POP3 server, and lets it continue with SIGCONT)."""
    points: list[tuple[str, signal.Signals]] = []
    remaining: list[int] = []
    for variable, sig in (("LISTLIB_CRASH_AT", signal.SIGKILL), ("LISTLIB_STOP_AT", signal.SIGSTOP)):
        spec = os.environ.get(variable)
        if spec:
            point, _, count = spec.partition(":")
            points.append((point, sig))
            remaining.append(int(count or 1))
    if not points:
        return None

    def fault(name: str) -> None:
        for number, (point, sig) in enumerate(points):
            if name == point:
                remaining[number] -= 1
                if remaining[number] == 0:
                    os.kill(os.getpid(), sig)

    return fault


def run() -> None:
    """Console-script entry point."""
    try:
        main(prog_name="listlib")
    except SystemExit as exc:
        _leave(exc.code)
    _leave(0)


def _leave(code: object) -> NoReturn:
    """End the process with ``code`` as soon as a command is done.

    Every command has made its work durable and closed what it opened when it
    returns, so the interpreter's teardown (freeing every module and object) only
    costs time, paid by every post an MTA pipes into 'listlib import --build'. It
    is skipped unless something still runs (a thread or a child process someone
    forgot), in which case the exit is the ordinary one."""
    if isinstance(code, str):
        _echo(code, err=True)
        code = 1
    elif code is None:
        code = 0
    if not isinstance(code, int) or _still_running():
        raise SystemExit(code)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):  # a closed pipe: nothing more can be said
            stream.flush()
    os._exit(code)


def _still_running() -> bool:
    """Whether another non-daemon thread or a child process is still alive."""
    main_thread = threading.main_thread()
    if any(t is not main_thread and not t.daemon and t.is_alive() for t in threading.enumerate()):
        return True
    multiprocessing = sys.modules.get("multiprocessing")
    return multiprocessing is not None and bool(multiprocessing.active_children())
