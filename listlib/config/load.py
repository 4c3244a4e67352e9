"""listlib.toml on disk -> a validated Config, or one ConfigError listing every problem.

Finds the file, reads it as UTF-8 TOML, hands each table to its reader and checks
what spans tables (a list that delivers needs ``[smtp]``). The only module of this
package that reads listlib.toml or raises ConfigError; it reads one file and never
writes.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError, ConfigIssue
from .classes import read_classes
from .folders import check_folders
from .imap import read_imap
from .lists import read_lists
from .pop3 import read_pop3
from .publish import read_publish
from .reader import Reader
from .schema import Config
from .site import read_build, read_site, read_theme
from .smtp import read_delivery, read_smtp

__all__ = ["CONFIG_NAME", "find_config", "load_config", "parse_config"]

CONFIG_NAME = "listlib.toml"
_TABLES = {"classes", "site", "lists", "theme", "build", "pop3", "imap", "delivery", "smtp", "publish"}


def parse_config(data: Mapping[str, Any], path: Path) -> Config:
    """Validate parsed TOML into a Config; raise ConfigError listing every issue."""
    root = path.parent.resolve()
    reader = Reader(root)
    reader.unknown(data, _TABLES, "")
    site_table = reader.table(data, "site", "site")
    site = read_site(reader, site_table)
    theme = read_theme(reader, data)
    build = read_build(reader, data)
    check_folders(reader, root, site, theme, site_table)
    lists = read_lists(reader, data)
    pop3 = read_pop3(reader, data, lists)
    imap = read_imap(reader, data, lists, {account.name for account in pop3})
    delivery = read_delivery(reader, data)
    smtp = read_smtp(reader, data)
    publish = read_publish(reader, data)
    classes = read_classes(reader, data)
    delivering = [lst.slug for lst in lists if lst.delivery is not None]
    if delivering and smtp is None:
        reader.issues.append(
            ConfigIssue(f"lists.{delivering[0]}.deliver", "needs an [smtp] table (the server to send through)")
        )
    if reader.issues:
        raise ConfigError(str(path), reader.issues)
    return Config(
        path=path,
        root=root,
        site=site,
        lists=lists,
        theme=theme,
        build=build,
        pop3=pop3,
        imap=imap,
        delivery=delivery,
        smtp=smtp,
        publish=publish,
        classes=classes,
        warnings=tuple(reader.warnings),
    )


def load_config(path: Path) -> Config:
    """Read and validate a listlib.toml file."""
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(
            str(path), [ConfigIssue("", "file not found (run 'listlib init' to create a site)")]
        ) from None
    except IsADirectoryError:
        raise ConfigError(str(path), [ConfigIssue("", "is a folder, not a config file")]) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            str(path), [ConfigIssue("", f"is not UTF-8 text ({exc.reason} at byte {exc.start})")]
        ) from None
    except OSError as exc:
        raise ConfigError(str(path), [ConfigIssue("", f"cannot be read: {exc.strerror}")]) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), [ConfigIssue("", f"TOML syntax error: {exc}")]) from None
    return parse_config(data, path)


def find_config(start: Path) -> Path | None:
    """The nearest listlib.toml in ``start`` or one of its parents, or None."""
    start = start.resolve()
    for folder in (start, *start.parents):
        candidate = folder / CONFIG_NAME
        if candidate.is_file():
            return candidate
    return None
