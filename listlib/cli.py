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
from .errors import DeliveryError, FetchError, ListlibError, LockTimeoutError
from .values import Month, is_call_number

# Each command imports the layers it needs when it runs: 'listlib import' in a cron job
# should not pay for loading the renderer, nor 'listlib build' for the POP3 client.
if TYPE_CHECKING:
    from .build import BuildReport
    from .fetch import FetchReport
    from .filing import FilingReport
    from .store import Store
    from .threadset import ThreadSet

# Delivery is imported by the commands that use it, when they run (cron runs of
# 'listlib build' should not load it).
if TYPE_CHECKING:
    from .delivery.intake import Intake
    from .delivery.queue import Outbound

log = logging.getLogger("listlib")

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class _Context:
    config_path: Path | None
    debug: bool
    quiet: bool

    def load(self) -> Config:
        path = self.config_path or find_config(Path.cwd())
        if path is None:
            raise click.ClickException(
                f"no {CONFIG_NAME} in {Path.cwd()} or its parents; run 'listlib init' or pass --config"
            )
        config = load_config(path)
        for warning in config.warnings:
            click.echo(f"warning: {config.path}: {warning}", err=True)
        return config


def _echo_error(message: str) -> None:
    click.echo(f"Error: {message}", err=True)


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
            click.echo("Interrupted.", err=True)
            sys.exit(130)

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "-c",
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help=f"Site configuration file (default: {CONFIG_NAME} in the current folder or a parent).",
)
@click.option("-q", "--quiet", is_flag=True, help="Print only problems and the final summary.")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.version_option(__version__, prog_name="listlib")
@click.pass_context
def main(ctx: click.Context, config_path: Path | None, quiet: bool, debug: bool) -> None:
    """listlib: a static-site generator for mailing-list archives.

    File mail from mbox files, Pipermail archives, maildirs and message folders
    into a call-numbered store (content/), then build a permanent static website
    from it.
    """
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, format="%(levelname)s: %(message)s")
    ctx.obj = _Context(config_path=config_path, debug=debug, quiet=quiet)


@main.command()
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False), default=".")
@click.option("--title", default="Mailing list archive", show_default=True, help="Site title.")
@click.option("--base-url", default="https://lists.example.org/", show_default=True, help="Public URL of the site.")
@_handle_errors
def init(directory: Path, title: str, base_url: str) -> None:
    """Create a new site skeleton in DIRECTORY (default: here).

    Writes a commented listlib.toml, an empty content/ store, a themes/ folder
    for overrides and a .gitignore. Refuses to overwrite an existing listlib.toml.
    """
    from .skeleton import write_skeleton

    written = write_skeleton(directory, title=title, base_url=base_url)
    for path in written:
        click.echo(f"created {path}")
    click.echo(f"Next: edit {directory / CONFIG_NAME}, then run 'listlib import MBOX_OR_FOLDER'.")


class _Progress:
    """A progress bar on a terminal, silence elsewhere."""

    def __init__(self, enabled: bool, unit: str = "messages") -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.unit = unit
        self.bar: Any = None
        self.last = 0
        self.messages = 0

    @contextmanager
    def running(self, label: str) -> Iterator[_Progress]:
        if not self.enabled:
            yield self
            return
        with click.progressbar(
            length=1,
            label=label,
            file=sys.stderr,
            show_eta=True,
            show_percent=True,
            item_show_func=lambda _: f"{self.messages} {self.unit}",
        ) as bar:
            self.bar = bar
            yield self

    def __call__(self, done: int, total: int, messages: int) -> None:
        if self.bar is None:
            return
        self.messages = messages
        self.bar.length = max(total, 1)
        self.bar.update(done - self.last, messages)
        self.last = done


