"""listlib as a GNU Mailman 3 archiver: Mailman hands every accepted post to
``Archiver.archive_message``, which files it into the site's store, and asks for a
build that runs in the background (``python -m listlib.mailman3 build SITE``).

Loaded by Mailman from its own ``mailman.cfg`` (listlib installed in Mailman's
environment)::

    [archiver.listlib]
    class: listlib.mailman3.Archiver
    enable: yes
    configuration: /etc/mailman3/listlib.cfg
    clobber_date: never

where ``listlib.cfg`` names the site (``[general]`` ``site: /srv/lists/listlib.toml``;
optional ``build: yes`` or ``no``, ``spool: PATH``, ``lock_wait: SECONDS``).

Nothing is lost: each post is first written to a maildir spool beside the site
(``mailman-spool/<list>/``), then filed from there and only then removed from it; a
post that cannot be filed now (the store busy or broken) stays in the spool and is
filed with the next one (filing twice is a duplicate, which the store drops). The list
a post is filed under is the one whose ``list_ids`` or ``addresses`` (``[lists.<slug>]``)
name Mailman's list; a Mailman list listlib does not know is filed by the usual
routing (and is reported by ``listlib unrouted``). A mistake in listlib.toml keeps the
posts in the spool, by Mailman's list id, until it is mended.

``permalink`` is the message's Message-ID page (``mid/...``), known before any build,
so Mailman's ``Archived-At`` header is right from the first post. Builds are coalesced:
one builder runs at a time and builds again while posts keep arriving.

Mailman's own modules (``mailman``, ``zope.interface``) are imported only inside
Mailman; the rest of listlib never imports this module.
"""

from __future__ import annotations

import configparser
import fcntl
import logging
import os
import subprocess
import sys
import time
from email.message import Message
from pathlib import Path
from typing import Any

from .config import Config, load_config
from .errors import ListlibError
from .fsutil import make_dirs
from .urls import list_index_path, mid_page_path
from .values import message_id_hash

__all__ = ["Archiver", "archive", "run_builds"]

SPOOL = "mailman-spool"
"""The spool folder beside listlib.toml (``spool:`` in the archiver's configuration)."""
_REQUEST = "mailman-build.request"
_BUILDER_LOCK = "mailman-builder.lock"
_BUILD_LOG = "mailman-build.log"
LOCK_WAIT = 60.0
"""Seconds a post waits for the store (another import, fetch or steward) before it is
left in the spool for the next one (``lock_wait:``)."""
_BY_LIST_ID = "_list-id_"
"""Spool folders of posts whose listlib list is not known (``_list-id_<id>``): filed
under the list naming that id once listlib.toml does, else by routing."""

log = logging.getLogger("mailman.archiver")


def _implementer(cls: type) -> type:
    """Declare ``IArchiver`` when Mailman is there (it is when Mailman loads this)."""
    try:
        from mailman.interfaces.archiver import IArchiver
        from zope.interface import implementer
    except ImportError:
        return cls
    return implementer(IArchiver)(cls)  # type: ignore[no-any-return]


class Site:
    """The archiver's configuration: the site, its spool, whether to build."""

    def __init__(
        self, config_path: Path, spool: Path | None = None, build: bool = True, lock_wait: float = LOCK_WAIT
    ) -> None:
        self.config_path = config_path
        self._config: Config | None = None
        self.spool = spool or config_path.parent / SPOOL
        self.build = build
        self.lock_wait = lock_wait

    @classmethod
    def from_mailman(cls) -> Site:
        from mailman.config import config as mailman_config
        from mailman.config.config import external_configuration

        parser = external_configuration(mailman_config.archiver.listlib.configuration)
        return cls.from_parser(parser)

    @classmethod
    def from_parser(cls, parser: configparser.RawConfigParser) -> Site:
        site = Path(parser.get("general", "site")).expanduser()
        spool = parser.get("general", "spool", fallback="")
        build = parser.getboolean("general", "build", fallback=True)
        lock_wait = parser.getfloat("general", "lock_wait", fallback=LOCK_WAIT)
        return cls(site, Path(spool).expanduser() if spool else None, build, lock_wait)

    @property
    def config(self) -> Config:
        """listlib.toml, read when first needed: a mistake in it (a ConfigError) leaves
        posts in the spool rather than losing them."""
        if self._config is None:
            self._config = load_config(self.config_path)
        return self._config

    def slug_of(self, list_id: str, address: str) -> str | None:
        """The listlib list that is Mailman's list ``list_id`` / ``address``, if any."""
        list_id = list_id.strip("<> ").lower()
        address = address.strip().lower()
        for lst in self.config.lists:
            if list_id in (value.lower() for value in lst.list_ids):
                return lst.slug
        for lst in self.config.lists:
            if address in (value.lower() for value in lst.addresses):
                return lst.slug
        return None

    def base_url(self) -> str:
        return self.config.site.base_url.rstrip("/") + "/"


