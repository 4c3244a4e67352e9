"""What a publish uploads and deletes, in which order, with which headers: pure planning
from the build's manifest and the record of the last publish, no I/O.

The order keeps readers whole at every instant (a kill -9 anywhere, then a re-run,
converges): files new to the bucket before changed ones, and in each of the two the
objects nothing links to the bucket by (search segments, static files, raw messages,
downloads, attachments, message pages) before the pages linking to them (indexes,
feeds, sitemaps, Message-ID pages); then the search manifest; deletions of what an
earlier build removed; the record last. A file the build removed stays in the bucket
until the publish after the one that saw it go (a reader holding the previous search
manifest or page still finds it), so the record keeps it as "pending".

Headers (``Headers``): Content-Type by kind, Cache-Control by kind (configurable),
Content-Disposition for attachments, and for redirect pages (a message's permalink,
old archives' URLs) the S3 website redirect metadata, found in the page itself
(``redirect_target``). The record holds the fingerprint of the header rules it was
uploaded with; when the rules change (another ``[publish.cache_control]``, a listlib
with other rules: ``HEADER_RULES``), every file is uploaded again with the new ones.
"""

from __future__ import annotations

import gzip
import hashlib
import html
import json
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

from ..errors import PublishError
from ..serve_http import content_type
from ..urls import SEARCH_DIR, STATIC_DIR

__all__ = [
    "INTENT_NAME",
    "RECORD_NAME",
    "Plan",
    "Record",
    "Upload",
    "Files",
    "Headers",
    "cache_kind",
    "content_disposition",
    "object_type",
    "plan_publish",
    "redirect_target",
]

RECORD_NAME = ".listlib-published.json.gz"
"""The record's name under the target's prefix (no output file starts with a dot)."""
INTENT_NAME = ".listlib-publishing.json"
"""Written before a publish uploads files no record names yet: which, over which record."""
_RECORD_FORMAT = 1
MANIFEST_PATH = f"{SEARCH_DIR}/manifest.json"
_SEGMENTS = f"{SEARCH_DIR}/seg/"

HEADER_RULES = 2
"""The version of the rules below (types, dispositions, redirects): a listlib whose
rules differ uploads every file again once. Raise it with any change to them."""
DEFAULT_CACHE_CONTROL = {
    "segments": "public, max-age=31536000, immutable",
    "attachments": "public, max-age=31536000",
    "pages": "public, max-age=300",
    "files": "public, max-age=3600",
}
"""Search segments are named by their generation and never rewritten; attachments keep
their bytes (only a redaction or take-down changes or removes one: purge the CDN then);
pages, feeds, sitemaps and the search manifest change with every new message; raw
messages, downloads and static files rarely (a redaction, a theme)."""
REDIRECT_PAGE_BYTES = 4096
"""Pages up to this size are read for a redirect (listlib's are about 700 bytes)."""
_REFRESH_RE = re.compile(rb'<meta http-equiv="refresh" content="0; url=([^"]*)">')
_INLINE_TYPES = ("image/", "audio/", "video/", "text/plain", "application/pdf")

_SHORT_SUFFIXES = (".html", ".atom", ".xml", ".json", ".txt")
_MONTH_FILE_RE = re.compile(r"[^/]+/\d{4}/\d{2}/[^/]+\Z")
_MONTH_PAGES = {"index.html", "date.html"}

Files = dict[str, tuple[str, int]]
"""Path under output/ -> (digest, size)."""


def object_type(path: str) -> str:
    """The Content-Type of an output file in the bucket: ``.mbox.gz`` is application/gzip
    and never gets a Content-Encoding (browsers would save it unpacked)."""
    if path == "_redirects" or path.startswith("_legacy/"):
        return "text/plain; charset=utf-8"
    if path.endswith((".patch", ".diff")):
        return "text/plain; charset=utf-8"
    return content_type(path)


def cache_kind(path: str) -> str:
    """Which ``[publish.cache_control]`` kind a file is."""
    if path.startswith(_SEGMENTS):
        return "segments"
    if _attachment(path):
        return "attachments"
    if path == MANIFEST_PATH or path.endswith(_SHORT_SUFFIXES):
        return "pages"
    return "files"


