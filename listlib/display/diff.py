"""Unified diffs and diffstats in plain text: where they are and what each of their lines is.

Pure: no I/O, no HTML (``textbody`` marks the lines up), never raises on odd
text. Input is a cleaned text (``textbody.clean_text``: CRLF is already
``\\n``) that holds no quoted lines: quotes are split off before, so a diff
inside a ``> `` reply stays a quote.

Rules (what counts, decided here):

- *A file's diff* starts at a ``diff --git`` line followed by git's extended
  header lines (``index``, ``new file mode``, ``rename from`` …) and then
  either ``--- ``/``+++ `` lines with hunks, a ``Binary files … differ``
  line, a ``GIT binary patch`` block, or nothing more (a mode change or a pure
  rename: at least one extended header line is then needed); or at a
  ``diff -…`` line (``diff -u``, ``diff -urN``) followed by ``--- ``/``+++ ``
  and at least one hunk; or at a bare ``--- ``/``+++ `` pair directly
  followed by a hunk. ``--- `` lines alone, a ``---`` separator line, and a
  ``diff --git`` line with nothing after it are text.
- *A hunk* is an ``@@ -a,b +c,d @@`` line and exactly the lines its counts
  announce: `` `` (context, also an empty line from a mailer that strips
  trailing blanks), ``-`` (removed), ``+`` (added), and ``\\ No newline at
  end of file`` markers. It ends early at the first line that does not fit
  the counts; so a ``-- `` signature line after the last hunk stays a
  signature, while a removed line that reads ``-- `` inside a hunk is a
  removed line.
- *A binary patch* (``GIT binary patch``) is ``literal N`` / ``delta N``
  lines, each followed by base85 lines up to a blank line (forward, then
  reverse block).
- Files that follow each other directly (no line between them) make one diff.
- *A diffstat* is one or more `` path | N ++--`` (or ``| Bin …``) lines
  followed by `` N files changed, …`` and then any `` create mode`` /
  `` delete mode`` / `` rename`` / `` mode change`` lines.

``split`` returns the pieces of a text in order; joined by ``"\\n"`` they give
the text back unchanged.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["ADD", "BINARY", "DEL", "FILE", "HUNK", "META", "Piece", "might_hold", "split"]

FILE = "diff-file"
"""A file header line: ``diff --git``, ``--- a/…``, ``+++ b/…``."""
META = "diff-meta"
"""Git's extended headers, ``Binary files … differ``, ``\\ No newline at end of file``, binary block heads."""
HUNK = "diff-hunk"
ADD = "diff-add"
DEL = "diff-del"
BINARY = "diff-bin"
"""A base85 line of a binary patch."""
CONTEXT = ""


class Piece(NamedTuple):
    """A run of whole lines of one kind: "text", "diff" or "diffstat"; ``classes`` (one per
    line: ``FILE``, ``HUNK`` … or "" for a context line) for a diff, the histogram span
    (start, end) per line for a diffstat (``(0, 0)`` where there is none); empty for text."""

    kind: str
    text: str
    classes: tuple[str, ...] = ()
    spans: tuple[tuple[int, int], ...] = ()


_HUNK_RE = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_GIT_HEADER_RE = re.compile(
    r"(?:index [0-9a-f]+\.\.[0-9a-f]+|(?:old|new|deleted file|new file) mode [0-7]+"
    r"|copy (?:from|to) |rename (?:from|to) |(?:dis)?similarity index \d+%)"
)
_FIRST_CLASS = {" ": CONTEXT, "": CONTEXT, "-": DEL, "+": ADD, "\\": META}
_NOT_HUNK_RE = re.compile(r"[^ +\-\\]")
_BINARY_HEAD_RE = re.compile(r"(?:literal|delta) \d+\Z")
_BASE85_RE = re.compile(r"[A-Za-z][0-9A-Za-z!#$%&()*+;<=>?@^_`{|}~-]+\Z")
# Found from its literal part (fast), then checked back to the start of its line.
_DIFFSTAT_SUMMARY_RE = re.compile(r"files? changed(?:, \d+ insertions?\(\+\))?(?:, \d+ deletions?\(-\))?[ \t]*$", re.M)
_DIFFSTAT_COUNT_RE = re.compile(r"(?:\A|\n) \d+ \Z")
_DIFFSTAT_LINE_RE = re.compile(r" \S.*?[ \t]\|[ \t]+(?:\d+(?: ([+-]+))?|Bin(?: \d+ -> \d+ bytes)?)[ \t]*\Z")
_DIFFSTAT_AFTER_RE = re.compile(r" (?:(?:create|delete) mode [0-7]+ |rename |copy |mode change [0-7]+ => )")


