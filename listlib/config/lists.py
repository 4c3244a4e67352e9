"""The ``[lists.<slug>]`` tables: the lists mail is filed under, and their delivery keys.

Checks slugs, addresses and List-Ids (none used by two lists) and, for a list with
``deliver = true``, derives its posting, bounce and request addresses. Records
problems on the Reader; never raises and never reads the subscribers file (delivery
reads it at each run).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, cast

from ..errors import ConfigIssue
from ..urls import ROOT_NAMES
from ..values import RESERVED_SLUGS, is_slug
from .checks import check_email, check_list_id, check_nonempty
from .reader import Reader, kind_of
from .schema import LEGACY_KINDS, LegacyConfig, LegacyKind, ListConfig, ListDelivery, Posters

__all__ = ["read_lists"]

_LIST_KEYS = {"name", "description", "addresses", "list_ids", "publish", "legacy"}
_LEGACY_KEYS = {"kind", "path", "source", "address", "pages"}
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


def read_lists(reader: Reader, data: Mapping[str, Any]) -> tuple[ListConfig, ...]:
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
            reader.issues.append(ConfigIssue(where, f"expected a table, got {kind_of(table)}"))
            continue
        reader.unknown(table, _LIST_KEYS | _LIST_DELIVERY_KEYS, where)
        addresses = tuple(a.lower() for a in reader.strings(table, "addresses", where, check_email))
        list_ids = tuple(i.strip().strip("<>").lower() for i in reader.strings(table, "list_ids", where, check_list_id))
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
                name=reader.string(table, "name", where, default=slug, check=check_nonempty),
                description=reader.string(table, "description", where, default=""),
                addresses=addresses,
                list_ids=list_ids,
                delivery=_read_list_delivery(reader, table, where, addresses, list_ids),
                publish=reader.boolean(table, "publish", where, True),
                legacy=_read_legacy(reader, table, where, addresses),
            )
        )
    _check_legacy_paths(reader, out)
    return tuple(out)


def _check_kind(value: str) -> str | None:
    return None if value in LEGACY_KINDS else f"{value!r} is not one of {', '.join(map(repr, LEGACY_KINDS))}"


_LEGACY_PATH_RE = re.compile(r"[A-Za-z0-9._~@+=/-]*\Z")


def _check_legacy_path(value: str) -> str | None:
    if not _LEGACY_PATH_RE.match(value):
        return f"{value!r} may hold only letters, digits and . _ ~ @ + = - / (it is written in server maps as is)"
    parts = value.strip("/").split("/") if value.strip("/") else []
    if value.startswith("/") or any(part in ("", ".", "..") for part in parts):
        return f"{value!r} is not a path relative to the site's root (like 'pipermail/dev')"
    if parts and parts[0] in ROOT_NAMES:
        return f"{value!r} is inside the site's own /{parts[0]}/"
    return None


def _read_legacy(
    reader: Reader, table: Mapping[str, Any], where: str, addresses: tuple[str, ...]
) -> LegacyConfig | None:
    if "legacy" not in table:
        return None
    where = f"{where}.legacy"
    legacy = reader.table(table, "legacy", where)
    reader.unknown(legacy, _LEGACY_KEYS, where)
    kind = reader.string(legacy, "kind", where, check=_check_kind)
    path = reader.string(legacy, "path", where, check=_check_legacy_path).strip("/")
    source = reader.path(legacy, "source", where, None)
    if kind in ("mhonarc", "pipermail") and source is None and "source" not in legacy:
        reader.issues.append(ConfigIssue(f"{where}.source", f"is required for kind = {kind!r} (the old HTML folder)"))
    address = reader.string(legacy, "address", where, default=addresses[0] if addresses else "", check=check_email)
    if kind == "hyperkitty" and not address:
        reader.issues.append(ConfigIssue(f"{where}.address", "is required for kind = 'hyperkitty' (no addresses)"))
    return LegacyConfig(
        kind=cast(LegacyKind, kind if kind in LEGACY_KINDS else "mhonarc"),
        path=path,
        source=source,
        address=address.lower(),
        pages=reader.boolean(legacy, "pages", where, True),
    )


def _check_legacy_paths(reader: Reader, lists: list[ListConfig]) -> None:
    """An old archive must not sit in a list's own folder, nor share its folder with
    another list's (their pages would be made twice); HyperKitty's URLs hold the list's
    address, so HyperKitty archives of several lists may share one."""
    slugs = {lst.slug for lst in lists}
    seen: dict[str, str] = {}
    for lst in lists:
        if lst.legacy is None:
            continue
        where = f"lists.{lst.slug}.legacy.path"
        top = lst.legacy.path.split("/", 1)[0]
        if top in slugs:
            reader.issues.append(ConfigIssue(where, f"{lst.legacy.path!r} is inside list {top!r}'s own folder"))
        if lst.legacy.kind == "pipermail" and not lst.legacy.path:
            reader.issues.append(ConfigIssue(where, "a Pipermail archive's index.html cannot be the site's own"))
        key = lst.legacy.path if lst.legacy.kind != "hyperkitty" else f"{lst.legacy.path}\0{lst.legacy.address}"
        if key in seen:
            reader.issues.append(
                ConfigIssue(where, f"{lst.legacy.path!r} is also the old archive of list {seen[key]!r}")
            )
        seen[key] = lst.slug


def _check_posters(value: str) -> str | None:
    return None if value in ("subscribers", "anyone") else f"{value!r} is not one of 'subscribers', 'anyone'"


def _read_list_delivery(
    reader: Reader, table: Mapping[str, Any], where: str, addresses: tuple[str, ...], list_ids: tuple[str, ...]
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
    subscribers = tuple(s.lower() for s in reader.strings(table, "subscribers", where, check_email))
    posters = reader.string(table, "posters", where, default="subscribers", check=_check_posters)
    bounces = reader.string(table, "bounces_address", where, default=f"{local}-bounces@{domain}", check=check_email)
    if "+" in bounces.partition("@")[0]:
        reader.issues.append(ConfigIssue(f"{where}.bounces_address", "must not contain '+' (VERP adds it)"))
    return ListDelivery(
        post_address=post,
        list_id=list_ids[0] if list_ids else f"{local}.{domain}",
        bounces_address=bounces.lower(),
        request_address=reader.string(
            table, "request_address", where, default=f"{local}-request@{domain}", check=check_email
        ).lower(),
        subscribers=subscribers,
        subscribers_file=reader.path(table, "subscribers_file", where, None),
        posters=cast(Posters, posters if posters in ("subscribers", "anyone") else "subscribers"),
        subject_prefix=reader.string(table, "subject_prefix", where, default=""),
        footer=reader.string(table, "footer", where, default=""),
        exclude_poster=reader.boolean(table, "exclude_poster", where, False),
    )
