"""Attachment file names that are safe to write and to serve, and unique within a message.

A name from a message is only a suggestion. ``safe_filename`` keeps what a
reader would recognise and removes everything that could hurt:

- only the last path component is kept (``../../x`` -> ``x``,
  ``C:\\Users\\me\\report.doc`` -> ``report.doc``); runs of dots become one dot,
  leading dots and spaces and trailing dots and spaces are removed (no hidden
  files, nothing Windows would silently rename);
- control characters, bidirectional overrides (``gpj.exe`` spoofing) and
  ``<>:"|?*`` become ``_``;
- Windows device names (``con.txt``, ``LPT1``, ``aux.tar.gz``) get a leading ``_``;
- server-side handler extensions anywhere in the name (``x.php.jpg``) have
  their dot replaced by ``_`` (Apache applies handlers to any extension:
  ``.php``, ``.cgi``, ``.shtml``, and ``.var``, the type maps of Debian's stock
  mod_negotiation, which answer with HTML of their own);
- the last extension is kept only when it is on an allowlist (``SAFE_EXTENSIONS``:
  images but not SVG, PDF, plain text, patches, archives, office documents,
  signatures, common audio and video), each mapped by Debian's ``/etc/mime.types``,
  Apache's and nginx's to a type no browser runs. Any other name gets ``.txt``
  appended when the part is text (a ``text/*`` or ``message/*`` type, or a
  known text extension such as ``.html``, ``.svg`` or ``.log``) and ``.bin``
  otherwise: ``index.html`` -> ``index.html.txt``, ``x.xhtm`` -> ``x.xhtm.txt``,
  ``README`` -> ``README.txt`` or ``README.bin``. A file without an extension, or
  with one the server does not know, is sent without a type by Apache, and
  browsers sniff such bytes as HTML (issue 23);
- names longer than ``MAX_BYTES`` (100) bytes of UTF-8 are shortened, keeping
  the extension and whole characters;
- an empty result becomes ``attachment-N.ext`` with the extension taken from
  the content type (a fixed table, so every machine agrees), then held to the
  same allowlist (``attachment-1.svg.txt``);
- a name already taken in the message (compared case-insensitively, as on
  macOS and Windows file systems) gets ``-2``, ``-3`` ... before its extension.

``display_name`` is what a page shows as the link text: the name from the
message with only its path and unprintable characters removed (templates escape it).

Pure: no I/O.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "MAX_BYTES",
    "MAX_LABEL",
    "SAFE_EXTENSIONS",
    "display_name",
    "extension_for",
    "safe_filename",
    "unique_filename",
]

MAX_BYTES = 100
MAX_LABEL = 200
_MAX_EXTENSION = 16

_EXTENSIONS = {
    "text/plain": ".txt",
    "text/html": ".html",
    "text/x-patch": ".patch",
    "text/x-diff": ".diff",
    "text/diff": ".diff",
    "text/csv": ".csv",
    "text/calendar": ".ics",
    "text/vcard": ".vcf",
    "text/x-vcard": ".vcf",
    "text/enriched": ".txt",
    "text/rtf": ".rtf",
    "text/xml": ".xml",
    "text/x-log": ".log",
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/jpg": ".jpg",
    "image/pjpeg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "image/bmp": ".bmp",
    "image/tiff": ".tif",
    "image/svg+xml": ".svg",
    "application/pdf": ".pdf",
    "application/zip": ".zip",
    "application/gzip": ".gz",
    "application/x-gzip": ".gz",
    "application/x-tar": ".tar",
    "application/x-bzip2": ".bz2",
    "application/x-xz": ".xz",
    "application/x-7z-compressed": ".7z",
    "application/json": ".json",
    "application/rtf": ".rtf",
    "application/msword": ".doc",
    "application/vnd.ms-excel": ".xls",
    "application/vnd.ms-powerpoint": ".ppt",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
    "application/vnd.oasis.opendocument.text": ".odt",
    "application/vnd.oasis.opendocument.spreadsheet": ".ods",
    "application/pgp-signature": ".asc",
    "application/pgp-encrypted": ".asc",
    "application/pgp-keys": ".asc",
    "application/pkcs7-signature": ".p7s",
    "application/x-pkcs7-signature": ".p7s",
    "application/pkcs7-mime": ".p7m",
    "application/x-pkcs7-mime": ".p7m",
    "application/ms-tnef": ".dat",
    "message/rfc822": ".eml",
    "message/delivery-status": ".txt",
    "audio/mpeg": ".mp3",
    "audio/ogg": ".ogg",
    "video/mp4": ".mp4",
}
# Served as themselves: each is in Debian's /etc/mime.types (Apache's TypesConfig) with a
# type no browser runs or sniffs as HTML, and in nginx's mime.types with such a type or not
# at all (nginx then sends application/octet-stream); test_display_hostile checks both.
# Not here: html, xhtml, svg, xml and the like (active); eml (message/rfc822 is MHTML to
# Chromium); ico, avif, log, md, bz2, dat (missing from /etc/mime.types: Apache would send
# no type and the browser sniff). A server whose list lacks one of these (say .patch
# outside Debian) sends no type either: README's nosniff header covers that.
SAFE_EXTENSIONS = frozenset({
    "png", "jpg", "jpeg", "gif", "webp", "bmp", "tif", "tiff",
    "pdf", "txt", "patch", "diff", "csv",
    "zip", "gz", "tgz", "tar", "xz", "7z",
    "doc", "docx", "xls", "xlsx", "ppt", "pptx", "odt", "ods", "odp", "rtf",
    "asc", "sig", "p7s", "p7m",
    "mp3", "ogg", "mp4", "webm", "bin",
})  # fmt: skip
# Text a reader would rather see in the browser than download (as .txt).
_TEXT_EXTENSIONS = {
    "html", "htm", "xhtml", "xhtm", "xht", "shtml", "shtm", "svg", "xml", "xsl", "xslt", "xsd", "rdf", "atom",
    "rss", "js", "mjs", "cjs", "json", "css", "md", "rst", "log", "eml", "mbox", "ics", "vcf", "conf", "cfg",
    "ini", "yaml", "yml", "toml", "sql", "c", "h", "cc", "cpp", "hpp", "py", "pl", "rb", "sh", "go", "rs",
    "java", "mht", "mhtml", "dts", "dtsi", "config", "cocci", "lst", "out", "text", "mbx",
}  # fmt: skip
_TEXT_TYPES = {"application/json", "application/xml", "application/javascript", "application/x-sh"}
# Run by a server that has the handler configured, wherever the extension sits in the name.
_HANDLERS = {
    "php", "php2", "php3", "php4", "php5", "php7", "php8", "phtml", "pht", "phar", "phps", "cgi", "fcgi",
    "asp", "aspx", "ashx", "asmx", "jsp", "jspx", "shtml", "shtm", "stm", "ssi", "var", "asis",
}  # fmt: skip
_RESERVED_RE = re.compile(r"(?:con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)(?:\.|\Z)", re.I)
_BAD_CHARS_RE = re.compile(
    '[\x00-\x1f\x7f-\x9f<>:"|?*\u061c\u200b-\u200f\u202a-\u202e\u2028\u2029\u2060\u2066-\u2069\ufeff'
    # Noncharacters and lone surrogates (from undecodable bytes): not text, and not encodable as UTF-8.
    "\ufffe\uffff\ud800-\udfff]"
)
_DOTS_RE = re.compile(r"\.{2,}")
_LEADING_RE = re.compile(r"\A[\s.]+")
_SEPARATOR_RE = re.compile(r"[/\\]")


def extension_for(content_type: str) -> str:
    """The file extension for a content type (a fixed table; ``.bin`` when unknown)."""
    return _EXTENSIONS.get(content_type, ".txt" if content_type.startswith("text/") else ".bin")


def _split_extension(name: str) -> tuple[str, str]:
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem or len(ext) > _MAX_EXTENSION or " " in ext:
        return name, ""
    return stem, "." + ext


def _defuse(name: str) -> str:
    parts = name.split(".")
    kept = [parts[0]]
    for part in parts[1:]:
        if part.lower() in _HANDLERS:
            kept[-1] += "_" + part
        else:
            kept.append(part)
    name = ".".join(kept)
    if _RESERVED_RE.match(name):
        name = "_" + name
    return name


def _is_text(ext: str, content_type: str) -> bool:
    return (
        content_type.startswith(("text/", "message/"))
        or content_type in _TEXT_TYPES
        or ext[1:].lower() in _TEXT_EXTENSIONS
    )


def _served_safely(stem: str, ext: str, content_type: str) -> tuple[str, str]:
    """(stem, ext) with an extension from ``SAFE_EXTENSIONS``: any other is kept in the stem."""
    if ext[1:].lower() in SAFE_EXTENSIONS:
        return stem, ext
    return stem + ext, ".txt" if _is_text(ext, content_type) else ".bin"


def _fit(stem: str, ext: str, limit: int = MAX_BYTES) -> str:
    """Shorten the stem (whole characters) so that stem + ext fits in ``limit`` bytes."""
    room = limit - len(ext.encode())
    if room < 1:
        ext = ext.encode()[: limit - 1].decode(errors="ignore")
        room = limit - len(ext.encode())
    encoded = stem.encode()
    if len(encoded) > room:
        stem = encoded[:room].decode(errors="ignore").rstrip(". ") or "_"
    return stem + ext


def _strip(name: str) -> str:
    """Without leading and trailing dots and white space (of any kind: U+00A0 too)."""
    # Anchored at the start only (the end is stripped on the reversed name): an
    # end-anchored pattern would be quadratic on names full of blanks.
    return _LEADING_RE.sub("", _LEADING_RE.sub("", name)[::-1])[::-1]


def _clean(name: str) -> str:
    name = unicodedata.normalize("NFC", name)
    components = [part for part in _SEPARATOR_RE.split(name) if _strip(part)]
    name = components[-1] if components else ""
    return _strip(_DOTS_RE.sub(".", _BAD_CHARS_RE.sub("_", name)))


def unique_filename(
    name: str | None, content_type: str, folded: set[str], counters: dict[str, int] | None = None
) -> str:
    """``safe_filename`` against a set of casefolded names already taken (the result is added).

    ``counters`` (kept by the caller for one message) remembers the last number
    used per name, so a message with thousands of parts of one name stays linear.
    """
    counters = {} if counters is None else counters
    cleaned = _clean(name or "")
    if cleaned:
        stem, ext = _served_safely(*_split_extension(_defuse(cleaned)), content_type)
        key = (stem + ext).casefold()
        result = _fit(stem, ext)
        number = counters.get(key, 2)
        while result.casefold() in folded:
            result = _fit(stem, f"-{number}{ext}")
            number += 1
    else:
        inner, ext = _served_safely("", extension_for(content_type), content_type)
        key = "\0" + inner + ext
        number = counters.get(key, 1)
        while (result := f"attachment-{number}{inner}{ext}").casefold() in folded:
            number += 1
    counters[key] = number
    folded.add(result.casefold())
    return result


def display_name(name: str | None, filename: str) -> str:
    """The name a page shows for an attachment saved as ``filename``: the message's own
    name (last path component, no control or bidirectional characters, at most
    ``MAX_LABEL`` characters), or ``filename`` when the message gives none."""
    cleaned = _clean(name or "")
    if len(cleaned) > MAX_LABEL:
        cleaned = cleaned[: MAX_LABEL - 1] + "\u2026"
    return cleaned or filename


def safe_filename(name: str | None, content_type: str, taken: set[str]) -> str:
    """A safe file name for an attachment, unique among ``taken`` (which it is added to).

    ``name`` is the decoded name from the message (or None); ``content_type``
    the lower-case ``type/subtype``. See the module docstring for the rules.
    """
    folded = {existing.casefold() for existing in taken}
    result = unique_filename(name, content_type, folded)
    taken.add(result)
    return result
