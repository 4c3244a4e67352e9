"""listlib.toml -> frozen, typed configuration objects.

Every problem is collected with its dotted key path and reported together in
one ConfigError; an unknown key or table is one of them, with the nearest valid
spelling (every table is used by some command, so a misspelt key is a setting
silently not applied: ``[list.dev]`` for ``[lists.dev]`` would unpublish a list);
relative paths resolve against
the folder of the config file. Nothing here falls back to a default silently
for a value that is present but wrong. This module reads one file and never
writes.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from .errors import ConfigError, ConfigIssue, ListlibError
from .urls import ROOT_NAMES
from .values import NO_LIST, RESERVED_SLUGS, is_slug

__all__ = [
    "CONFIG_NAME",
    "Config",
    "DeliveryConfig",
    "ListConfig",
    "ListDelivery",
    "Pop3Account",
    "Security",
    "SiteConfig",
    "SmtpConfig",
    "ThemeConfig",
    "find_config",
    "load_config",
    "parse_config",
]

CONFIG_NAME = "listlib.toml"
_EMAIL_RE = re.compile(r"[^@\s<>()\[\],;:\"]+@[^@\s<>()\[\],;:\"]+\.[^@\s<>()\[\],;:\".]+\Z")
_LIST_ID_RE = re.compile(r"[A-Za-z0-9_.+-]+(?:\.[A-Za-z0-9_-]+)+\Z")
_URL_RE = re.compile(r"https?://[^\s/]+(/\S*)?\Z")
_HOST_RE = re.compile(r"[^\s/@:]+\Z|\[[0-9A-Fa-f:.]+\]\Z")
_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

Security = Literal["ssl", "starttls", "none"]
_SECURITIES: tuple[Security, ...] = ("ssl", "starttls", "none")
_DEFAULT_PORTS: dict[Security, int] = {"ssl": 995, "starttls": 110, "none": 110}
_POP3_KEYS = {
    "host",
    "port",
    "security",
    "user",
    "password",
    "password_file",
    "password_env",
    "ca_file",
    "timeout",
    "list",
    "keep_on_server",
    "max_messages",
}
_SMTP_KEYS = {
    "host",
    "port",
    "security",
    "user",
    "password",
    "password_file",
    "password_env",
    "ca_file",
    "timeout",
    "helo",
    "max_recipients",
}
_SMTP_PORTS: dict[Security, int] = {"ssl": 465, "starttls": 587, "none": 25}
_DELIVERY_KEYS = {"verp", "retry_first_minutes", "retry_max_minutes", "give_up_days"}
_LIST_KEYS = {"name", "description", "addresses", "list_ids", "publish"}
_LIST_DELIVERY_KEYS = {
    "deliver",
    "subscribers",
    "subscribers_file",
    "posters",
    "subject_prefix",
    "footer",
    "exclude_poster",
    "bounces_address",
    "request_address",
}
Posters = Literal["subscribers", "anyone"]


def read_secret(
    where: str,
    password: str | None,
    password_env: str | None,
    password_file: Path | None,
    environ: Mapping[str, str],
    error: type[ListlibError],
) -> str:
    """A password given inline, by ``password_env`` or by the first line of
    ``password_file`` (POP3 accounts and the SMTP server share the rule); problems
    raise ``error`` naming ``where``."""
    if password is not None:
        return password
    if password_env is not None:
        value = environ.get(password_env)
        if not value:
            raise error(f"{where}: the environment variable {password_env} (password_env) is not set")
        return value
    if password_file is not None:
        try:
            text = password_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            raise error(f"{where}: password_file {password_file} cannot be read: {reason}") from None
        secret = text.split("\n", 1)[0].rstrip("\r")
        if not secret:
            raise error(f"{where}: password_file {password_file} is empty")
        return secret
    raise error(f"{where}: no password configured")


@dataclass(frozen=True)
class SiteConfig:
    """The ``[site]`` table."""

    title: str
    """Shown at the top of every page."""
    base_url: str
    """Absolute URL the site is published under, ending in '/'; used for feeds and permalinks."""
    content_dir: Path
    """The store: call-numbered messages (default ``content``)."""
    output_dir: Path
    """Where ``listlib build`` writes the website (default ``output``)."""
    cache_dir: Path
    """Derived data that speeds up builds, such as the thread cache (default ``.cache``);
    safe to delete at any time."""
    obfuscate_addresses: bool = True
    """Show email addresses in pages as ``us…@example.org`` (harder to harvest)."""
    load_remote_images: bool = False
    """Let HTML mail load images from other sites (off: they could track readers)."""
    queue_dir: Path | None = None
    """The outbound queue of ``listlib deliver`` (default ``queue``); not derived data:
    never inside the cache or output folders."""
    publish_unrouted: bool = False
    """Publish the mail that matched no list (``_no_list``) as a list of its own, "Unsorted
    mail", at ``_no_list/``. Off by default: that mail was not sent to a list the site
    archives and may be private. Its pages move when ``listlib unrouted --refile`` sorts it."""


@dataclass(frozen=True)
class ListDelivery:
    """The delivery keys of a ``[lists.<slug>]`` table with ``deliver = true``."""

    post_address: str
    """The list's posting address (its first ``addresses`` entry): List-Post, loop marker."""
    list_id: str
    """The List-Id value (its first ``list_ids`` entry, else derived from the posting address)."""
    bounces_address: str
    """Envelope sender of forwarded posts (default ``<list>-bounces@<domain>``); with VERP
    ``<list>-bounces+user=host@<domain>``."""
    request_address: str
    """Target of the List-Subscribe/List-Unsubscribe mailto links (default ``<list>-request@<domain>``)."""
    subscribers: tuple[str, ...] = ()
    """Subscriber addresses written in listlib.toml (lower-cased)."""
    subscribers_file: Path | None = None
    """A file of subscriber addresses, one a line (``#`` comments); read at each run."""
    posters: Posters = "subscribers"
    """Who may post: ``subscribers`` (others are held) or ``anyone``."""
    subject_prefix: str = ""
    """Put in front of the Subject of forwarded posts (off by default: it breaks DKIM signatures)."""
    footer: str = ""
    """Appended to plain-text single-part posts (off by default: it breaks DKIM signatures)."""
    exclude_poster: bool = False
    """Do not send a post back to its author's own address."""


