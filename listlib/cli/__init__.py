"""The ``listlib`` command line: the only place that prints, reads the
environment, and turns errors into exit codes.

Exit codes: 0 success; 1 an error the user can fix (the message says what);
2 bad usage; 130 interrupted. Tracebacks only with ``--debug``.

One module per command (``init``, ``import_``, ``build``, ``serve``, ``search``,
``fetch``, ``check``, ``unrouted``, ``threads``, ``series``,
``deliver``, ``bounces``, ``legacy``, ``publish``; ``steward``
holds ``hide``, ``unhide``, ``remove``, ``redact`` and ``ledger``), each
registered on the ``main`` group here; ``common`` holds what they share and
``hooks`` the test-only fault and clock hooks. Each command imports the layers it
needs when it runs: 'listlib import' in a cron job should not pay for loading the
renderer, nor 'listlib build' for the POP3 client.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from typing import NoReturn

import click

from .. import __version__
from . import (
    bounces,
    build,
    check,
    deliver,
    fetch,
    import_,
    init,
    legacy,
    publish,
    search,
    series,
    serve,
    steward,
    threads,
    unrouted,
)
from .common import common_options, echo, state_of

log = logging.getLogger("listlib")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@common_options()
@click.version_option(__version__, prog_name="listlib")
def main() -> None:
    """listlib: a static-site generator for mailing-list archives.

    File mail from mbox files, Pipermail archives, maildirs and message folders
    into a call-numbered store (content/), then build a permanent static website
    from it.

    -c/--config, -q/--quiet and --debug may also be given after the command name.
    """
    debug = state_of(click.get_current_context()).debug
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, format="%(levelname)s: %(message)s")


main.add_command(bounces.bounces)
main.add_command(build.build)
main.add_command(check.check)
main.add_command(deliver.deliver)
main.add_command(fetch.fetch)
main.add_command(steward.hide)
main.add_command(import_.import_)
main.add_command(init.init)
main.add_command(legacy.legacy)
main.add_command(steward.ledger)
main.add_command(publish.publish)
main.add_command(steward.redact)
main.add_command(steward.remove)
main.add_command(search.search)
main.add_command(serve.serve)
main.add_command(series.series)
main.add_command(threads.threads)
main.add_command(steward.unhide)
main.add_command(unrouted.unrouted)


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
        echo(code, err=True)
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
