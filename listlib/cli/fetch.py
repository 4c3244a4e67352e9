"""``listlib fetch``: fetch the mail of POP3 and IMAP accounts into the store, once or ``--watch``-ing."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import click

from ..errors import FetchError, ListlibError
from .build import run_build
from .common import (
    Context,
    Progress,
    build_option,
    common_options,
    echo,
    echo_error,
    echo_json,
    handle_errors,
    wait_option,
)
from .hooks import fault_from_env
from .import_ import failure_line, open_intake, print_intake, print_unrouted_hint

if TYPE_CHECKING:
    from ..config import Config
    from ..fetch import Account, FetchReport


@click.command()
@click.argument("accounts", nargs=-1, metavar="[ACCOUNT]...")
@wait_option("How long to wait for another 'listlib fetch' of the same account before skipping it.")
@click.option("--json", "as_json", is_flag=True, help="Print the reports as JSON (for scripts).")
@click.option(
    "--watch",
    is_flag=True,
    help="Keep running: fetch again as mail arrives (IMAP IDLE) or every --interval seconds, until SIGTERM or Ctrl-C.",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=1),
    default=60.0,
    metavar="SECONDS",
    show_default=True,
    help="With --watch: seconds between checks of POP3 accounts and IMAP servers without IDLE.",
)
@build_option
@common_options(quiet_help="Print nothing unless mail came or something failed.")
@click.pass_obj
@handle_errors
def fetch(
    obj: Context,
    accounts: tuple[str, ...],
    wait: float,
    as_json: bool,
    watch: bool,
    interval: float,
    then_build: bool,
) -> None:
    """Fetch the mail of the POP3 and IMAP ACCOUNTs (default: all) into the store.

    Each message is filed like 'listlib import' files it, and removed from the
    server only once it is safely on disk: deleted (POP3, and IMAP with after =
    "delete"), moved to another folder (IMAP, after = "move"), or left there
    and remembered so it is fetched once (POP3 keep_on_server, IMAP after =
    "keep", or "seen" to mark it read). Made for cron: runs never collide (a second run for the same
    account waits --wait seconds, then skips it), and with --quiet it prints
    nothing unless something happened. Exits 1 when an account cannot be
    reached, logged into or read. Posts for lists with deliver = true are
    queued for 'listlib deliver' as they are filed. With --build, the website
    is then brought up to date as 'listlib build' does, even when an account
    failed (whatever was fetched is published; the exit status still says it
    failed). With --watch it keeps running (for a systemd service): IMAP
    accounts are watched with IDLE and fetched as mail arrives, everything is
    checked every --interval seconds, lost connections are retried with
    backoff, and SIGTERM or Ctrl-C stops it cleanly (exit 0).
    """
    config = obj.load()
    quiet = obj.quiet
    if not config.accounts:
        raise ListlibError(
            f"{config.path}: no POP3 accounts to fetch (and no IMAP ones); add a [pop3.<name>] or [imap.<name>] "
            "table (see the README)"
        )
    if watch and as_json:
        raise click.UsageError("--json and --watch do not go together")
    chosen = []
    for name in accounts:
        account = config.get_any_account(name)
        if account is None:
            known = ", ".join(a.name for a in config.accounts)
            kinds = " or ".join(kind for kind, there in (("POP3", config.pop3), ("IMAP", config.imap)) if there)
            raise click.BadParameter(f"no {kinds} account {name!r} (configured: {known})", param_hint="ACCOUNT")
        chosen.append(account)
    fetching = tuple(chosen) or config.accounts
    if watch:
        _watch(config, fetching, wait=wait, interval=interval, quiet=quiet, then_build=then_build)
        return
    reports, failed = _fetch_all(config, fetching, wait=wait, quiet=quiet, as_json=as_json)
    built = run_build(config, quiet=quiet, as_json=as_json) if then_build else None
    if as_json:
        fetched = [r.to_dict() for r in reports]
        data = fetched if built is None else {"accounts": fetched, "build": built.to_dict()}
        echo_json(data, indent=2, sort_keys=True)
    if failed:
        sys.exit(1)


def _fetch_all(
    config: Config,
    accounts: Sequence[Account],
    *,
    wait: float,
    quiet: bool,
    as_json: bool,
    halt: Callable[[], bool] | None = None,
) -> tuple[list[FetchReport], list[str]]:
    """Fetch the accounts one after the other, printing each report; return the
    reports and the names of the accounts that failed."""
    from ..fetch import fetch_account, resolve_password
    from ..store.core import Store

    fault = fault_from_env()
    reports: list[FetchReport] = []
    failed: list[str] = []
    with Store(config.site.content_dir, fault=fault).open() as store:
        intake = open_intake(config, store, fault)
        for account in accounts:
            progress = Progress(enabled=not (as_json or quiet))
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
                        halt=halt,
                    )
            except FetchError as exc:
                echo_error(str(exc))
                failed.append(account.name)
                continue
            reports.append(report)
            if report.error is not None:
                failed.append(account.name)
            if not as_json:
                _print_fetch_report(report, quiet)
    if not (as_json or quiet):
        print_unrouted_hint(sum(r.filing.no_list for r in reports))
    if intake is not None and not as_json:
        print_intake(intake, quiet)
    return reports, failed


def _watch(
    config: Config, accounts: Sequence[Account], *, wait: float, interval: float, quiet: bool, then_build: bool
) -> None:
    """``--watch``: fetch (and build) as mail arrives until SIGTERM or SIGINT."""
    from ..fetch import resolve_password
    from ..watch import StopFlag, watch

    passwords = {account.name: resolve_password(account, os.environ) for account in accounts}
    stop = StopFlag()

    def on_signal(signum: int, frame: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt  # a second Ctrl-C: stop at once (nothing is lost either way)
        stop.set()

    def cycle(due: list[Account]) -> list[str]:
        reports, failed = _fetch_all(config, due, wait=wait, quiet=True, as_json=False, halt=stop.is_set)
        if then_build and (first[0] or any(r.retrieved for r in reports)):
            run_build(config, quiet=quiet, as_json=False)
        first[0] = False
        return failed

    first = [True]
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        if not quiet:
            names = ", ".join(account.name for account in accounts)
            echo(f"Watching {names} (stop with Ctrl-C or SIGTERM)")
        watch(accounts, passwords, cycle, interval=interval, stop=stop, log=lambda text: echo(text, err=True))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if not quiet:
        echo("Stopped.")


def _print_fetch_report(report: FetchReport, quiet: bool) -> None:
    if quiet and not report.eventful:
        return
    for warning in report.warnings:
        echo(f"warning: {report.account}: {warning}", err=True)
    for item in report.filing.failures[:20]:
        echo(f"failed: {failure_line(item)} (kept as _failed/{item['call']}.eml)", err=True)
    for item in report.not_retrieved:
        echo(
            f"warning: {report.account}: message {_which(item)} could not be retrieved and stays "
            f"on the server: {item['error']}",
            err=True,
        )
    for item in report.not_deleted:
        verb = "move" if report.moved else "delete"
        echo(
            f"warning: {report.account}: message {_which(item, uidl=False)} is filed but the server refused to "
            f"{verb} it: {item['error']}",
            err=True,
        )
    echo(report.summary())
    if report.error:
        echo_error(report.error)


def _which(item: dict[str, object], *, uidl: bool = True) -> str:
    """A message in a report: POP3 ``12 (UIDL)``, IMAP ``UID 7 in 'INBOX'``."""
    if "uid" in item:
        return f"UID {item['uid']} in {item['folder']!r}"
    return f"{item['number']} ({item['uidl']})" if uidl else f"{item['number']}"