@dataclass(frozen=True)
class ListConfig:
    """One ``[lists.<slug>]`` table."""

    slug: str
    """Short name, also the list's folder and URL path: lower-case letters, digits, dashes."""
    name: str
    """Display name (default: the slug)."""
    description: str
    """One or two sentences shown on the site and list index."""
    addresses: tuple[str, ...]
    """Posting addresses; mail sent To/Cc/Delivered-To one of them is filed under this list."""
    list_ids: tuple[str, ...]
    """RFC 2919 List-Id values (``dev.example.org``); checked before addresses."""
    delivery: ListDelivery | None = field(default=None, repr=False)
    """Forwarding to subscribers (``deliver = true``), or None when the list is only archived.
    Left out of the repr: the build's site fingerprint is made from it, and subscribers
    coming and going must not make a build re-plan every page."""
    publish: bool = True
    """Whether the website shows the list (``publish = false``: its mail is still filed
    under it, and its pages are removed; the only way to take a list's pages down while
    its mail stays in the store)."""


UNROUTED_LIST = ListConfig(
    slug=NO_LIST,
    name="Unsorted mail",
    description="Mail that matched none of the lists. Its pages move when it is sorted into its list.",
    addresses=(),
    list_ids=(),
)
"""``_no_list`` as the website shows it with ``[site] publish_unrouted = true``."""


@dataclass(frozen=True)
class ThemeConfig:
    """The ``[theme]`` table (used by the renderer)."""

    name: str
    """Theme to build with (default ``default``)."""
    dir: Path | None
    """A site theme folder whose files override the theme's, file by file."""


@dataclass(frozen=True)
class Pop3Account:
    """One ``[pop3.<name>]`` table: a mailbox ``listlib fetch`` files mail from."""

    name: str
    """The account's name in listlib.toml and on the command line (``listlib fetch NAME``)."""
    host: str
    """The POP3 server's host name or IP address."""
    port: int
    """TCP port (default 995 for ``ssl``, 110 otherwise)."""
    security: Security
    """``ssl`` (POP3S, the default), ``starttls`` (STLS on the plain port) or ``none``
    (plain text, password included; only when chosen explicitly)."""
    user: str
    """The login name."""
    password: str | None = field(default=None, repr=False)
    """The password written in listlib.toml (prefer ``password_file`` or ``password_env``)."""
    password_file: Path | None = None
    """A file whose first line is the password."""
    password_env: str | None = None
    """An environment variable holding the password."""
    ca_file: Path | None = None
    """PEM file of the certificate authorities to trust instead of the system's."""
    timeout: float = 60.0
    """Seconds to wait for the server before giving up (default 60)."""
    list: str | None = None
    """File everything under this list instead of routing each message (like ``import --list``)."""
    keep_on_server: bool = False
    """Leave messages on the server and remember their UIDLs (default: delete once filed)."""
    max_messages: int | None = None
    """Retrieve at most this many messages per run (default: all)."""


