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
import unicodedata

__all__ = ["ANALYZER_VERSION", "MAX_WORD", "fold", "words"]

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


_ASCII_SEPARATORS = {code: " " for code in range(128) if not chr(code).isalnum()}
"""For ASCII text, every character that is not a letter or digit, as a space: ``translate``
then ``split`` finds the words twice as fast as the regex."""
_ALNUM_RE = re.compile(r"[^\W_]+")
"""Letters and numbers (``str.isalnum``): words are these plus marks, which ``\\w`` leaves out."""


def _is_mark(char: str) -> bool:
    return unicodedata.category(char)[0] == "M"


def _runs(text: str) -> list[str]:
    """Maximal runs of letters, marks and numbers. A C-speed scan for letters and
    numbers, then the few characters between them looked at for marks (a character
    class of every mark would make the regex ten times slower)."""
    runs: list[str] = []
    current: list[str] = []
    last = 0
    for match in _ALNUM_RE.finditer(text):
        start = match.start()
        if start > last:
            _gap(text[last:start], current, runs)
        current.append(match.group())
        last = match.end()
    _gap(text[last:], current, runs)
    if current:
        runs.append("".join(current))
    return runs


def _gap(gap: str, current: list[str], runs: list[str]) -> None:
    if gap.isascii():
        if gap and current:
            runs.append("".join(current))
            current.clear()
        return
    for char in gap:
        if _is_mark(char):
            current.append(char)
        elif current:
            runs.append("".join(current))
            current.clear()


def fold(text: str) -> str:
    """Rule 1: NFKC, lower case, ``ß`` -> ``ss``, final sigma -> sigma."""
    folded = unicodedata.normalize("NFKC", text).lower()
    if "ß" in folded or "\u03c2" in folded:
        folded = folded.replace("ß", "ss").replace("\u03c2", "\u03c3")
    return folded


def words(text: str) -> list[str]:
    """The tokens of ``text`` in order (rules 1-4)."""
    # ASCII text is already NFKC: lower-casing is all rule 1 does to it.
    folded = text.lower() if text.isascii() else fold(text)
    if folded.isascii():
        found = folded.translate(_ASCII_SEPARATORS).split()
        if found and max(map(len, found)) > MAX_WORD:
            found = [word for word in found if len(word) <= MAX_WORD]
        return found
    out: list[str] = []
    # Marks are rare after NFKC: look at the distinct characters before the slow path.
    has_marks = any(char >= "\u0300" and _is_mark(char) for char in set(folded))
    for word in _runs(folded) if has_marks else _ALNUM_RE.findall(folded):
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