def might_hold(text: str) -> bool:
    """A fast test: False when ``split`` certainly finds nothing (most mail)."""
    return "\n@@ -" in text or "diff --git " in text or " changed" in text


def split(text: str) -> list[Piece]:
    """The text cut into text, diff and diffstat pieces (see the module docstring)."""
    if not might_hold(text):
        return [Piece("text", text)]
    diffs = "\n@@ -" in text or "diff --git " in text
    summaries = _summaries(text) if " changed" in text else []
    if not diffs and not summaries:
        return [Piece("text", text)]
    lines = text.split("\n")
    found: list[tuple[int, int, Piece]] = []  # (first line, end line, piece) of every diff and diffstat
    if diffs:
        at = 0
        for start in _starts(text):
            if start < at:
                continue
            end, classes = _diff(lines, start)
            if end > start:
                found.append((start, end, Piece("diff", "\n".join(lines[start:end]), tuple(classes))))
                at = end
    if summaries:
        found.extend(_diffstats(text, summaries, lines, found))
        found.sort(key=lambda item: item[0])
    if not found:
        return [Piece("text", text)]
    pieces: list[Piece] = []
    at = 0
    for start, end, piece in found:
        if start > at:
            pieces.append(Piece("text", "\n".join(lines[at:start])))
        pieces.append(piece)
        at = end
    if at < len(lines):
        pieces.append(Piece("text", "\n".join(lines[at:])))
    return pieces


def _starts(text: str) -> list[int]:
    """The numbers of the lines that start with "diff " or "--- ", in order."""
    offsets = []
    for needle in ("\ndiff ", "\n--- "):
        at = text.find(needle)
        while at >= 0:
            offsets.append(at + 1)
            at = text.find(needle, at + 1)
    if text.startswith(("diff ", "--- ")):
        offsets.append(0)
    offsets.sort()
    numbers = []
    line = previous = 0
    for offset in offsets:
        line += text.count("\n", previous, offset)
        numbers.append(line)
        previous = offset
    return numbers


def _diff(lines: list[str], at: int) -> tuple[int, list[str]]:
    """(end, classes) of the diff of one or more files from line ``at``; end == at when there is none."""
    classes: list[str] = []
    start = at
    while at < len(lines):
        end = _file(lines, at, classes)
        if end == at:
            break
        at = end
    return (at, classes) if at > start else (start, [])


def _file(lines: list[str], at: int, classes: list[str]) -> int:
    """The end of one file's diff from line ``at`` (its line classes appended), or ``at``."""
    count = len(lines)
    mark = len(classes)
    start = at
    line = lines[at]
    git = line.startswith("diff --git ")
    if line.startswith("diff "):
        if not git and not line.startswith("diff -"):
            return start
        classes.append(FILE)
        at += 1
        while at < count and _GIT_HEADER_RE.match(lines[at]):
            classes.append(META)
            at += 1
        headers = at - start - 1
        if git and at < count:
            if lines[at].startswith("Binary files ") and lines[at].endswith(" differ"):
                classes.append(META)
                return at + 1
            if lines[at] == "GIT binary patch":
                classes.append(META)
                end = _binary(lines, at + 1, classes)
                if end > at + 1:
                    return end
                classes.pop()
    else:
        headers = 0
    if at + 1 < count and lines[at].startswith("--- ") and lines[at + 1].startswith("+++ "):
        end = _hunks(lines, at + 2, classes, [FILE, FILE])
        if end > at + 2:
            return end
    if git and headers:
        return at  # a mode change, a pure rename or copy, an empty new file
    del classes[mark:]
    return start


def _hunks(lines: list[str], at: int, classes: list[str], head: list[str]) -> int:
    """The end of the hunks from line ``at`` (``head`` and their classes appended when there is one), or ``at``."""
    count = len(lines)
    start = at
    found: list[str] = []
    while at < count:
        match = _HUNK_RE.match(lines[at])
        if match is None:
            break
        found.append(HUNK)
        at += 1
        old = int(match[2]) if match[2] is not None else 1
        new = int(match[4]) if match[4] is not None else 1
        end = _hunk_body(lines, at, old, new)
        if end >= 0:
            found.extend(map(_FIRST_CLASS.__getitem__, [line[:1] for line in lines[at:end]]))
            at, old, new = end, 0, 0
        else:
            at, old, new = _hunk_body_by_line(lines, at, old, new, found)
        if at < count and lines[at][:2] == "\\ ":
            found.append(META)
            at += 1
        if old > 0 or new > 0:
            break  # a hunk cut short: what follows is not this diff's
    if at > start:
        classes.extend(head)
        classes.extend(found)
    return at


