"""Text -> search tokens: the one definition the index writer, the Python reader and
the JavaScript client (``themes/default/static/search.js``) all follow.

Rules (keep the JS copy in step; ``tests/data/search_vectors.json`` checks both):

1. Fold: Unicode NFKC, then the full Unicode lower-case mapping, then ``ß`` -> ``ss``
   and final final sigma -> sigma (what case folding adds to lower-casing for living scripts).
2. Words: maximal runs of letters, marks and numbers (general categories L*, M*, N*);
   everything else (spaces, punctuation, ``_``, ``@``, ``.``) separates words.
3. CJK (Han, Hiragana, Katakana) has no spaces: inside a word, each run of those
   characters becomes its overlapping character bigrams (a lone character stays a
   unigram), so a query finds any two-character sequence and a longer one as a phrase.
4. Words longer than ``MAX_WORD`` characters (base64, hashes) are dropped; nothing
   else is (no stop words: "raid 0", "to be" stay searchable).

Every token has a position (bigrams too), so phrases can be checked. Pure.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import cache

__all__ = ["MAX_WORD", "fold", "tokens", "words"]

MAX_WORD = 40
ANALYZER_VERSION = 1

_CJK_RANGES = (
    (0x2E80, 0x2FDF),
    (0x3005, 0x3007),
    (0x3021, 0x3029),
    (0x3038, 0x303B),
    (0x3040, 0x30FF),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0x20000, 0x3134F),
)
_CJK_CLASS = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _CJK_RANGES)
_CJK_RE = re.compile(f"[{_CJK_CLASS}]+")


@cache
def _word_re() -> re.Pattern[str]:
    """Letters and numbers (``\\w`` without ``_``) plus the marks ``\\w`` leaves out."""
    marks: list[str] = []
    start = None
    for cp in range(sys.maxunicode + 1):
        is_mark = unicodedata.category(chr(cp)).startswith("M")
        if is_mark and start is None:
            start = cp
        elif not is_mark and start is not None:
            marks.append(f"{re.escape(chr(start))}-{re.escape(chr(cp - 1))}")
            start = None
    return re.compile(f"(?:[^\\W_]|[{''.join(marks)}])+")


def fold(text: str) -> str:
    """Rule 1: NFKC, lower case, ``ß`` -> ``ss``, final sigma -> sigma."""
    folded = unicodedata.normalize("NFKC", text).lower()
    if "ß" in folded or "\u03c2" in folded:
        folded = folded.replace("ß", "ss").replace("\u03c2", "\u03c3")
    return folded


def words(text: str) -> list[str]:
    """The tokens of ``text`` in order (rules 1-4)."""
    out: list[str] = []
    for match in _word_re().finditer(fold(text)):
        word = match.group()
        if word.isascii():
            if len(word) <= MAX_WORD:
                out.append(word)
            continue
        _split_cjk(word, out)
    return out


def _split_cjk(word: str, out: list[str]) -> None:
    at = 0
    for match in _CJK_RE.finditer(word):
        if match.start() > at:
            _plain(word[at : match.start()], out)
        run = match.group()
        if len(run) == 1:
            out.append(run)
        else:
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
        at = match.end()
    if at < len(word):
        _plain(word[at:], out)


def _plain(word: str, out: list[str]) -> None:
    if len(word) <= MAX_WORD:
        out.append(word)


def tokens(text: str) -> list[str]:
    """Alias of ``words`` kept for readability at call sites that index."""
    return words(text)
