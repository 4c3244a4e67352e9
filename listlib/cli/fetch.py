"""``listlib fetch``: fetch the mail of POP3 accounts into the store."""

from __future__ import annotations

import os
import sys
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
    from ..fetch import FetchReport


@click.command()
@click.argument("accounts", nargs=-1, metavar="[ACCOUNT]...")
@wait_option("How long to wait for another 'listlib fetch' of the same account before skipping it.")
@click.option("--json", "as_json", is_flag=True, help="Print the reports as JSON (for scripts).")
@build_option
@common_options(quiet_help="Print nothing unless mail came or something failed.")
@click.pass_obj
@handle_errors
def fetch(obj: Context, accounts: tuple[str, ...], wait: float, as_json: bool, then_build: bool) -> None:
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
    from ..fetch import fetch_account, resolve_password
    from ..store.core import Store

    fault = fault_from_env()
    reports: list[FetchReport] = []
    failed = False
    with Store(config.site.content_dir, fault=fault).open() as store:
        intake = open_intake(config, store, fault)
        for account in chosen or config.pop3:
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
                    )
            except FetchError as exc:
                echo_error(str(exc))
                failed = True
                continue
            reports.append(report)
            failed = failed or report.error is not None
            if not as_json:
                _print_fetch_report(report, quiet)
    if not (as_json or quiet):
        print_unrouted_hint(sum(r.filing.no_list for r in reports))
    if intake is not None and not as_json:
        print_intake(intake, quiet)
    built = run_build(config, quiet=quiet, as_json=as_json) if then_build else None
    if as_json:
        fetched = [r.to_dict() for r in reports]
        data = fetched if built is None else {"accounts": fetched, "build": built.to_dict()}
        echo_json(data, indent=2, sort_keys=True)
    if failed:
        sys.exit(1)


def _print_fetch_report(report: FetchReport, quiet: bool) -> None:
    if quiet and not report.eventful:
        return
    for warning in report.warnings:
        echo(f"warning: {report.account}: {warning}", err=True)
    for item in report.filing.failures[:20]:
        echo(f"failed: {failure_line(item)} (kept as _failed/{item['call']}.eml)", err=True)
    for item in report.not_retrieved:
        echo(
            f"warning: {report.account}: message {item['number']} ({item['uidl']}) could not be retrieved and stays "
            f"on the server: {item['error']}",
            err=True,
        )
    for item in report.not_deleted:
        echo(
            f"warning: {report.account}: message {item['number']} is filed but the server refused to delete it: "
            f"{item['error']}",
            err=True,
        )
    echo(report.summary())
    if report.error:
        echo_error(report.error)
