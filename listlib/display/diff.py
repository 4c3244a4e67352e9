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
  removed line. A hunk cut short (a damaged patch: its counts are not met)
  ends the diff, before the last ``-- `` line it would hold.
- *A binary patch* (``GIT binary patch``) is ``literal N`` / ``delta N``
  lines, each followed by base85 lines up to a blank line (forward, then
  reverse block).
- Files that follow each other directly (no line between them) make one diff.
- *A diffstat* is one or more `` path | N ++--`` (or ``| Bin …``) lines
  followed by `` N files changed, …`` and then any `` create mode`` /
  `` delete mode`` / `` rename`` / `` mode change`` lines.

``split`` returns the pieces of a text in order; joined by ``"\\n"`` they give
the text back unchanged. Speed: the text is never cut into lines. All the hunks
of a file are checked at once: the lines that hunks can hold, up to the next
file's ``---``/``+++`` pair, must hold as many old and new lines as the ``@@``
lines announce in total (line starts ``"\\n "``, ``"\\n-"``, ``"\\n+"`` counted in
C); a few lines at the end (the ``-- `` line) are given back to reach it. Only
when that fails are the hunks counted one by one, and then line by line. The
result is the same as counting every hunk line by line (checked on linux-raid,
19,526 messages), at the cost of a few string scans per file. A file's header lines are
matched by one regex; the next diff is looked for from the end of the last one (the
file headers inside it are not visited again); ``hint`` is the quick test of a whole
body, made once for all its blocks.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["ADD", "BINARY", "BODY", "DEL", "FILE", "HUNK", "META", "Hint", "Piece", "hint", "split"]

FILE = "diff-file"
"""A file's header lines: ``diff --git``, git's extended headers, ``--- a/…``, ``+++ b/…``."""
META = "diff-meta"
"""A binary block's ``literal N`` / ``delta N`` line."""
HUNK = "diff-hunk"
"""An ``@@ … @@`` line."""
BODY = "body"
"""A file's hunks: ``@@`` lines, context, ``+``, ``-`` and ``\\`` lines (the renderer tells
them apart by their first character, which is safe inside hunks)."""
ADD = "diff-add"
DEL = "diff-del"
BINARY = "diff-bin"
"""The base85 lines of a binary patch block."""


class Piece(NamedTuple):
    """A run of whole lines of one kind: "text", "diff" or "diffstat". ``parts`` are
    (class, start, end) offsets in ``text`` (less ``offset``), in order and not overlapping: for a diff,
    each file's header (``FILE``) and hunks (``BODY``) or binary blocks (``META``,
    ``BINARY``); for a diffstat, the ``+``/``-`` histograms (``ADD``, ``DEL``). The text
    between parts has no class."""

    kind: str
    text: str
    parts: tuple[tuple[str, int, int], ...] | list[tuple[str, int, int]] = ()
    offset: int = 0
    """What to subtract from the offsets in ``parts`` (they count from the start of the
    text ``split`` was given)."""


