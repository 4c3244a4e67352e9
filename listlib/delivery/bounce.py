"""Bounces: VERP envelope senders, recognising bounces that come back, and the bounce record.

With VERP (``[delivery] verp = true``) the post to ``ann@example.org`` leaves with
the envelope sender ``dev-bounces+ann=example.org@lists.example.org``, so a bounce,
whatever its format, names the subscriber in the address it is delivered to
(``Delivered-To``, ``X-Original-To``, ``To``...). Without VERP a bounce to
``dev-bounces@...`` is understood when it is a standard delivery status
notification (RFC 3464: ``Action: failed`` with a ``Final-Recipient``). Bounces
are recorded in ``bounces.log`` in the queue folder (JSON lines, fsync'ed, one per
bounce message and subscriber) and reported per subscriber; removing subscribers
is left to the admin.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..config import Config, ListDelivery
from ..fsutil import fsync_dir
from ..message import FIELD_RE

__all__ = ["Bounce", "BounceLog", "bounce_report", "decode_verp", "find_bounces", "verp_sender"]

_ADDR_RE = re.compile(rb"[^\s<>()\[\],;:\"']+@[^\s<>()\[\],;:\"']+")
_ADDRESS_FIELDS = (b"to", b"cc", b"delivered-to", b"x-original-to", b"envelope-to", b"x-envelope-to", b"x-rcpt-to")
_FINAL_RE = re.compile(
    rb"^(?:Final|Original)-Recipient:[ \t]*rfc822[ \t]*;[ \t]*<?([^\s<>]+@[^\s<>]+?)>?[ \t]*\r?$", re.M | re.I
)
_FAILED_RE = re.compile(rb"^Action:[ \t]*failed", re.M | re.I)
_LOG = "bounces.log"


def verp_sender(bounces_address: str, recipient: str) -> str:
    """``dev-bounces@lists.example.org`` + ``ann@example.org`` -> ``dev-bounces+ann=example.org@lists.example.org``."""
    local, _, domain = bounces_address.partition("@")
    return f"{local}+{recipient.replace('@', '=')}@{domain}"


def decode_verp(address: str, bounces_address: str) -> str | None:
    """The subscriber a VERP address stands for, or None when it is not one of this list's."""
    local, _, domain = bounces_address.lower().partition("@")
    address = address.lower()
    prefix, suffix = f"{local}+", f"@{domain}"
    if not (address.startswith(prefix) and address.endswith(suffix)):
        return None
    encoded = address[len(prefix) : -len(suffix)]
    user, eq, host = encoded.rpartition("=")
    return f"{user}@{host}" if eq and user and host else None


@dataclass(frozen=True)
class Bounce:
    slug: str
    address: str
    how: str
    """``verp`` or ``dsn``."""


def _header(raw: bytes) -> bytes:
    end = re.search(rb"\r?\n\r?\n", raw)
    return raw[: end.start()] if end else raw


def find_bounces(raw: bytes, lists: Iterable[tuple[str, ListDelivery]]) -> list[Bounce]:
    """The subscribers this message reports as bouncing, for any of ``lists`` (slug, delivery)."""
    addresses: list[str] = []
    for name, value in FIELD_RE.findall(_header(raw)):
        if name.lower() in _ADDRESS_FIELDS:
            addresses += [a.decode("ascii", "replace").lower() for a in _ADDR_RE.findall(value)]
    found: list[Bounce] = []
    for slug, delivery in lists:
        for address in addresses:
            subscriber = decode_verp(address, delivery.bounces_address)
            if subscriber is not None:
                found.append(Bounce(slug, subscriber, "verp"))
        if found or delivery.bounces_address not in addresses:
            continue
        if _FAILED_RE.search(raw):
            for match in _FINAL_RE.finditer(raw):
                address = match.group(1).decode("ascii", "replace").lower()
                if decode_verp(address, delivery.bounces_address) is None:
                    found.append(Bounce(slug, address, "dsn"))
    return list(dict.fromkeys(found))


class BounceLog:
    """``bounces.log`` in the queue folder."""

    def __init__(self, queue_root: Path) -> None:
        self.path = queue_root / _LOG

    def entries(self) -> list[dict[str, object]]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        out = []
        for line in data.split(b"\n"):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a torn last line
        return out

    def record(self, bounces: list[tuple[Bounce, str, float]]) -> int:
        """Record (bounce, call number of the bounce message, when); return how many were new."""
        seen = {(e.get("call"), e.get("list"), e.get("address")) for e in self.entries()}
        lines = []
        for bounce, call, when in bounces:
            key = (call, bounce.slug, bounce.address)
            if key in seen:
                continue  # the same bounce fetched again
            seen.add(key)
            entry = {"list": bounce.slug, "address": bounce.address, "call": call, "at": when, "how": bounce.how}
            lines.append(json.dumps(entry, separators=(",", ":")).encode("utf-8") + b"\n")
        if not lines:
            return 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            data = b"".join(lines)
            if self._torn():
                data = b"\n" + data
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        fsync_dir(self.path.parent)
        return len(lines)

    def _torn(self) -> bool:
        try:
            with open(self.path, "rb") as f:
                f.seek(0, os.SEEK_END)
                if f.tell() == 0:
                    return False
                f.seek(-1, os.SEEK_END)
                return f.read(1) != b"\n"
        except FileNotFoundError:
            return False

    def report(self, slug: str | None = None) -> list[dict[str, object]]:
        """One row per (list, subscriber): bounces, first and last, newest first."""
        rows: dict[tuple[str, str], dict[str, object]] = {}
        for entry in self.entries():
            key = (str(entry.get("list")), str(entry.get("address")))
            if slug is not None and key[0] != slug:
                continue
            when = float(entry.get("at", 0.0))  # type: ignore[arg-type]
            row = rows.setdefault(key, {"list": key[0], "address": key[1], "bounces": 0, "first": when, "last": when})
            row["bounces"] = int(row["bounces"]) + 1  # type: ignore[call-overload]
            row["first"] = min(float(row["first"]), when)  # type: ignore[arg-type]
            row["last"] = max(float(row["last"]), when)  # type: ignore[arg-type]
        return sorted(rows.values(), key=lambda r: (-int(r["bounces"]), str(r["list"]), str(r["address"])))  # type: ignore[call-overload]


def bounce_report(config: Config, slug: str | None = None) -> list[dict[str, object]]:
    """The bouncing subscribers of the site (of list ``slug`` only, if given), as
    ``BounceLog.report`` gives them: what ``listlib bounces`` shows."""
    assert config.site.queue_dir is not None
    return BounceLog(config.site.queue_dir).report(slug)
