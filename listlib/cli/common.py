"""What every command shares: the context object, all output (through ``echo``, so
mail-derived text cannot drive the terminal), the common options, the progress bar,
and ``handle_errors``, which turns listlib errors into messages and exit codes."""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import shlex
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from ..config import CONFIG_NAME, Config, find_config, load_config
from ..controls import terminal_text
from ..errors import ListlibError

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class Context:
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
            echo(f"warning: {config.path}: {warning}", err=True)
        return config


def check_list_option(config: Config, slug: str | None) -> None:
    """A ``--list SLUG`` naming no configured list is a usage error, in the same words
    for every command."""
    if slug is not None and config.get_list(slug) is None:
        known = ", ".join(lst.slug for lst in config.lists) or "none"
        raise click.BadParameter(f"unknown list slug {slug!r} (configured lists: {known})", param_hint="--list")


def command_line() -> str:
    """This command as typed (the ledger records who did what with it)."""
    return shlex.join(["listlib", *sys.argv[1:]])


def echo(message: str = "", err: bool = False) -> None:
    """Print a line (or lines). Every output of mail-derived text (subjects, Message-IDs,
    file names, SMTP replies, error messages quoting them) goes through here, so none of
    it can drive the terminal: its control characters show as symbols (``terminal_text``)."""
    click.echo(terminal_text(message), err=err)


_JSON_RAW_RE = re.compile("[\x7f-\x9f\ud800-\udfff]")


def echo_json(data: object, **options: Any) -> None:
    """Print data as JSON (``json.dumps`` with these options; see ``echo_json_text``)."""
    echo_json_text(json.dumps(data, **options))


def echo_json_text(text: str) -> None:
    """Print a JSON text. ``json`` escapes C0 controls itself (``\\u001b``); DEL, C1
    controls and lone surrogates it leaves raw (with ``ensure_ascii=False``), so they
    are escaped here: the terminal sees none of them, and the data read back is exact."""
    click.echo(_JSON_RAW_RE.sub(lambda found: f"\\u{ord(found.group()):04x}", text))


def echo_error(message: str) -> None:
    echo(f"Error: {message}", err=True)


def wait_option(help_text: str) -> Callable[[F], F]:
    """``--wait SECONDS``: how long a cron command waits for a run already in progress."""
    return click.option(
        "--wait", type=click.FloatRange(min=0), default=10.0, show_default=True, metavar="SECONDS", help=help_text
    )


def build_option(func: F) -> F:
    """``--build``: a command that files mail then builds the website, in one process."""
    return click.option(
        "--build",
        "then_build",
        is_flag=True,
        help="Then bring the website up to date, as 'listlib build' does (in this process).",
    )(func)


def handle_errors(func: F) -> F:
    """Run a command body, turning listlib errors into clear messages and exit codes."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        state = ctx.find_object(Context)
        debug = bool(state and state.debug)
        try:
            return func(*args, **kwargs)
        except ListlibError as exc:
            if debug:
                traceback.print_exc()
            echo_error(str(exc))
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
            echo_error(f"{exc.strerror or exc}{where}")
            sys.exit(1)
        except KeyboardInterrupt:
            echo("Interrupted.", err=True)
            sys.exit(130)

    return wrapper  # type: ignore[return-value]


_CONFIG_HELP = f"Site configuration file (default: {CONFIG_NAME} in the current folder or a parent)."
_QUIET_HELP = "Print only problems and the final summary."
_DEBUG_HELP = "Show tracebacks for errors."


def state_of(ctx: click.Context) -> Context:
    return ctx.ensure_object(Context)


def _set_config(ctx: click.Context, _param: click.Parameter, value: Path | None) -> None:
    if value is not None:  # the subcommand's --config wins over the group's
        state_of(ctx).config_path = value


def _set_quiet(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        state_of(ctx).quiet = True


def _set_debug(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        state_of(ctx).debug = True
        logging.getLogger().setLevel(logging.DEBUG)


def common_options(quiet_help: str = _QUIET_HELP) -> Callable[[F], F]:
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


class Progress:
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
        self.share = 0.0
        """The largest share of the work the bar has shown."""
        self.started = time.monotonic()

    @contextmanager
    def running(self, label: str) -> Iterator[Progress]:
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
        # A total estimated low and corrected up must not move the bar back: it waits
        # at the share shown until the work done catches up.
        share = done / max(total, 1)
        if share < self.share:
            total = round(done / self.share)
        self.share = max(share, self.share)
        self.bar.length = max(total, 1)
        self.bar.show_eta = (
            done >= total * self.ETA_AFTER_SHARE and time.monotonic() - self.started >= self.ETA_AFTER_SECONDS
        )
        self.bar.update(done - self.last, messages)
        self.last = done
