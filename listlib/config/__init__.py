"""listlib.toml -> frozen, typed configuration objects.

Every problem is collected with its dotted key path and reported together in
one ConfigError; an unknown key or table is one of them, with the nearest valid
spelling (every table is used by some command, so a misspelt key is a setting
silently not applied: ``[list.dev]`` for ``[lists.dev]`` would unpublish a list);
relative paths resolve against
the folder of the config file. Nothing here falls back to a default silently
for a value that is present but wrong. This package reads one file and never
writes.

One job a module, imports pointing down this list: ``schema`` (the frozen
dataclasses, one per table), ``secret`` (a password, read when needed), ``reader``
(typed values out of a table, issues with key paths, nearest spellings), ``checks``
(what is wrong with one string), ``site`` / ``lists`` / ``pop3`` / ``imap`` / ``smtp`` /
``publish`` / ``classes`` (one reader per table), ``folders`` (the managed folders stay apart), ``load`` (the file
-> a Config). This ``__init__`` only re-exports what the rest of listlib imports;
no module of the package imports it.
"""

from __future__ import annotations

from .load import CONFIG_NAME, find_config, load_config, parse_config
from .schema import (
    BuildConfig,
    ClassesConfig,
    Config,
    DeliveryConfig,
    ImapAccount,
    LegacyConfig,
    ListConfig,
    ListDelivery,
    Pop3Account,
    PublishConfig,
    Security,
    SiteConfig,
    SmtpConfig,
    ThemeConfig,
)
from .secret import read_secret

__all__ = [
    "ClassesConfig",
    "CONFIG_NAME",
    "Config",
    "DeliveryConfig",
    "ImapAccount",
    "LegacyConfig",
    "ListConfig",
    "ListDelivery",
    "Pop3Account",
    "PublishConfig",
    "Security",
    "SiteConfig",
    "SmtpConfig",
    "ThemeConfig",
    "BuildConfig",
    "find_config",
    "load_config",
    "parse_config",
    "read_secret",
]