def content_disposition(path: str) -> str | None:
    """An attachment's Content-Disposition: shown in the browser when its type is one
    browsers show passively (images, audio, video, plain text, PDF), else saved; named
    by its (safe) file name, in UTF-8 (RFC 6266) with an ASCII fallback."""
    if not _attachment(path):
        return None
    name = path.rsplit("/", 1)[1]
    mode = "inline" if object_type(path).startswith(_INLINE_TYPES) else "attachment"
    fallback = "".join(c if " " <= c <= "~" and c not in '"\\%' else "_" for c in name)
    return f"{mode}; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


def redirect_target(path: str, head: bytes) -> str | None:
    """Where a redirect page (its first ``REDIRECT_PAGE_BYTES``) sends readers, as a
    URL relative to output/ (``%XX`` as the page spells them, with its fragment; a
    folder's with its final slash), or an absolute http(s) URL; None for any other page."""
    found = _REFRESH_RE.search(head)
    if found is None:
        return None
    link = html.unescape(found.group(1).decode("utf-8", "replace"))
    parts = urlsplit(link)
    if parts.scheme in ("http", "https"):
        return link
    if parts.scheme or parts.netloc or not parts.path or parts.path.startswith("/"):
        return None  # not a page of the site: leave it to the meta refresh
    target = posixpath.normpath(posixpath.join(posixpath.dirname(path), parts.path))
    if target.startswith("../") or target == "..":
        return None
    if parts.path.endswith("/"):
        target = "" if target == "." else target + "/"
    return target + (f"#{parts.fragment}" if parts.fragment else "")


@dataclass(frozen=True)
class Headers:
    """The header rules of a publish: the defaults with ``[publish.cache_control]``'s."""

    cache_control: tuple[tuple[str, str], ...] = ()

    def cache_control_of(self, path: str) -> str:
        kind = cache_kind(path)
        return dict(self.cache_control).get(kind) or DEFAULT_CACHE_CONTROL[kind]

    def fingerprint(self) -> str:
        rules = {**DEFAULT_CACHE_CONTROL, **dict(self.cache_control), "rules": HEADER_RULES}
        return hashlib.sha256(json.dumps(rules, sort_keys=True).encode()).hexdigest()[:16]

    def upload(self, path: str, digest: str, size: int) -> Upload:
        return Upload(path, digest, size, object_type(path), self.cache_control_of(path), content_disposition(path))


def _attachment(path: str) -> bool:
    """A file in a message's folder (``slug/YYYY/MM/CALL/name``)."""
    parts = path.split("/")
    return len(parts) >= 5 and parts[1].isdigit() and parts[2].isdigit()


def _rank(path: str) -> int:
    """0: objects nothing in the bucket needs to exist first; 1: pages linking to them;
    2: the search manifest (it names the segments every search loads)."""
    if path == MANIFEST_PATH:
        return 2
    if path.startswith((_SEGMENTS, f"{STATIC_DIR}/")) or path.endswith((".eml", ".mbox.gz")) or _attachment(path):
        return 0
    if _MONTH_FILE_RE.match(path) and path.endswith(".html") and path.rsplit("/", 1)[1] not in _MONTH_PAGES:
        return 0  # a message page
    return 1


@dataclass(frozen=True)
class Upload:
    path: str
    digest: str
    size: int
    content_type: str
    cache_control: str
    content_disposition: str | None = None