@dataclass(frozen=True)
class SmtpConfig:
    """The ``[smtp]`` table: the server ``listlib deliver`` hands posts to."""

    host: str
    """The SMTP server's host name or IP address."""
    port: int
    """TCP port (default 465 for ``ssl``, 587 for ``starttls``, 25 for ``none``)."""
    security: Security
    """``starttls`` (the default), ``ssl`` (TLS from the start) or ``none``."""
    user: str | None = None
    """Login name for SMTP AUTH; no authentication when absent."""
    password: str | None = field(default=None, repr=False)
    password_file: Path | None = None
    password_env: str | None = None
    ca_file: Path | None = None
    """PEM file of the certificate authorities to trust instead of the system's."""
    timeout: float = 60.0
    """Seconds to wait for the server before giving up on this run (default 60)."""
    helo: str | None = None
    """Name to greet the server with (default: this machine's fully qualified name)."""
    max_recipients: int = 50
    """RCPT TO commands per SMTP transaction (without VERP)."""


@dataclass(frozen=True)
class DeliveryConfig:
    """The ``[delivery]`` table: site-wide delivery settings."""

    verp: bool = False
    """One transaction per recipient with the recipient encoded in the envelope sender
    (``dev-bounces+ann=example.org@lists.example.org``), so bounces name the subscriber."""
    retry_first_minutes: float = 5.0
    """Wait before the first retry after a temporary failure; doubled at each retry."""
    retry_max_minutes: float = 240.0
    """The longest wait between two retries."""
    give_up_days: float = 5.0
    """Recipients still failing temporarily this long after a post was queued fail for good."""


@dataclass(frozen=True)
class Config:
    """A whole listlib.toml, validated."""

    path: Path
    root: Path
    site: SiteConfig
    lists: tuple[ListConfig, ...]
    theme: ThemeConfig
    pop3: tuple[Pop3Account, ...] = ()
    """POP3 accounts for ``listlib fetch``, in the order of the file."""
    delivery: DeliveryConfig = field(default_factory=DeliveryConfig)
    """Site-wide delivery settings (``listlib deliver``)."""
    smtp: SmtpConfig | None = None
    """The SMTP server for ``listlib deliver``; None when there is no ``[smtp]`` table."""
    warnings: tuple[str, ...] = ()

    @property
    def published_lists(self) -> tuple[ListConfig, ...]:
        """The lists the website shows: the configured ones but those with ``publish =
        false``, then ``_no_list`` when ``[site] publish_unrouted`` is on (routing never
        files mail under it)."""
        shown = tuple(lst for lst in self.lists if lst.publish)
        return (*shown, UNROUTED_LIST) if self.site.publish_unrouted else shown

    def get_list(self, slug: str) -> ListConfig | None:
        """The list with this slug, or None."""
        for lst in self.lists:
            if lst.slug == slug:
                return lst
        return None

    def get_account(self, name: str) -> Pop3Account | None:
        """The POP3 account with this name, or None."""
        for account in self.pop3:
            if account.name == name:
                return account
        return None


