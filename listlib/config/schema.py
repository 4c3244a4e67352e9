"""The shape of a validated listlib.toml: one frozen dataclass per table, each key
documented where it is defined.

Plain data only: nothing here reads a file, checks a value or knows TOML; the tables'
readers (``site``, ``lists``, ``pop3``, ``imap``, ``smtp``) fill these in. Never imports another
module of this package.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..classify import DEFAULT_RULES, Rule
from ..values import NO_LIST

__all__ = [
    "SECURITIES",
    "UNROUTED_LIST",
    "LEGACY_KINDS",
    "ClassesConfig",
    "Config",
    "DeliveryConfig",
    "ListConfig",
    "LegacyConfig",
    "LegacyKind",
    "ListDelivery",
    "AFTER_FILING",
    "AfterFilingAction",
    "ImapAccount",
    "Pop3Account",
    "Posters",
    "PublishConfig",
    "Security",
    "SiteConfig",
    "SmtpConfig",
    "ThemeConfig",
]

Security = Literal["ssl", "starttls", "none"]
SECURITIES: tuple[Security, ...] = ("ssl", "starttls", "none")
Posters = Literal["subscribers", "anyone"]
LegacyKind = Literal["mhonarc", "hyperkitty", "pipermail"]
LEGACY_KINDS: tuple[LegacyKind, ...] = ("mhonarc", "hyperkitty", "pipermail")
AfterFilingAction = Literal["delete", "move", "keep", "seen"]
AFTER_FILING: tuple[AfterFilingAction, ...] = ("delete", "move", "keep", "seen")


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
    search_from_disk: bool = False
    """Write each search index file's script twin (``<file>.js``) too, so that the search
    page works on a copy of the site opened from disk (``file://``); doubles the size
    of ``output/search/``."""
    language: str = "en"
    """The language of the site's pages, a BCP 47 tag such as ``en`` or ``de-CH``: every
    page's ``lang`` (screen readers pick their voice by it). A message whose
    ``Content-Language`` says otherwise carries its own."""
    show_removal_reasons: bool = False
    """Show the reason given to ``listlib remove`` on the tombstone of a removed message
    (off: the tombstone says only when it was removed; the reason stays in the ledger)."""
    message_id_paths: bool = False
    """Give every message public-inbox's (lore's) paths under its list, for b4 and the
    other kernel-style tools: ``<list>/<Message-ID>/`` (a redirect to the message),
    ``.../raw`` and ``.../t.mbox.gz`` (symbolic links to its ``.eml`` copy and to its
    thread's download). Off by default: it adds a folder and three files per message."""
    message_id_folder: str = ""
    """Where under each list the Message-ID folders go ("" : right in the list's folder, as
    on lore; e.g. ``m`` for ``<list>/m/<Message-ID>/``)."""


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
class LegacyConfig:
    """The ``[lists.<slug>.legacy]`` table: the archive a list had before listlib, whose
    URLs the site keeps working with redirects (``listlib legacy import`` maps them)."""

    kind: LegacyKind
    """The old archiver: ``mhonarc``, ``hyperkitty`` (Mailman 3) or ``pipermail`` (Mailman 2)."""
    path: str
    """Where the old archive's URLs lived, relative to the site's root (``pipermail/dev``);
    "" for the root itself. The redirect pages are written there in output/."""
    source: Path | None = None
    """The old archive's HTML folder (needed by ``mhonarc`` and ``pipermail``; read only by
    ``listlib legacy import``)."""
    address: str = ""
    """The list's address as HyperKitty's URLs spell it (``dev@lists.example.org``;
    default: the list's first ``addresses`` entry)."""
    pages: bool = True
    """Write a static redirect page at every old URL (off: only the server maps, for a
    host that redirects with them; a page per old URL is a file per old URL)."""


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
    legacy: LegacyConfig | None = None
    """The list's archive before listlib, whose URLs redirect to their messages here."""


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
class BuildConfig:
    """The ``[build]`` table: where ``listlib build`` runs its work."""

    cluster: str | None = None
    """The Dask scheduler to render on (``tcp://HOST:8786``), as ``listlib build --cluster``
    does; None (the default): on this machine's cores. Needs ``pip install 'listlib[cluster]'``."""


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
class ImapAccount:
    """One ``[imap.<name>]`` table: IMAP folders ``listlib fetch`` files mail from."""

    name: str
    """The account's name in listlib.toml and on the command line (``listlib fetch NAME``)."""
    host: str
    """The IMAP server's host name or IP address."""
    port: int
    """TCP port (default 993 for ``ssl``, 143 otherwise)."""
    security: Security
    """``ssl`` (IMAPS, the default), ``starttls`` (STARTTLS on the plain port) or ``none``."""
    user: str
    """The login name."""
    password: str | None = field(default=None, repr=False)
    password_file: Path | None = None
    password_env: str | None = None
    ca_file: Path | None = None
    """PEM file of the certificate authorities to trust instead of the system's."""
    timeout: float = 60.0
    """Seconds to wait for the server before giving up (default 60)."""
    list: str | None = None
    """File everything under this list instead of routing each message."""
    folders: tuple[str, ...] = ("INBOX",)
    """The folders to fetch, in order (default: the inbox)."""
    after: AfterFilingAction = "delete"
    """What happens on the server to a message once it is filed: ``delete`` (the default),
    ``move`` (to ``move_to``), ``keep`` (left unread; its UIDVALIDITY and UID are
    remembered) or ``seen`` (marked read, and remembered)."""
    move_to: str | None = None
    """The folder filed messages are moved to with ``after = "move"`` (created when missing)."""
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
class PublishConfig:
    """The ``[publish]`` table: where ``listlib publish`` copies output/ to. Credentials
    come only from the standard AWS chain (environment, shared files, instance roles)."""

    target: str
    """``s3://bucket/prefix`` (the prefix may be empty): the objects' names are
    the prefix, then the output file's path."""
    endpoint_url: str | None = None
    """The S3 API's URL for other providers than AWS (R2, SeaweedFS, Ceph ...)."""
    region: str | None = None
    """The bucket's region (default: the AWS chain's, e.g. ``AWS_DEFAULT_REGION``)."""
    profile: str | None = None
    """A profile of the shared AWS config and credentials files."""
    workers: int = 16
    """Uploads at a time (1-64)."""
    max_attempts: int = 5
    """Attempts of each request, retried with backoff on throttling, 5xx and dropped connections."""
    retry_mode: str = "standard"
    """boto3's retry mode: ``standard`` (exponential backoff with jitter) or ``adaptive``
    (also slows the whole publish down after throttling answers)."""
    cache_control: tuple[tuple[str, str], ...] = ()
    """``[publish.cache_control]``: the Cache-Control header per kind of file
    (``segments``, ``attachments``, ``pages``, ``files``), replacing the defaults."""

    @property
    def bucket(self) -> str:
        return self.target.removeprefix("s3://").partition("/")[0]

    @property
    def prefix(self) -> str:
        """The key prefix, empty or ending in '/'."""
        path = self.target.removeprefix("s3://").partition("/")[2].strip("/")
        return f"{path}/" if path else ""


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
class ClassesConfig:
    """The ``[classes]`` table: how messages are classed (``classify``)."""

    rules: tuple[Rule, ...] = DEFAULT_RULES
    """Every rule in order, the site's (``[[classes.rules]]``) first, then the default
    ones unless ``default_rules = false``; the first rule a message matches gives its
    class."""
    site_rules: int = 0
    """How many of ``rules`` come from the site's table."""


@dataclass(frozen=True)
class Config:
    """A whole listlib.toml, validated."""

    path: Path
    root: Path
    site: SiteConfig
    lists: tuple[ListConfig, ...]
    theme: ThemeConfig
    build: BuildConfig = field(default_factory=BuildConfig)
    """How ``listlib build`` runs (``[build]``)."""
    pop3: tuple[Pop3Account, ...] = ()
    """POP3 accounts for ``listlib fetch``, in the order of the file."""
    imap: tuple[ImapAccount, ...] = ()
    """IMAP accounts for ``listlib fetch``, in the order of the file (after the POP3 ones)."""
    delivery: DeliveryConfig = field(default_factory=DeliveryConfig)
    """Site-wide delivery settings (``listlib deliver``)."""
    smtp: SmtpConfig | None = None
    """The SMTP server for ``listlib deliver``; None when there is no ``[smtp]`` table."""
    publish: PublishConfig | None = None
    """Where ``listlib publish`` uploads the site; None when there is no ``[publish]`` table."""
    classes: ClassesConfig = field(default_factory=ClassesConfig)
    """The message-class rules (``[classes]``)."""
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

    @property
    def accounts(self) -> tuple[Pop3Account | ImapAccount, ...]:
        """Every account ``listlib fetch`` fetches: the POP3 ones, then the IMAP ones."""
        return (*self.pop3, *self.imap)

    def get_any_account(self, name: str) -> Pop3Account | ImapAccount | None:
        """The POP3 or IMAP account with this name (names are unique across both), or None."""
        for account in self.accounts:
            if account.name == name:
                return account
        return None