@dataclass
class Record:
    """What the bucket holds of the site: ``files`` as the last publish left them, and
    ``pending``, files a build removed, deleted by the next publish."""

    files: Files = field(default_factory=dict)
    pending: Files = field(default_factory=dict)
    generation: int = 0
    """Counts the records written; an intent names the generation it was written over."""
    headers: str = ""
    """The fingerprint of the header rules (``Headers.fingerprint``) the files went up with."""

    def to_bytes(self) -> bytes:
        data = {
            "format": _RECORD_FORMAT,
            "generation": self.generation,
            "headers": self.headers,
            "files": {path: list(value) for path, value in sorted(self.files.items())},
            "pending": {path: list(value) for path, value in sorted(self.pending.items())},
        }
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
        return gzip.compress(text, compresslevel=1, mtime=0)

    @classmethod
    def from_bytes(cls, data: bytes, where: str) -> Record:
        try:
            loaded = json.loads(gzip.decompress(data))
            if loaded.get("format") != _RECORD_FORMAT:
                raise ValueError(f"format {loaded.get('format')!r}")
            return cls(
                files={path: (str(digest), int(size)) for path, (digest, size) in loaded["files"].items()},
                pending={path: (str(digest), int(size)) for path, (digest, size) in loaded["pending"].items()},
                generation=int(loaded.get("generation", 0)),
                headers=str(loaded.get("headers", "")),
            )
        except (OSError, EOFError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise PublishError(
                f"{where}: the record of the last publish is damaged ({exc}); delete it to publish everything again"
            ) from None


@dataclass
class Plan:
    phases: list[list[Upload]]
    """Uploads in order: every phase is complete before the next starts."""
    delete: list[str]
    """Paths to delete once every upload is done (removed by a build before the last publish)."""
    unchanged: int
    record: Record
    """The record to write last."""
    record_changed: bool
    intent: Files = field(default_factory=dict)
    """Files the bucket may hold that no record names, to write down before uploading:
    the new files, and those an interrupted publish may have put (``unsure``)."""
    touched: set[str] = field(default_factory=set)
    """The paths whose entry in the record changes: the record's shards holding them
    are written again (``shards``)."""

    @property
    def uploads(self) -> int:
        return sum(len(phase) for phase in self.phases)

    @property
    def bytes(self) -> int:
        return sum(upload.size for phase in self.phases for upload in phase)

    @property
    def empty(self) -> bool:
        return not self.uploads and not self.delete and not self.record_changed


def plan_publish(
    manifest: Mapping[str, tuple[str, int]],
    record: Record,
    unsure: Mapping[str, tuple[str, int]] | None = None,
    headers: Headers | None = None,
) -> Plan:
    """What to upload (in phases), delete and record to bring the bucket to ``manifest``.
    ``unsure``: files an interrupted publish meant to upload (its intent, written over
    this record): uploaded again when still built, else deleted on the next publish.
    Every file goes up again when ``headers`` differ from the record's."""
    unsure = unsure or {}
    headers = headers or Headers()
    fingerprint = headers.fingerprint()
    same_headers = record.headers == fingerprint
    if same_headers and not record.pending and not unsure and manifest == record.files:  # the common case, fast
        return Plan(phases=[], delete=[], unchanged=len(manifest), record=record, record_changed=False)
    phases: list[list[Upload]] = [[] for _ in range(5)]
    unchanged = 0
    intent: Files = {path: value for path, value in unsure.items() if path not in record.files}
    touched: set[str] = set()
    for path, (digest, size) in manifest.items():
        remote = record.files.get(path) or record.pending.get(path)
        if record.files.get(path) != (digest, size):
            touched.add(path)
        if remote is not None and remote[0] == digest and path not in unsure and same_headers:
            unchanged += 1
            continue
        if remote is None:
            intent[path] = (digest, size)
        rank = _rank(path)
        phase = 4 if rank == 2 else rank + (0 if remote is None else 2)
        phases[phase].append(headers.upload(path, digest, size))
    for phase in phases:
        phase.sort(key=lambda upload: upload.path)
    delete = sorted(path for path in record.pending if path not in manifest)
    pending = {path: value for path, value in record.files.items() if path not in manifest}
    pending.update((path, value) for path, value in unsure.items() if path not in manifest and path not in pending)
    new = Record(files=dict(manifest), pending=pending, generation=record.generation + 1, headers=fingerprint)
    touched.update(path for path in record.files if path not in manifest)
    touched.update(path for path, value in record.pending.items() if pending.get(path) != value)
    touched.update(path for path in pending if path not in record.pending)
    changed = new.files != record.files or new.pending != record.pending or bool(unsure) or not same_headers
    return Plan(
        phases=[phase for phase in phases if phase],
        delete=[path for path in delete if path not in pending],
        unchanged=unchanged,
        record=new,
        record_changed=changed,
        intent=intent,
        touched=touched,
    )
