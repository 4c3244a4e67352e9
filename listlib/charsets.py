"""Charset labels -> Python codecs, and bytes -> text despite lying labels.

Mail declares its charset, and the declaration is often wrong: ``iso-8859-1``
that is really Windows-1252 (curly quotes at 0x91-0x94) or really UTF-8,
``us-ascii`` on 8-bit text, no label at all, or a name no codec has (``y``,
``x-unknown``, ``non-existing-codec``; all seen in real archives). The rules:

- a Latin-1 family label (``us-ascii``, ``iso-8859-1``, ``windows-1252``) or a
  missing or unknown one: UTF-8 when the bytes are valid UTF-8, else
  Windows-1252 (a superset of Latin-1's printable range);
- ``utf-8`` that is not valid UTF-8: UTF-8 with replacement characters when
  most non-ASCII text decodes, else Windows-1252;
- any other real codec: that codec; when it fails, UTF-8 if the bytes are
  valid UTF-8, else the codec with replacement characters;
- labels that name a superset in practice are widened (``gb2312`` ->
  ``gb18030``, ``shift_jis`` -> ``cp932``, ``ks_c_5601-1987`` -> ``cp949`` ...);
- codecs that are not charsets are refused (``zlib``, ``rot13``,
  ``unicode_escape``, ``punycode`` ...) and treated as unknown.

Decoding never raises, and never returns lone surrogates (which ``utf-7`` can
produce and which cannot be written as UTF-8). Pure: no I/O, no listlib imports.
"""

from __future__ import annotations

import codecs
import re
from functools import lru_cache

__all__ = ["decode_bytes", "resolve_charset"]

# Labels whose real-world use is a superset codec (the WHATWG Encoding Standard
# makes the same choices for the web).
_WIDER = {
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    "euc-cn": "gb18030",
    "cp936": "gb18030",
    "csgb2312": "gb18030",
    "big5": "big5hkscs",
    "shift_jis": "cp932",
    "shift-jis": "cp932",
    "sjis": "cp932",
    "x-sjis": "cp932",
    "ms_kanji": "cp932",
    "windows-31j": "cp932",
    "ks_c_5601-1987": "cp949",
    "ks_c_5601": "cp949",
    "euc-kr": "cp949",
    "tis-620": "cp874",
    "iso-8859-11": "cp874",
    "windows-874": "cp874",
    "iso-2022-jp": "iso2022_jp_ext",
    "iso-8859-8-i": "iso8859-8",
    "iso-8859-6-i": "iso8859-6",
    "x-mac-roman": "mac-roman",
    "unicode-1-1-utf-7": "utf-7",
    "x-utf-7": "utf-7",
}
# Codecs Python has but no mail charset is: they would misread text or refuse it.
_REFUSED = {"unicode-escape", "raw-unicode-escape", "punycode", "idna", "undefined", "palmos"}
# Labels for which valid UTF-8 is tried first (the commonest lie is UTF-8 labelled Latin-1).
_LATIN = {"ascii", "iso8859-1", "cp1252"}
# Codecs that cannot produce lone surrogates, so their output needs no scrubbing.
_CLEAN = {"utf-8", "ascii", "iso8859-1", "cp1252"}
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_UTF8_SEQ_RE = re.compile(rb"[\xc2-\xf4][\x80-\xbf]{1,3}")
_HIGH_BYTES = bytes(range(0x80, 0x100))


@lru_cache(maxsize=512)
def resolve_charset(label: str | None) -> str | None:
    """The Python codec for a charset label, or None when absent, unknown or refused."""
    if not label:
        return None
    # RFC 2231 allows a language suffix in encoded words: utf-8*en.
    name = label.split("*", 1)[0].strip().strip("\"'").strip().lower()
    if not name or len(name) > 40:
        return None
    name = _WIDER.get(name, name)
    try:
        info = codecs.lookup(name)
    except (LookupError, ValueError, TypeError):
        return None
    if not getattr(info, "_is_text_encoding", True) or info.name in _REFUSED:
        return None
    return info.name


def _scrub(text: str) -> str:
    return _SURROGATE_RE.sub("\ufffd", text) if _SURROGATE_RE.search(text) else text


def _decode_utf8_or_cp1252(data: bytes) -> str:
    """Invalid UTF-8: mostly UTF-8 with a few broken bytes, or really a single-byte charset."""
    sequences = _UTF8_SEQ_RE.findall(data)
    high = len(data) - len(data.translate(None, _HIGH_BYTES))
    stray = high - sum(map(len, sequences))
    if len(sequences) > stray:
        return data.decode("utf-8", "replace")
    return data.decode("cp1252", "replace")


def decode_bytes(data: bytes, label: str | None) -> str:
    """Text of ``data`` labelled ``label``, by the rules in the module docstring; never raises."""
    codec = resolve_charset(label)
    if codec is None or codec in _LATIN or codec == "utf-8":
        if data.isascii():
            return data.decode("ascii")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        if codec == "utf-8":
            return _decode_utf8_or_cp1252(data)
        return data.decode("cp1252", "replace")
    try:
        text = data.decode(codec)
    except (UnicodeError, LookupError, ValueError, TypeError):
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        try:
            text = data.decode(codec, "replace")
        except (UnicodeError, LookupError, ValueError, TypeError):
            return data.decode("cp1252", "replace")
    return text if codec in _CLEAN else _scrub(text)