@_implementer
class Archiver:
    """Mailman's ``IArchiver``: ``list_url``, ``permalink`` and ``archive_message``."""

    name = "listlib"
    is_enabled = False

    def __init__(self, site: Site | None = None) -> None:
        self.site = site or Site.from_mailman()

    def list_url(self, mlist: Any) -> str | None:
        try:
            slug = self.site.slug_of(mlist.list_id, mlist.posting_address)
            return self.site.base_url() + list_index_path(slug).removesuffix("index.html") if slug else None
        except ListlibError as exc:
            log.error("listlib: %s", exc)
            return None

    def permalink(self, mlist: Any, msg: Message) -> str | None:
        message_id = msg.get("Message-ID")
        if not message_id or not str(message_id).strip().strip("<>"):
            return None
        try:
            return self.site.base_url() + mid_page_path(message_id_hash(str(message_id)))
        except ListlibError as exc:
            log.error("listlib: %s", exc)
            return None

    def archive_message(self, mlist: Any, msg: Message) -> str | None:
        try:
            slug = self.site.slug_of(mlist.list_id, mlist.posting_address)
            folder = slug or _by_list_id(mlist.list_id)
            if slug is None:
                log.error(
                    "listlib: no [lists.<slug>] names %s (%s); filed by routing", mlist.list_id, mlist.posting_address
                )
        except ListlibError as exc:  # listlib.toml is wrong: keep the post for when it is mended
            log.error("listlib: %s", exc)
            folder = _by_list_id(mlist.list_id)
        archive(self.site, msg.as_bytes(), folder)
        return self.permalink(mlist, msg)


def _by_list_id(list_id: str) -> str:
    """The spool folder of a post whose listlib list is not known yet: Mailman's list id."""
    return _BY_LIST_ID + "".join(c if c.isalnum() or c in ".-_" else "_" for c in list_id.strip("<> ").lower())


def archive(site: Site, raw: bytes, folder_name: str) -> None:
    """Spool ``raw`` (in the folder of its list, or of its Mailman list id), file the
    spool, and ask for a build. A filing error, or a mistake in listlib.toml, is logged
    and leaves the post spooled (filed with the next one); it never reaches Mailman."""
    import mailbox

    folder = site.spool / folder_name
    make_dirs(site.spool)
    mailbox.Maildir(folder, create=True).add(raw)  # tmp/ then new/: whole or absent
    try:
        file_spool(site)
    except (ListlibError, OSError) as exc:
        log.error("listlib: the post stays in %s until the next one: %s", folder, exc)
        return
    if site.build:
        request_build(site)


def file_spool(site: Site) -> int:
    """File every spooled post into the store, then remove it from the spool; how many."""
    from .filing import file_sources
    from .store.core import Store

    if not site.spool.is_dir():
        return 0
    filed = 0
    with Store(site.config.site.content_dir, lock_timeout=site.lock_wait).open() as store:
        for folder in sorted(path for path in site.spool.iterdir() if path.is_dir()):
            posts = sorted((folder / "new").glob("*")) + sorted((folder / "cur").glob("*"))
            if not posts:
                continue
            if folder.name.startswith(_BY_LIST_ID):
                forced = site.slug_of(folder.name.removeprefix(_BY_LIST_ID), "")
            else:
                forced = folder.name
            if forced is not None and forced not in {lst.slug for lst in site.config.lists}:
                forced = None  # a list since removed from listlib.toml: routing decides
            file_sources(store, site.config.lists, [folder], forced_list=forced)
            for post in posts:  # durable now: file_sources returns once the store has them
                post.unlink(missing_ok=True)
                filed += 1
    return filed


def request_build(site: Site) -> None:
    """Ask for a build; start the builder unless one runs (it will see the request)."""
    cache = site.config.site.cache_dir
    cache.mkdir(parents=True, exist_ok=True)
    (cache / _REQUEST).touch()
    if _builder_running(cache):
        return
    # Through a shell that exits at once, so the builder is nobody's child here (Mailman's
    # runner neither waits for it nor keeps a zombie); its output goes to a log.
    subprocess.run(
        [
            "/bin/sh",
            "-c",
            'exec "$0" -m listlib.mailman3 build "$1" </dev/null >>"$2" 2>&1 &',
            sys.executable,
            str(site.config_path),
            str(cache / _BUILD_LOG),
        ],
        check=False,
        start_new_session=True,
    )


def _builder_running(cache: Path) -> bool:
    fd = os.open(cache / _BUILDER_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops a lock taken here
    return False


def run_builds(config_path: Path) -> int:
    """The builder: while a build is requested, build (one builder at a time); builds done."""
    from .build import build_site

    config = load_config(config_path)
    cache = config.site.cache_dir
    request = cache / _REQUEST
    done = 0
    while request.exists():
        fd = os.open(cache / _BUILDER_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return done  # another builder runs: it will see the request
            while request.exists():
                request.unlink(missing_ok=True)  # posts filed from now on ask again
                build_site(load_config(config_path))
                done += 1
        finally:
            os.close(fd)
        # A post may have asked between the last check and the unlock: look once more.
        time.sleep(0.05)
    return done


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] != "build":
        print("usage: python -m listlib.mailman3 build SITE/listlib.toml", file=sys.stderr)
        return 2
    try:
        run_builds(Path(argv[2]))
    except ListlibError as exc:
        print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} listlib build failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