_HUNK_RE = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_GIT_HEADER_RE = re.compile(
    r"(?:index [0-9a-f]+\.\.[0-9a-f]+|(?:old|new|deleted file|new file) mode [0-7]+"
    r"|copy (?:from|to) |rename (?:from|to) |(?:dis)?similarity index \d+%)"
)
_FILE_HEAD_RE = re.compile(
    rf"(?:(diff -[^\n]*\n)((?:(?:{_GIT_HEADER_RE.pattern})[^\n]*\n)*))?(--- [^\n]*\n\+\+\+ [^\n]*\n(?=@@ -))?"
)
"""A file's header at once: a "diff -" line (1) and git's extended header lines after it
(2, empty when none), then "--- " and "+++ " lines before a hunk's "@@ -" line (3); each
part optional."""
_HUNKS_END_RE = re.compile(r"\n(?:[^ +\-\\@]|\+\+\+ )")
"""The first line no hunk can hold, or a "+++ " line (the next file's)."""
_HUNK_TAIL_RE = re.compile(r"@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
"""A hunk's line after its first "@": its old and new line counts."""
_RUN_END_RE = re.compile(r"\n[^ +\-\\]")
"""The end of the lines that a hunk body can hold (an empty line ends them too)."""
_BINARY_HEAD_RE = re.compile(r"(?:literal|delta) \d+\Z")
_BASE85_RE = re.compile(r"[A-Za-z][0-9A-Za-z!#$%&()*+;<=>?@^_`{|}~-]+\Z")
# Found from its literal part (fast), then checked back to the start of its line.
_DIFFSTAT_SUMMARY_RE = re.compile(r"files? changed(?:, \d+ insertions?\(\+\))?(?:, \d+ deletions?\(-\))?[ \t]*$", re.M)
_DIFFSTAT_COUNT_RE = re.compile(r"(?:\A|\n) \d+ \Z")
_DIFFSTAT_LINE_RE = re.compile(r" \S.*[ \t]\|[ \t]+(?:\d+(?: (\+*)(-*))?|Bin(?: \d+ -> \d+ bytes)?)[ \t]*\Z")
"""A diffstat line; its "|" is the line's last one (nothing after it can be a "|"), so
the greedy ``.*`` backs off from the line's end over its short tail only."""
_DIFFSTAT_AFTER_RE = re.compile(r" (?:(?:create|delete) mode [0-7]+ |rename |copy |mode change [0-7]+ => )")

Part = tuple[str, int, int]


class Hint(NamedTuple):
    """What the quick test (``hint``) found in a text: where it is False, ``split`` would
    find nothing of that kind."""

    diffs: bool
    """The text has a line starting with ``@@ -`` or holds ``diff --git ``."""
    diffstats: bool
    """It holds `` changed`` (" 3 files changed")."""


def hint(text: str) -> Hint:
    """The quick test (a few ``in`` scans, in C): most mail holds neither."""
    return Hint("\n@@ -" in text or "diff --git " in text, " changed" in text)


def split(text: str, within: Hint | None = None) -> list[Piece]:
    """The text cut into text, diff and diffstat pieces (see the module docstring).
    ``within``: the ``hint`` of a text that holds this one (a body split into quotes and
    text), which then is not tested again."""
    diffs, diffstats = within if within is not None else hint(text)
    summaries = _summaries(text) if diffstats else []
    if not diffs and not summaries:
        return [Piece("text", text)]
    work = text + "\n"  # every line ends with "\n"; a line starts at an offset <= len(text)
    found: list[tuple[int, int, str, list[Part]]] = []  # (start, end of the last line, kind, parts)
    if diffs:
        # A diff starts at a line that starts with "diff " or "--- ": the next of each is
        # looked for only from the end of the last diff found (not inside it).
        at = 0
        next_diff = _line_starting(text, "diff ", 0)
        next_minus = _line_starting(text, "--- ", 0)
        while next_diff >= 0 or next_minus >= 0:
            start = next_minus if next_diff < 0 or 0 <= next_minus < next_diff else next_diff
            parts: list[Part] = []
            end = _diff(work, start, parts)
            if end >= 0:
                found.append((start, end, "diff", parts))
                at = end + 1
            else:
                at = start + 1
            if 0 <= next_diff < at:
                next_diff = _line_starting(text, "diff ", at)
            if 0 <= next_minus < at:
                next_minus = _line_starting(text, "--- ", at)
    if summaries:
        found.extend(_diffstats(work, summaries, found))
        found.sort(key=lambda item: item[0])
    if not found:
        return [Piece("text", text)]
    pieces: list[Piece] = []
    at = 0  # the start of the first line not yet in a piece
    for start, end, kind, parts in found:
        if start > at:
            pieces.append(Piece("text", text[at : start - 1]))
        pieces.append(Piece(kind, text[start:end], parts, start))
        at = end + 1
    if at <= len(text):
        pieces.append(Piece("text", text[at:]))
    return pieces


def _line_starting(text: str, prefix: str, at: int) -> int:
    """The offset of the first line at or after offset ``at`` (a line's start) that starts
    with ``prefix``, or -1."""
    if at == 0 and text.startswith(prefix):
        return 0
    found = text.find("\n" + prefix, max(0, at - 1))
    return found + 1 if found >= 0 else -1


def _diff(work: str, at: int, parts: list[Part]) -> int:
    """The end of the last line of the diff of one or more files from offset ``at`` (their
    parts appended), or -1 when there is none."""
    last = -1
    limit = len(work) - 1
    while at <= limit:
        end = _file(work, at, parts)
        if end < 0:
            break
        last = end
        at = end + 1
    return last


def _file(work: str, at: int, parts: list[Part]) -> int:
    """The end of one file's diff from offset ``at`` (its parts appended), or -1: a ``FILE``
    part for its header lines, then a ``BODY`` part for its hunks, or binary blocks."""
    # Never None (each of its parts is optional); its spans read at once (each call counts).
    _, (line, _), (headers, after), (pair, second) = _FILE_HEAD_RE.match(work, at).regs
    git = line >= 0 and work[at + 5 : at + 11] == "--git "
    if git and pair < 0 and after < len(work):
        end = work.find("\n", after)
        text = work[after:end]
        if text.startswith("Binary files ") and text.endswith(" differ"):
            parts.append((FILE, at, end))
            return end
        if text == "GIT binary patch":
            blocks: list[Part] = []
            stop = _binary(work, end + 1, blocks)
            if stop >= 0:
                parts.append((FILE, at, end))
                parts.extend(blocks)
                return stop
    if pair >= 0:  # "--- " and "+++ " lines, then a hunk's "@@ -" line
        stop = _hunks(work, second)
        if stop >= 0:
            parts.append((FILE, at, second - 1))
            parts.append((BODY, second, stop))
            return stop
    if git and after > headers:
        parts.append((FILE, at, after - 1))
        return after - 1  # a mode change, a pure rename or copy, an empty new file
    return -1


def _hunks(work: str, at: int) -> int:
    """The end of the hunks from offset ``at`` (a hunk's "@@ -" line), or -1 when there is
    none. At once for all the hunks of a file when the lines they announce are all there
    (``_hunks_one_by_one`` otherwise)."""
    # Up to the first line no hunk can hold, or the next file's "---" line: a "--- " line
    # followed by "+++ " is a new file's far more often than two hunk lines.
    found = _HUNKS_END_RE.search(work, at - 1)
    if found is None:
        run = len(work)
    else:
        run = found.start() + 1  # the start of the first line left out
        if work[run] == "+":  # a "+++ " line: its "--- " line is left out too
            run = work.rfind("\n", at - 1, run - 1) + 1
    old = new = 0
    # Every line that starts with "@" must be a hunk's: cut at each, counts read after it.
    for head in work[at - 1 : run].split("\n@")[1:]:
        counts = _HUNK_TAIL_RE.match(head)
        if counts is None:
            return _hunks_one_by_one(work, at)  # a line starting with "@" that is not a hunk's
        old_lines, new_lines = counts.groups()
        old += int(old_lines) if old_lines else 1
        new += int(new_lines) if new_lines else 1
    count = work.count
    context = count("\n ", at - 1, run)
    got_old = context + count("\n-", at - 1, run)
    got_new = context + count("\n+", at - 1, run)
    stop = run
    for _ in range(8):  # the last hunk of a patch runs on into its "-- " line: give lines back
        if got_old < old or got_new < new:
            break
        start = work.rfind("\n", at - 1, stop - 1) + 1  # of the last line
        mark = work[start]
        if got_old == old and got_new == new and mark != "\\":
            if work[stop : stop + 2] == "\\ ":  # the last line's "\\ No newline" marker
                return work.find("\n", stop)
            return stop - 1
        if mark == "@" or start <= at:
            break
        if mark != "+":
            got_old -= mark != "\\"
        if mark != "-":
            got_new -= mark != "\\"
        stop = start
    return _hunks_one_by_one(work, at)


def _hunks_one_by_one(work: str, at: int) -> int:
    """``_hunks`` for a damaged patch: each hunk ends where its counts say, the first hunk
    cut short ends the diff."""
    limit = len(work) - 1
    count = work.count
    last = -1
    while at <= limit:
        match = _HUNK_RE.match(work, at)
        if match is None:
            break
        last = work.find("\n", at)
        at = last + 1
        old = int(match[2]) if match[2] is not None else 1
        new = int(match[4]) if match[4] is not None else 1
        found = _RUN_END_RE.search(work, last)
        run = found.start() + 1 if found else len(work)  # the start of the first line that does not fit
        # Lines that start in [at, run) with " ", "-", "+" ("\n" + it in [at - 1, run)).
        context = count("\n ", last, run)
        got_old = context + count("\n-", last, run)
        got_new = context + count("\n+", last, run)
        if got_old == old and got_new == new and run > at and work[work.rfind("\n", last, run - 1) + 1] != "\\":
            stop, old, new = run - 1, 0, 0  # the common case: the next line is a hunk or a file header
        else:
            stop, old, new = _hunk_end(work, at, run, old, new, got_old, got_new)
        if stop >= at:
            last, at = stop, stop + 1
        if at <= limit and work.startswith("\\ ", at):
            last = work.find("\n", at)
            at = last + 1
        if old > 0 or new > 0:
            break  # a hunk cut short: what follows is not this diff's
    return last


def _hunk_end(work: str, at: int, run: int, old: int, new: int, got_old: int, got_new: int) -> tuple[int, int, int]:
    """(end of its last line or ``at - 1``, old lines left, new lines left) of a hunk body from
    offset ``at`` that should hold ``old`` and ``new`` lines, when the lines up to ``run``
    hold ``got_old`` and ``got_new``: the last hunk of a patch runs on into the "-- "
    signature line (or a reply's "-- " lines), so a few lines are given back from the end;
    else the lines are counted one by one."""
    stop = run
    for _ in range(8):
        if got_old < old or got_new < new:
            break
        start = work.rfind("\n", at - 1, stop - 1) + 1  # of the last line
        if (got_old, got_new) == (old, new):
            if start < at or work[start] == "\\":
                break  # a trailing "\\ No newline" line: the line by line count decides
            return stop - 1, 0, 0
        if start < at:
            break
        mark = work[start]
        if mark != "+":
            got_old -= mark != "\\"
        if mark != "-":
            got_new -= mark != "\\"
        stop = start
    return _hunk_body_by_line(work, at, old, new)


def _hunk_body_by_line(work: str, at: int, old: int, new: int) -> tuple[int, int, int]:
    """``_hunk_end`` line by line: where a damaged hunk is cut short (slow, rare)."""
    limit = len(work) - 1
    last = at - 1
    separator = -1  # the last "-- " line taken
    while at <= limit and (old > 0 or new > 0):
        first = work[at]
        if first == "-" and work.startswith("-- \n", at):
            separator = at
        if first == " " or first == "\n":
            if old <= 0 or new <= 0:
                break
            old -= 1
            new -= 1
        elif first == "-":
            if old <= 0:
                break
            old -= 1
        elif first == "+":
            if new <= 0:
                break
            new -= 1
        elif first != "\\":
            break
        last = work.find("\n", at)
        at = last + 1
    if (old > 0 or new > 0) and separator >= 0:
        return separator - 1, old, new  # cut short: the "-- " line is more likely a signature's
    return last, old, new


def _binary(work: str, at: int, parts: list[Part]) -> int:
    """The end of a git binary patch's blocks from offset ``at`` (after "GIT binary patch"), or -1."""
    limit = len(work) - 1
    found: list[Part] = []
    last = -1
    while at <= limit:
        end = work.find("\n", at)
        if not _BINARY_HEAD_RE.match(work, at, end):
            break
        found.append((META, at, end))
        last, at = end, end + 1
        data = at
        while at <= limit:
            end = work.find("\n", at)
            if not _BASE85_RE.match(work, at, end):
                break
            last, at = end, end + 1
        if at > data:
            found.append((BINARY, data, last))
        if at <= limit and work[at] == "\n":
            last, at = at, at + 1
    if last < 0:
        return -1
    parts.extend(found)
    return last


def _summaries(text: str) -> list[re.Match[str]]:
    """The diffstat summary lines (" 3 files changed, …") of a text: each " changed" found
    with ``str.find`` (a regex scan for "file" is slower in the common case of none), the
    summary matched where its "file" starts."""
    found = []
    at = text.find(" changed")
    while at >= 0:
        start = at - 5 if at >= 5 and text.startswith("files", at - 5) else at - 4
        summary = _DIFFSTAT_SUMMARY_RE.match(text, start) if start >= 0 else None
        if summary and _DIFFSTAT_COUNT_RE.search(text, max(0, start - 12), start):
            found.append(summary)
        at = text.find(" changed", at + 8)
    return found


def _diffstats(
    work: str, summaries: list[re.Match[str]], taken: list[tuple[int, int, str, list[Part]]]
) -> list[tuple[int, int, str, list[Part]]]:
    """(start, end, "diffstat", parts) of every diffstat (ending at one of ``summaries``)
    that is not inside a diff."""
    found: list[tuple[int, int, str, list[Part]]] = []
    for summary in summaries:
        start = work.rfind("\n", 0, summary.start()) + 1
        end = summary.end()
        parts: list[Part] = []
        files = 0
        while start > 0:
            before = work.rfind("\n", 0, start - 1) + 1
            line = _DIFFSTAT_LINE_RE.match(work, before, start - 1)
            if line is None:
                break
            _, (add, add_end), (delete, delete_end) = line.regs
            if add_end > add:
                parts.append((ADD, add, add_end))
            if delete_end > delete:
                parts.append((DEL, delete, delete_end))
            files += 1
            start = before
        if not files:
            continue
        while end + 1 < len(work) and _DIFFSTAT_AFTER_RE.match(work, end + 1):
            end = work.find("\n", end + 1)
        if any(start <= stop and begin <= end for begin, stop, _kind, _parts in [*taken, *found]):
            continue
        parts.sort(key=lambda part: part[1])
        found.append((start, end, "diffstat", parts))
    return found