class _Reader:
    """Reads typed values out of a TOML table, recording issues instead of raising."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.issues: list[ConfigIssue] = []
        self.warnings: list[str] = []

    def table(self, data: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
        value = data.get(key, {})
        if not isinstance(value, Mapping):
            self.issues.append(ConfigIssue(path, f"expected a table, got {_kind(value)}"))
            return {}
        return value

    def unknown(self, data: Mapping[str, Any], known: set[str], path: str) -> None:
        for key in data:
            if key not in known:
                where = f"{path}.{key}" if path else key
                what = "table" if isinstance(data[key], Mapping) else "key"
                near = difflib.get_close_matches(key, sorted(known), n=1)
                hint = f"did you mean {near[0]}?" if near else f"known: {', '.join(sorted(known))}"
                self.issues.append(ConfigIssue(where, f"unknown {what} ({hint})"))

    def string(
        self,
        data: Mapping[str, Any],
        key: str,
        path: str,
        default: str | None = None,
        check: Callable[[str], str | None] | None = None,
    ) -> str:
        where = f"{path}.{key}"
        if key not in data:
            if default is None:
                self.issues.append(ConfigIssue(where, "is required"))
                return ""
            return default
        value = data[key]
        if not isinstance(value, str):
            self.issues.append(ConfigIssue(where, f"expected a string, got {_kind(value)}"))
            return default or ""
        if check is not None:
            problem = check(value)
            if problem:
                self.issues.append(ConfigIssue(where, problem))
        return value

    def strings(
        self,
        data: Mapping[str, Any],
        key: str,
        path: str,
        check: Callable[[str], str | None],
    ) -> tuple[str, ...]:
        where = f"{path}.{key}"
        value = data.get(key, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            self.issues.append(ConfigIssue(where, f"expected a list of strings, got {_kind(value)}"))
            return ()
        out = []
        for index, item in enumerate(value):
            if not isinstance(item, str):
                self.issues.append(ConfigIssue(f"{where}[{index}]", f"expected a string, got {_kind(item)}"))
                continue
            problem = check(item)
            if problem:
                self.issues.append(ConfigIssue(f"{where}[{index}]", problem))
                continue
            out.append(item)
        return tuple(out)

    def integer(self, data: Mapping[str, Any], key: str, path: str, low: int, high: int) -> int | None:
        """An integer in [low, high], or None when absent or wrong (wrong is an issue)."""
        if key not in data:
            return None
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, int):
            self.issues.append(ConfigIssue(f"{path}.{key}", f"expected an integer, got {_kind(value)}"))
            return None
        if not low <= value <= high:
            self.issues.append(ConfigIssue(f"{path}.{key}", f"must be between {low} and {high}, got {value}"))
            return None
        return value

    def number(self, data: Mapping[str, Any], key: str, path: str, default: float) -> float:
        """A positive number of seconds and the like."""
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.issues.append(ConfigIssue(f"{path}.{key}", f"expected a number, got {_kind(value)}"))
            return default
        if not value > 0:
            self.issues.append(ConfigIssue(f"{path}.{key}", f"must be more than 0, got {value}"))
            return default
        return float(value)

    def boolean(self, data: Mapping[str, Any], key: str, path: str, default: bool) -> bool:
        value = data.get(key, default)
        if not isinstance(value, bool):
            self.issues.append(ConfigIssue(f"{path}.{key}", f"expected true or false, got {_kind(value)}"))
            return default
        return value

    def path(self, data: Mapping[str, Any], key: str, path: str, default: str | None) -> Path | None:
        text = self.string(data, key, path, default=default if default is not None else "")
        if not text:
            return None
        return (self.root / Path(text).expanduser()).resolve()


def _kind(value: object) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "a boolean", list: "a list"}
    if isinstance(value, Mapping):
        return "a table"
    return names.get(type(value), type(value).__name__)


def _check_email(value: str) -> str | None:
    return None if _EMAIL_RE.match(value) else f"{value!r} is not an email address"


def _check_list_id(value: str) -> str | None:
    bare = value.strip().strip("<>")
    return None if _LIST_ID_RE.match(bare) else f"{value!r} is not a List-Id (like 'dev.example.org')"


def _check_url(value: str) -> str | None:
    if not _URL_RE.match(value):
        return f"{value!r} is not an absolute http(s) URL"
    return None


def _check_nonempty(value: str) -> str | None:
    return None if value.strip() else "must not be empty"


def _read_lists(reader: _Reader, data: Mapping[str, Any]) -> tuple[ListConfig, ...]:
    lists = reader.table(data, "lists", "lists")
    out = []
    seen_addresses: dict[str, str] = {}
    seen_ids: dict[str, str] = {}
    for slug, table in lists.items():
        where = f"lists.{slug}"
        if not is_slug(slug) or slug in RESERVED_SLUGS:
            reader.issues.append(
                ConfigIssue(where, f"{slug!r} is not a list slug (lower-case letters, digits and dashes)")
            )
        elif slug in ROOT_NAMES:
            reader.issues.append(ConfigIssue(where, f"{slug!r} is reserved: the website uses /{slug}/ itself"))
        if not isinstance(table, Mapping):
            reader.issues.append(ConfigIssue(where, f"expected a table, got {_kind(table)}"))
            continue
        reader.unknown(table, _LIST_KEYS | _LIST_DELIVERY_KEYS, where)
        addresses = tuple(a.lower() for a in reader.strings(table, "addresses", where, _check_email))
        list_ids = tuple(
            i.strip().strip("<>").lower() for i in reader.strings(table, "list_ids", where, _check_list_id)
        )
        for index, addr in enumerate(addresses):
            if addr in seen_addresses:
                reader.issues.append(
                    ConfigIssue(
                        f"{where}.addresses[{index}]", f"{addr!r} is also used by list {seen_addresses[addr]!r}"
                    )
                )
            seen_addresses[addr] = slug
        for index, list_id in enumerate(list_ids):
            if list_id in seen_ids:
                reader.issues.append(
                    ConfigIssue(f"{where}.list_ids[{index}]", f"{list_id!r} is also used by list {seen_ids[list_id]!r}")
                )
            seen_ids[list_id] = slug
        out.append(
            ListConfig(
                slug=slug,
                name=reader.string(table, "name", where, default=slug, check=_check_nonempty),
                description=reader.string(table, "description", where, default=""),
                addresses=addresses,
                list_ids=list_ids,
                delivery=_read_list_delivery(reader, table, where, addresses, list_ids),
                publish=reader.boolean(table, "publish", where, True),
            )
        )
    return tuple(out)


def _check_posters(value: str) -> str | None:
    return None if value in ("subscribers", "anyone") else f"{value!r} is not one of 'subscribers', 'anyone'"


def _read_list_delivery(
    reader: _Reader, table: Mapping[str, Any], where: str, addresses: tuple[str, ...], list_ids: tuple[str, ...]
) -> ListDelivery | None:
    if not reader.boolean(table, "deliver", where, False):
        present = sorted(key for key in table if key in _LIST_DELIVERY_KEYS and key != "deliver")
        if present:
            reader.warnings.append(f"{where}.{present[0]}: unused without deliver = true")
        return None
    if not addresses:
        reader.issues.append(ConfigIssue(f"{where}.addresses", "a list with deliver = true needs a posting address"))
        post = "list@invalid.example"
    else:
        post = addresses[0]
    local, _, domain = post.partition("@")
    subscribers = tuple(s.lower() for s in reader.strings(table, "subscribers", where, _check_email))
    posters = reader.string(table, "posters", where, default="subscribers", check=_check_posters)
    bounces = reader.string(table, "bounces_address", where, default=f"{local}-bounces@{domain}", check=_check_email)
    if "+" in bounces.partition("@")[0]:
        reader.issues.append(ConfigIssue(f"{where}.bounces_address", "must not contain '+' (VERP adds it)"))
    return ListDelivery(
        post_address=post,
        list_id=list_ids[0] if list_ids else f"{local}.{domain}",
        bounces_address=bounces.lower(),
        request_address=reader.string(
            table, "request_address", where, default=f"{local}-request@{domain}", check=_check_email
        ).lower(),
        subscribers=subscribers,
        subscribers_file=reader.path(table, "subscribers_file", where, None),
        posters=cast(Posters, posters if posters in ("subscribers", "anyone") else "subscribers"),
        subject_prefix=reader.string(table, "subject_prefix", where, default=""),
        footer=reader.string(table, "footer", where, default=""),
        exclude_poster=reader.boolean(table, "exclude_poster", where, False),
    )


def _check_host(value: str) -> str | None:
    return None if _HOST_RE.match(value) else f"{value!r} is not a host name or IP address"


def _check_env_name(value: str) -> str | None:
    return None if _ENV_NAME_RE.match(value) else f"{value!r} is not an environment variable name"


def _check_security(value: str) -> str | None:
    return None if value in _SECURITIES else f"{value!r} is not one of 'ssl', 'starttls', 'none'"


def _read_pop3(reader: _Reader, data: Mapping[str, Any], lists: tuple[ListConfig, ...]) -> tuple[Pop3Account, ...]:
    accounts = reader.table(data, "pop3", "pop3")
    slugs = {lst.slug for lst in lists}
    out = []
    for name, table in accounts.items():
        where = f"pop3.{name}"
        if not isinstance(table, Mapping):
            reader.issues.append(ConfigIssue(where, f"expected a table [pop3.<account>], got {_kind(table)}"))
            continue
        if not is_slug(name):
            reader.issues.append(
                ConfigIssue(where, f"{name!r} is not an account name (lower-case letters, digits and dashes)")
            )
        reader.unknown(table, _POP3_KEYS, where)
        security = reader.string(table, "security", where, default="ssl", check=_check_security)
        security = cast(Security, security if security in _SECURITIES else "ssl")
        sources = [key for key in ("password", "password_file", "password_env") if key in table]
        if not sources:
            reader.issues.append(ConfigIssue(where, "one of password_file, password_env or password is required"))
        elif len(sources) > 1:
            reader.issues.append(ConfigIssue(where, f"give only one of {', '.join(sources)}"))
        password = reader.string(table, "password", where, default="") if "password" in table else None
        password_env = reader.string(table, "password_env", where, default="", check=_check_env_name) or None
        target = reader.string(table, "list", where, default="") or None
        if target is not None and target not in slugs:
            reader.issues.append(ConfigIssue(f"{where}.list", f"no list {target!r} in [lists]"))
        ca_file = reader.path(table, "ca_file", where, None)
        if ca_file is not None and security == "none":
            reader.warnings.append(f"{where}.ca_file: unused with security = 'none'")
        port = reader.integer(table, "port", where, 1, 65535)
        out.append(
            Pop3Account(
                name=name,
                host=reader.string(table, "host", where, check=_check_host),
                port=port or _DEFAULT_PORTS[security],
                security=security,
                user=reader.string(table, "user", where, check=_check_nonempty),
                password=password,
                password_file=reader.path(table, "password_file", where, None),
                password_env=password_env,
                ca_file=ca_file,
                timeout=reader.number(table, "timeout", where, 60.0),
                list=target,
                keep_on_server=reader.boolean(table, "keep_on_server", where, False),
                max_messages=reader.integer(table, "max_messages", where, 1, 10**9),
            )
        )
    return tuple(out)


def _read_smtp(reader: _Reader, data: Mapping[str, Any]) -> SmtpConfig | None:
    if "smtp" not in data:
        return None
    where = "smtp"
    table = reader.table(data, "smtp", where)
    reader.unknown(table, _SMTP_KEYS, where)
    security = reader.string(table, "security", where, default="starttls", check=_check_security)
    security = cast(Security, security if security in _SECURITIES else "starttls")
    user = reader.string(table, "user", where, default="", check=_check_nonempty) if "user" in table else None
    sources = [key for key in ("password", "password_file", "password_env") if key in table]
    if user is not None and not sources:
        reader.issues.append(ConfigIssue(where, "one of password_file, password_env or password is required with user"))
    elif user is None and sources:
        reader.issues.append(ConfigIssue(f"{where}.{sources[0]}", "needs a user to log in with"))
    elif len(sources) > 1:
        reader.issues.append(ConfigIssue(where, f"give only one of {', '.join(sources)}"))
    ca_file = reader.path(table, "ca_file", where, None)
    if ca_file is not None and security == "none":
        reader.warnings.append(f"{where}.ca_file: unused with security = 'none'")
    port = reader.integer(table, "port", where, 1, 65535)
    return SmtpConfig(
        host=reader.string(table, "host", where, check=_check_host),
        port=port or _SMTP_PORTS[security],
        security=security,
        user=user,
        password=reader.string(table, "password", where, default="") if "password" in table else None,
        password_file=reader.path(table, "password_file", where, None),
        password_env=reader.string(table, "password_env", where, default="", check=_check_env_name) or None,
        ca_file=ca_file,
        timeout=reader.number(table, "timeout", where, 60.0),
        helo=reader.string(table, "helo", where, default="", check=_check_host) or None,
        max_recipients=reader.integer(table, "max_recipients", where, 1, 1000) or 50,
    )


def _read_delivery(reader: _Reader, data: Mapping[str, Any]) -> DeliveryConfig:
    table = reader.table(data, "delivery", "delivery")
    reader.unknown(table, _DELIVERY_KEYS, "delivery")
    first = reader.number(table, "retry_first_minutes", "delivery", 5.0)
    most = reader.number(table, "retry_max_minutes", "delivery", 240.0)
    if most < first:
        reader.issues.append(ConfigIssue("delivery.retry_max_minutes", "must not be less than retry_first_minutes"))
    return DeliveryConfig(
        verp=reader.boolean(table, "verp", "delivery", False),
        retry_first_minutes=first,
        retry_max_minutes=most,
        give_up_days=reader.number(table, "give_up_days", "delivery", 5.0),
    )


def _overlap(a: Path, b: Path) -> str | None:
    """How folder ``a`` overlaps folder ``b`` ("is", "is inside", "contains"), or None."""
    if a == b:
        return "is"
    if a.is_relative_to(b):
        return "is inside"
    if b.is_relative_to(a):
        return "contains"
    return None


def _check_folders(reader: _Reader, root: Path, site: SiteConfig, theme: ThemeConfig, given: Iterable[str]) -> None:
    """The folders listlib manages must not overlap: ``build --clean`` empties the output
    folder, the build sweeps it and clears the cache, so an output folder inside the store
    or the queue would delete mail (an error naming both paths, never a silent loss).
    Each problem is reported under the key the configuration sets (``given``)."""
    assert site.queue_dir is not None
    managed = [
        ("output_dir", "output folder", site.output_dir),
        ("content_dir", "content folder (the store)", site.content_dir),
        ("queue_dir", "delivery queue", site.queue_dir),
        ("cache_dir", "cache folder", site.cache_dir),
    ]
    given = set(given)
    for index, first in enumerate(managed):
        for second in managed[index + 1 :]:
            subject, other = (second, first) if second[0] in given and first[0] not in given else (first, second)
            how = _overlap(subject[2], other[2])
            if how:
                reader.issues.append(
                    ConfigIssue(f"site.{subject[0]}", f"{subject[2]} {how} the {other[1]} {other[2]}: keep them apart")
                )
    output = site.output_dir
    themes = [("theme folder", root / "themes")] + ([("theme.dir folder", theme.dir)] if theme.dir else [])
    for what, folder in themes:
        how = _overlap(output, folder)
        if how:
            reader.issues.append(
                ConfigIssue("site.output_dir", f"{output} {how} the {what} {folder}: builds would delete it")
            )
    if root.is_relative_to(output):
        reader.issues.append(
            ConfigIssue(
                "site.output_dir",
                f"{output} contains listlib.toml's folder {root}: 'listlib build --clean' would empty it",
            )
        )


def parse_config(data: Mapping[str, Any], path: Path) -> Config:
    """Validate parsed TOML into a Config; raise ConfigError listing every issue."""
    root = path.parent.resolve()
    reader = _Reader(root)
    reader.unknown(data, {"site", "lists", "theme", "pop3", "delivery", "smtp"}, "")
    site_table = reader.table(data, "site", "site")
    reader.unknown(
        site_table,
        {
            "title",
            "base_url",
            "content_dir",
            "output_dir",
            "cache_dir",
            "queue_dir",
            "obfuscate_addresses",
            "load_remote_images",
            "publish_unrouted",
        },
        "site",
    )
    base_url = reader.string(site_table, "base_url", "site", check=_check_url)
    if base_url and not base_url.endswith("/"):
        base_url += "/"
    site = SiteConfig(
        title=reader.string(site_table, "title", "site", check=_check_nonempty),
        base_url=base_url,
        content_dir=reader.path(site_table, "content_dir", "site", "content") or root / "content",
        output_dir=reader.path(site_table, "output_dir", "site", "output") or root / "output",
        cache_dir=reader.path(site_table, "cache_dir", "site", ".cache") or root / ".cache",
        obfuscate_addresses=reader.boolean(site_table, "obfuscate_addresses", "site", True),
        load_remote_images=reader.boolean(site_table, "load_remote_images", "site", False),
        queue_dir=reader.path(site_table, "queue_dir", "site", "queue") or root / "queue",
        publish_unrouted=reader.boolean(site_table, "publish_unrouted", "site", False),
    )
    theme_table = reader.table(data, "theme", "theme")
    reader.unknown(theme_table, {"name", "dir"}, "theme")
    theme = ThemeConfig(
        name=reader.string(theme_table, "name", "theme", default="default", check=_check_nonempty),
        dir=reader.path(theme_table, "dir", "theme", None),
    )
    _check_folders(reader, root, site, theme, site_table)
    lists = _read_lists(reader, data)
    pop3 = _read_pop3(reader, data, lists)
    delivery = _read_delivery(reader, data)
    smtp = _read_smtp(reader, data)
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
        pop3=pop3,
        delivery=delivery,
        smtp=smtp,
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