def _hunk_body(lines: list[str], at: int, old: int, new: int) -> int:
    """The end of a hunk body from line ``at`` that holds exactly ``old`` old and ``new`` new
    lines, or -1 (``_hunk_body_by_line`` then finds where it is cut short). In C string
    operations: the lines' first characters, and a binary search on their counts."""
    limit = min(old + new + 2, len(lines) - at)  # at most two "\\ No newline" lines
    size = min(limit, 64)
    while True:  # in growing windows, up to the first line no hunk can hold: linear on any text
        firsts = "".join([line[:1] or " " for line in lines[at : at + size]])
        bad = _NOT_HUNK_RE.search(firsts)
        if bad is not None:
            firsts = firsts[: bad.start()]
            break
        if size >= limit:
            break
        size = min(limit, size * 4)

    def used(end: int) -> tuple[int, int]:
        context = firsts.count(" ", 0, end)
        return context + firsts.count("-", 0, end), context + firsts.count("+", 0, end)

    low, high = 0, len(firsts)
    while low < high:  # the fewest lines that reach both counts
        middle = (low + high) // 2
        used_old, used_new = used(middle)
        if used_old >= old and used_new >= new:
            high = middle
        else:
            low = middle + 1
    if used(low) != (old, new):
        return -1
    return at + low


def _hunk_body_by_line(lines: list[str], at: int, old: int, new: int, found: list[str]) -> tuple[int, int, int]:
    """(end, old lines left, new lines left) of a hunk body read line by line, its classes appended."""
    count = len(lines)
    while at < count and (old > 0 or new > 0):
        first = lines[at][:1]
        if first == " " or first == "":
            if old <= 0 or new <= 0:
                break
            old -= 1
            new -= 1
            found.append(CONTEXT)
        elif first == "-":
            if old <= 0:
                break
            old -= 1
            found.append(DEL)
        elif first == "+":
            if new <= 0:
                break
            new -= 1
            found.append(ADD)
        elif first == "\\":
            found.append(META)
        else:
            break
        at += 1
    return at, old, new


def _binary(lines: list[str], at: int, classes: list[str]) -> int:
    """The end of a git binary patch's blocks from line ``at`` (after "GIT binary patch"), or ``at``."""
    count = len(lines)
    start = at
    found: list[str] = []
    while at < count and _BINARY_HEAD_RE.match(lines[at]):
        found.append(META)
        at += 1
        while at < count and _BASE85_RE.match(lines[at]):
            found.append(BINARY)
            at += 1
        if at < count and lines[at] == "":
            found.append(CONTEXT)
            at += 1
    if at > start:
        classes.extend(found)
    return at


def _summaries(text: str) -> list[re.Match[str]]:
    """The diffstat summary lines (" 3 files changed, …") of a text."""
    return [
        found
        for found in _DIFFSTAT_SUMMARY_RE.finditer(text)
        if _DIFFSTAT_COUNT_RE.search(text, max(0, found.start() - 12), found.start())
    ]


def _diffstats(
    text: str, summaries: list[re.Match[str]], lines: list[str], taken: list[tuple[int, int, Piece]]
) -> list[tuple[int, int, Piece]]:
    """(first line, end line, piece) of every diffstat (ending at one of ``summaries``) outside the diffs found."""
    found: list[tuple[int, int, Piece]] = []
    for summary in summaries:
        index = text.count("\n", 0, summary.start())
        if any(start <= index < end for start, end, _piece in taken):
            continue
        start = index
        while start > 0 and _DIFFSTAT_LINE_RE.match(lines[start - 1]):
            start -= 1
        if start == index or (found and start < found[-1][1]):
            continue
        end = index + 1
        while end < len(lines) and _DIFFSTAT_AFTER_RE.match(lines[end]):
            end += 1
        if any(start < taken_end and taken_start < end for taken_start, taken_end, _piece in taken):
            continue
        spans = []
        for line in lines[start:end]:
            match = _DIFFSTAT_LINE_RE.match(line)
            spans.append(match.span(1) if match and match[1] else (0, 0))
        found.append((start, end, Piece("diffstat", "\n".join(lines[start:end]), (), tuple(spans))))
    return found