def _print_report(report: FilingReport, quiet: bool) -> None:
    if not quiet:
        if report.skipped_files:
            shown = ", ".join(report.skipped_files[:5])
            more = f" and {len(report.skipped_files) - 5} more" if len(report.skipped_files) > 5 else ""
            click.echo(f"skipped {len(report.skipped_files)} files that are not mail: {shown}{more}", err=True)
        for item in report.collision_details[:20]:
            click.echo(
                f"Message-ID collision: <{item['message_id']}> from {item['origin']} differs from "
                f"{', '.join(map(str, item['others']))}; kept as {item['call']}",
                err=True,
            )
        if len(report.collision_details) > 20:
            click.echo(f"... and {len(report.collision_details) - 20} more collisions (see --json)", err=True)
        for item in report.failures[:20]:
            click.echo(f"failed: {item['origin']}: {item['reason']} (kept as _failed/{item['call']}.eml)", err=True)
    click.echo(report.summary())


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
        click.echo(json.dumps(data, indent=2, sort_keys=True))
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
@click.option("-q", "--quiet", "quiet_here", is_flag=True, help="Print nothing unless files were written or removed.")
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
    quiet_here: bool,
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
            click.echo(json.dumps(report.to_dict(), indent=2))
            return
        for item in report.planned:
            if "remove" in item:
                click.echo(f"remove  {item['job']}" + "".join(f"\n        {path}" for path in item["remove"]))
            else:
                made = item["files"]
                click.echo(f"render  {item['job']}" + (f" ({len(made)} files)" if made else " (new)"))
        click.echo(f"{report.jobs_run} jobs to run, {report.jobs_kept} unchanged")
        return
    quiet = quiet_here or obj.quiet
    report = _run_build(config, workers=workers, clean=clean, verify=verify, quiet=quiet, as_json=as_json)
    if as_json:
        click.echo(json.dumps(report.to_dict(with_files=with_files), indent=2))


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

    progress = _Progress(enabled=not (as_json or quiet), unit="work units")
    with progress.running("Building") as bar:
        report = build_site(
            config,
            workers=workers,
            clean=clean,
            verify=verify,
            progress=lambda done, total: bar(done, total, done),
            fault=_fault_from_env(),
        )
    if not as_json and (not quiet or report.written or report.removed):
        click.echo(report.summary())
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
            click.echo(f"warning: {fresh.path}: {warning}", err=True)
        return fresh

    options = ServeOptions(host=host, port=port, live_reload=not no_reload, workers=workers)
    server = DevServer(config, load, options, log=click.echo, error=_echo_error)
    if host not in ("127.0.0.1", "localhost", "::1"):
        click.echo(f"warning: listening on {host}: anyone who can reach this machine can read the site", err=True)

    def ready(url: str) -> None:
        what = "watching for changes" if options.live_reload else "not watching for changes"
        click.echo(f"Serving {config.site.output_dir} at {url} ({what}; Ctrl-C to stop)")
        if open_browser and not webbrowser.open(url):
            click.echo(f"warning: no web browser found; open {url} yourself", err=True)

    try:
        server.run(ready)
    except KeyboardInterrupt:
        click.echo("Stopped.")


@main.command()
@click.argument("query", nargs=-1, required=True)
@click.option("-l", "--list", "list_slug", metavar="SLUG", help="Only messages of this list.")
@click.option("--json", "as_json", is_flag=True, help="Print the hits as JSON.")
@click.option("-n", "--limit", type=click.IntRange(min=1), default=10, show_default=True, help="How many hits.")
@click.option("--offset", type=click.IntRange(min=0), default=0, help="Skip this many hits (paging).")
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
        click.echo(json.dumps({"total": results.total, "hits": hits}, indent=2, ensure_ascii=False))
        return
    for hit in results.hits:
        day = datetime.fromtimestamp(hit.date, UTC).strftime("%Y-%m-%d")
        click.echo(f"{day}  {hit.list}  {hit.subject or '(no subject)'}  ({hit.author})")
        click.echo(f"    {base + hit.url}")
    shown = f"{offset + 1}-{offset + len(results.hits)} of " if results.hits else ""
    click.echo(f"{shown}{results.total} messages")


@main.command()
@click.argument("accounts", nargs=-1, metavar="[ACCOUNT]...")
@click.option("-q", "--quiet", "quiet_here", is_flag=True, help="Print nothing unless mail came or something failed.")
@_wait_option("How long to wait for another 'listlib fetch' of the same account before skipping it.")
@click.option("--json", "as_json", is_flag=True, help="Print the reports as JSON (for scripts).")
@_build_option
@click.pass_obj
@_handle_errors
def fetch(
    obj: _Context, accounts: tuple[str, ...], quiet_here: bool, wait: float, as_json: bool, then_build: bool
) -> None:
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
    quiet = quiet_here or obj.quiet
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
    if intake is not None and not as_json:
        _print_intake(intake, quiet)
    built = _run_build(config, quiet=quiet, as_json=as_json) if then_build else None
    if as_json:
        fetched = [r.to_dict() for r in reports]
        data = fetched if built is None else {"accounts": fetched, "build": built.to_dict()}
        click.echo(json.dumps(data, indent=2, sort_keys=True))
    if failed:
        sys.exit(1)


def _print_fetch_report(report: FetchReport, quiet: bool) -> None:
    if quiet and not report.eventful:
        return
    for warning in report.warnings:
        click.echo(f"warning: {report.account}: {warning}", err=True)
    for item in report.filing.failures[:20]:
        click.echo(f"failed: {item['origin']}: {item['reason']} (kept as _failed/{item['call']}.eml)", err=True)
    for item in report.not_retrieved:
        click.echo(
            f"warning: {report.account}: message {item['number']} ({item['uidl']}) could not be retrieved and stays "
            f"on the server: {item['error']}",
            err=True,
        )
    for item in report.not_deleted:
        click.echo(
            f"warning: {report.account}: message {item['number']} is filed but the server refused to delete it: "
            f"{item['error']}",
            err=True,
        )
    click.echo(report.summary())
    if report.error:
        _echo_error(report.error)


@main.command()
@click.option("--repair", is_flag=True, help="Rebuild the index from the files and remove leftovers.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
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
        click.echo(
            json.dumps(
                {
                    "ok": report.ok,
                    "messages": report.messages,
                    "problems": report.problems,
                    "leftovers": report.leftovers,
                    "repaired": actions,
                },
                indent=2,
            )
        )
    else:
        for action in actions:
            click.echo(action)
        for line in report.problems + report.leftovers:
            click.echo(f"problem: {line}", err=True)
        verdict = "clean" if report.ok else f"{len(report.problems) + len(report.leftovers)} problems"
        click.echo(f"{report.messages} messages in {config.site.content_dir}: {verdict}")
    if not report.ok:
        sys.exit(1)


@main.command()
@click.option("-l", "--list", "list_slug", metavar="SLUG", help="Only this list.")
@click.option("-m", "--month", metavar="YYYY-MM", help="Only threads with messages in this month.")
@click.option("--message", metavar="CALL|MESSAGE-ID", help="Only the thread holding this message.")
@click.option("--json", "as_json", is_flag=True, help="Print the trees as JSON.")
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
    from .threadview import format_thread, thread_view

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
        click.echo(json.dumps({"threads": found}, indent=2, ensure_ascii=False))
        return
    for view in found:
        click.echo(format_thread(view))


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
@click.option("-q", "--quiet", "quiet_here", is_flag=True, help="Print nothing unless something was sent or failed.")
@_wait_option("How long to wait for another 'listlib deliver' before skipping this run.")
@click.pass_obj
@_handle_errors
def deliver(
    obj: _Context,
    status: bool,
    release: tuple[str, ...],
    drop: tuple[str, ...],
    as_json: bool,
    quiet_here: bool,
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
    quiet = quiet_here or obj.quiet
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
        click.echo(json.dumps(report.to_dict(), indent=2, sort_keys=True))
        return
    if quiet and not report.eventful:
        return
    click.echo(report.summary())
    for item in report.damaged:
        click.echo(
            f"warning: post {item['id']} is damaged: {item['reason']}; moved to failed/ and not sent "
            f"('listlib deliver --drop {item['id']}' removes it)",
            err=True,
        )
    if report.error:
        click.echo(f"warning: {report.error}; the posts stay queued and are retried later", err=True)


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
            click.echo(f"released {post_id}: it goes out with the next 'listlib deliver'")
        for post_id in drop:
            stage = outbound.find(post_id)
            post = outbound.load(stage, post_id) if stage is not None else None
            if post is None or (stage not in ("held", "failed") and post.message() is not None):
                raise DeliveryError(f"no held or failed post {post_id!r}" + (f" (it is in {stage}/)" if stage else ""))
            outbound.remove(post)
            click.echo(f"dropped {post_id} from {stage}/")


def _print_queue(outbound: Outbound, as_json: bool) -> None:
    from .delivery.queue import STAGES, QueuedPost

    posts: list[QueuedPost] = []
    if outbound.root.is_dir():
        for stage in STAGES:
            posts.extend(outbound.iter_stage(stage))
    if as_json:
        click.echo(json.dumps([post.to_dict() for post in posts], indent=2, sort_keys=True))
        return
    for post in posts:
        info = post.to_dict()
        line = (
            f"{post.stage:<6}  {post.id}  {post.slug}  {info['message_id'] or '(no Message-ID)'}  "
            f"{info['recipients']} recipients: {info['done']} done, {info['failed']} failed, {info['pending']} pending"
        )
        if post.stage == "retry":
            when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(post.next_try))
            line += f"; try {post.attempts + 1} at {when}"
        if post.stage == "held":
            line += f"; held: {info['held_reason']}"
        if post.damage is not None:
            line += f"; damaged: {post.damage.reason}"
        click.echo(line)
        for recipient, reply in list(info["failures"].items())[:20]:
            click.echo(f"        failed  {recipient}: {reply}")
        for recipient, reply in list(info["temporary"].items())[:5]:
            click.echo(f"        pending {recipient}: {reply}")
    counts = {stage: sum(1 for p in posts if p.stage == stage) for stage in STAGES}
    click.echo(f"{len(posts)} posts queued: " + ", ".join(f"{counts[s]} {s}" for s in STAGES))


@main.command()
@click.option("-l", "--list", "list_slug", metavar="SLUG", help="Only this list.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
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
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        first = time.strftime("%Y-%m-%d", time.gmtime(float(row["first"])))  # type: ignore[arg-type]
        last = time.strftime("%Y-%m-%d", time.gmtime(float(row["last"])))  # type: ignore[arg-type]
        click.echo(f"{row['list']}  {row['address']}  {row['bounces']} bounces ({first} .. {last})")
    click.echo(f"{len(rows)} bouncing subscribers")


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
        click.echo(f"held: {item['list']}/{item['id']}: {item['reason']} (see 'listlib deliver --status')", err=True)
    for item in report.loops:
        click.echo(f"not forwarded: {item['list']}/{item['id']}: {item['reason']}", err=True)
    click.echo(report.summary())


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
        click.echo(code, err=True)
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
