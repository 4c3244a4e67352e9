"""Plain-text bodies -> safe HTML: flowed text, folded quotes and signatures, links, hidden addresses.

Everything that comes from the message is escaped here; the only markup is
the module's own (class names in ``display/__init__``). Pure: no I/O, never
raises on odd text.

Rules (decided here, documented for the theme and for readers of the code):

- *Quotes*: a run of lines starting with ``>`` (blank lines between two such
  lines join the runs) is folded in ``<details class="quote">`` when at least
  ``FOLD_QUOTE_LINES`` (4) of its lines have text (a bare ``>`` does not
  count); shorter quotes stay in the text (in ``<span class="quote">``), since a
  line or three of context is what interleaved replies are made of. The attribution just above a folded quote
  (a line ending in ``:`` such as "On Mon, Ann wrote:", possibly preceded by
  one or two lines of the same paragraph starting with "On") moves into the
  ``<summary>``. Outlook's "-----Original Message-----" starts a quote that
  runs to the end of the message. On a thread page a quote that merely repeats
  the parent message (``parent``: ``quote_keys`` of its text; at least
  ``REPEAT_SHARE`` of the quote's lines with text are lines of the parent) folds
  from ``FOLD_REPEAT_LINES`` (2) lines on, its first line kept in the summary as
  context for the answer below it: the parent is on the same page, a quote of
  anything else is worth more of the reader's eye.
- *Signatures*: the lines after a ``-- `` line (or ``--``, which many clients
  send after stripping the space) up to the next quote, when there are at most
  ``SIGNATURE_LINES`` (20) of them, fold into ``<details class="signature">``.
  A Mailman footer (a line of underscores, then "... mailing list") folds
  into ``<details class="footer">``.
- *Diffs*: unified diffs and diffstats in the text outside quotes
  (``display.diff`` has the rules) show in ``<div class="diff">``, each part
  in a span of its class; no links in them, addresses obfuscated as anywhere.
  Signatures are looked for after the last diff only.
- *Links*: ``http``, ``https``, ``ftp`` and ``mailto`` URLs; trailing
  punctuation and unbalanced closing brackets are left out of the link.
- *Addresses*: with obfuscation on, ``neilb@suse.de`` shows as
  ``ne…@suse.de``: at most three and at most half of the local part's
  characters, an ellipsis, and the domain. Readers still see who and where;
  harvesters get nothing usable. Addresses inside URLs are left alone (they are
  mostly Message-IDs); ``mailto:`` links lose their link.

Length: the rules for quotes, signatures, links and wide blocks interact (a line is
classified once, by all of them), so they are one module with their rules above.
"""

from __future__ import annotations

import functools
import re
from html import escape
from itertools import islice

from ..controls import CONTROL_TABLE
from ..translation import Texts, english
from . import diff

__all__ = [
    "FOLD_QUOTE_LINES",
    "FOLD_REPEAT_LINES",
    "REPEAT_SHARE",
    "SIGNATURE_LINES",
    "clean_text",
    "markup_text",
    "obfuscate_address",
    "obfuscate_addresses",
    "plain_text",
    "quote_keys",
    "render_plain",
    "unflow",
]

FOLD_QUOTE_LINES = 4
FOLD_REPEAT_LINES = 2
"""A quote that repeats the parent message folds from this many lines with text on."""
REPEAT_SHARE = 0.8
"""A quote repeats the parent when this share of its lines with text are the parent's lines."""
SIGNATURE_LINES = 20
FOOTER_LINES = 15
REL = "nofollow noopener noreferrer"

# C0 controls (except tab and newline) become their visible Unicode pictures, DEL
# too; C1 controls, U+FFFE, U+FFFF and lone surrogates become U+FFFD (``controls``).
_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
_PRINTABLE_ASCII = bytes(range(0x20, 0x7F)) + b"\t\n"
_CONTROL_TABLE = {c: shown for c, shown in CONTROL_TABLE.items() if c not in (0x09, 0x0A)}

# Links are found from their fixed part ("://", "ailto:", "@"), which the regex engine
# finds fast, and checked around it; one regex for all of them is 5x slower.
_URL_CHARS = r"[!#-;=?-~]"  # printable ASCII except space, '"', '<' and '>'
_DOMAIN = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+"
# Three searches, each starting with a literal: an alternation would make the regex
# engine try every position instead of scanning for the literal.
_URL_ANCHOR_RE = re.compile(rf"://{_URL_CHARS}+")
_MAILTO_ANCHOR_RE = re.compile(rf"ailto:{_URL_CHARS}+")
_LOCAL_REVERSED_RE = re.compile(r"[\w.+%-]+")
_SCHEME_RE = re.compile(r"(?:https|http|ftp)\Z", re.I)
_WORD_CHAR_RE = re.compile(r"\w")
_AT_RE = re.compile(rf"@{_DOMAIN}")
_TRAILING = ".,;:!?'\"*"
_CLOSERS = {")": "(", "]": "[", "}": "{"}

_FOOTER_RULE_RE = re.compile(r"_{10,}\s*")
_LEADING_BLANK_RE = re.compile(r"\A(?:[ \t]*\n)+")


def clean_text(text: str) -> str:
    """Line ends as ``\\n``; control characters made visible (or replaced) so nothing is invisible or invalid."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text.isascii():  # the common case, checked in C at memory speed
        if not text.encode("ascii").translate(None, _PRINTABLE_ASCII):
            return text
    elif not _CONTROL_RE.search(text):
        return text
    return text.translate(_CONTROL_TABLE)


def unflow(text: str, delsp: bool) -> str:
    """Undo RFC 3676 ``format=flowed``: join soft-broken lines of the same quote depth."""
    out: list[str] = []
    pending: str | None = None
    pending_depth = 0
    for line in text.split("\n"):
        if pending is None and line[-1:] != " " and line[:1] not in (">", " "):
            out.append(line)  # the common case: a hard-broken unquoted line
            continue
        stripped = line.lstrip(">")
        depth = len(line) - len(stripped)
        if stripped[:1] == " ":  # space-stuffing (RFC 3676 section 4.4)
            stripped = stripped[1:]
        flowed = stripped[-1:] == " " and stripped != "-- "
        if flowed and delsp:
            stripped = stripped[:-1]
        if pending is not None and depth == pending_depth:
            pending += stripped
        else:
            if pending is not None:
                out.append(_quote_prefix(pending_depth, pending))
            pending, pending_depth = stripped, depth
        if not flowed:
            out.append(_quote_prefix(depth, pending))
            pending = None
    if pending is not None:
        out.append(_quote_prefix(pending_depth, pending))
    return "\n".join(out)


def _quote_prefix(depth: int, text: str) -> str:
    if not depth:
        return text
    return ">" * depth + (" " + text if text else "")


def obfuscate_address(address: str) -> str:
    """``neilb@suse.de`` -> ``ne…@suse.de`` (see the module docstring)."""
    local, _, domain = address.rpartition("@")
    keep = min(3, max(1, len(local) // 2))
    return f"{local[:keep]}\u2026@{domain}"


def _local_start(text: str, at: int) -> int:
    """Where the local part of an address whose "@" is at ``at`` starts (``at`` when there is none)."""
    # The 64-character window reversed, matched forwards: searching backwards with a
    # "\Z"-anchored regex would retry from every position in the window.
    window = text[max(0, at - 64) : at][::-1]
    found = _LOCAL_REVERSED_RE.match(window)
    start = at - found.end() if found else at
    while start < at and text[start] == ".":
        start += 1
    return start


def _addresses(text: str) -> list[tuple[int, int]]:
    """(start, end) of every address in a text."""
    spans = []
    for match in _AT_RE.finditer(text):
        at = match.start()
        start = _local_start(text, at)
        if start < at:
            spans.append((start, match.end()))
    return spans


def obfuscate_addresses(text: str) -> str:
    """Every address in a plain text obfuscated."""
    if "@" not in text:
        return text
    out = []
    pos = 0
    for start, end in _addresses(text):
        out.append(text[pos:start])
        out.append(obfuscate_address(text[start:end]))
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _trim_url(url: str) -> str:
    """Without trailing punctuation and closing brackets that have no opening one in the URL."""
    end = len(url)
    balance = {closer: url.count(closer) - url.count(opener) for closer, opener in _CLOSERS.items()}
    while end:
        last = url[end - 1]
        if last in _TRAILING:
            end -= 1
        elif last in _CLOSERS and balance[last] > 0:
            balance[last] -= 1
            end -= 1
        else:
            break
    return url[:end]


def _link(href: str, text: str) -> str:
    return f'<a href="{escape(href)}" rel="{REL}">{escape(text, quote=False)}</a>'


def _links(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of every URL, mailto: URL and address, in order, not overlapping."""
    found = []
    if "://" in text:
        for match in _URL_ANCHOR_RE.finditer(text):
            anchor = match.start()
            scheme = _SCHEME_RE.search(text, max(0, anchor - 5), anchor)
            start = scheme.start() if scheme else -1
            if start >= 0 and not (start and _WORD_CHAR_RE.match(text, start - 1)):  # not "xhttp://"
                found.append((start, start + len(_trim_url(text[start : match.end()])), "url"))
    if "@" in text:
        if "ailto:" in text:
            for match in _MAILTO_ANCHOR_RE.finditer(text):
                start = match.start() - 1
                if text[start : start + 7].lower() == "mailto:" and not (
                    start and _WORD_CHAR_RE.match(text, start - 1)
                ):
                    found.append((start, start + len(_trim_url(text[start : match.end()])), "mailto"))
        for match in _AT_RE.finditer(text):
            at = match.start()
            start = _local_start(text, at)
            if start < at:
                found.append((start, match.end(), "email"))
    # An address inside a URL ("https://host/r/id@host") belongs to the URL.
    if len(found) < 2:
        return found
    result: list[tuple[int, int, str]] = []
    for span in sorted(found):
        if result and span[0] < result[-1][1]:
            continue
        result.append(span)
    return result


def markup_text(text: str, obfuscate: bool) -> str:
    """Escape a plain text for HTML, link its URLs and link or obfuscate its addresses."""
    return _markup(text, obfuscate)[0]


def _markup(text: str, obfuscate: bool) -> tuple[str, str]:
    """(``markup_text``, ``_plain``) in one pass over the links."""
    if "://" not in text and "@" not in text:
        return escape(text, quote=False), text
    html: list[str] = []
    plain: list[str] = []
    pos = 0
    for start, end, kind in _links(text):
        found = text[start:end]
        shown = found
        if kind == "email":
            if obfuscate:
                shown = obfuscate_address(found)
                link = escape(shown, quote=False)
            else:
                link = _link("mailto:" + found, found)
        elif kind == "mailto":
            if obfuscate or "@" not in found:
                shown = obfuscate_addresses(found) if obfuscate else found
                link = escape(shown, quote=False)
            else:
                link = _link(found, found)
        elif end - start <= len("https://") or found.endswith("://"):
            link = escape(found, quote=False)
        else:
            link = _link(found, found)
        html.append(escape(text[pos:start], quote=False))
        html.append(link)
        if obfuscate:
            plain.append(text[pos:start])
            plain.append(shown)
        pos = end
    html.append(escape(text[pos:], quote=False))
    if not obfuscate:
        return "".join(html), text
    plain.append(text[pos:])
    return "".join(html), "".join(plain)


def _plain(text: str, obfuscate: bool) -> str:
    """The text with its addresses obfuscated when ``obfuscate`` (not those inside URLs)."""
    if not obfuscate or "@" not in text:
        return text
    plain: list[str] = []
    pos = 0
    for start, end, kind in _links(text):
        if kind == "url":
            continue
        found = text[start:end]
        plain.append(text[pos:start])
        plain.append(obfuscate_address(found) if kind == "email" else obfuscate_addresses(found))
        pos = end
    plain.append(text[pos:])
    return "".join(plain)


# -- Block structure -------------------------------------------------------------------------------


class _Block:
    """A piece of the body of one kind: "text", "quote", "signature", "footer", or a
    "diff" or "diffstat" (``piece`` holds its lines' classes, see ``display.diff``)."""

    __slots__ = ("attribution", "kind", "original", "piece", "text")

    def __init__(self, kind: str, text: str, attribution: str = "", piece: diff.Piece | None = None) -> None:
        self.kind = kind
        self.text = text
        self.attribution = attribution
        self.piece = piece
        # A text block's text before a quote that folds only because it repeats the parent
        # took its attribution: its new text (``plain_text``, what search indexes) stays the
        # message's own, whatever the page shows around it.
        self.original = ""


# Runs of lines starting with ">", blank lines between them included; searched in
# "\n" + text so the pattern starts with a literal.
_QUOTE_RUN_RE = re.compile(r"\n>[^\n]*(?:\n(?:[ \t]*\n)*>[^\n]*)*")
_QUOTE_CONTENT_RE = re.compile(r"\n>[> \t]*[^>\s]")
_ORIGINAL_LINE_RE = re.compile(
    r"(?m)^(?:-{3,}[ \t]*(?:Original Message|Ursprüngliche Nachricht|Message d'origine)[ \t]*-{3,}"
    r"|_{20,}(?=[ \t]*\n(?:From|Von|De) ?:))[ \t]*$",
    re.I,
)
_ATTRIBUTION_STARTS = ("On ", "Am ", "Le ", "El ", "Il ", "Op ", "Em ", "Quoting ")


def _runs(text: str) -> list[_Block]:
    """Text and quote blocks; blank lines between two quoted lines belong to the quote."""
    if not text.startswith(">") and "\n>" not in text:
        return [_Block("text", text)]
    blocks = []
    pos = 0
    for match in _QUOTE_RUN_RE.finditer("\n" + text):
        start, end = match.start(), match.end() - 1  # in text
        if start > pos:
            blocks.append(_Block("text", text[pos : max(pos, start - 1)]))
        blocks.append(_Block("quote", text[start:end]))
        pos = end + 1
    if pos <= len(text):
        blocks.append(_Block("text", text[pos:]))
    return [block for block in blocks if block.kind == "quote" or block.text]


def _split_original(blocks: list[_Block]) -> list[_Block]:
    """Outlook top-posting: from "-----Original Message-----" on, everything is a quote."""
    for index, block in enumerate(blocks):
        match = _ORIGINAL_LINE_RE.search(block.text) if block.kind == "text" else None
        if match:
            rest = [block.text[match.end() + 1 :], *(later.text for later in blocks[index + 1 :])]
            head = [_Block("text", block.text[: match.start()])]
            return [*blocks[:index], *head, _Block("quote", "\n".join(rest), match.group(0).strip())]
    return blocks


def _tail_start(text: str, lines: int) -> int:
    """Where the last ``lines`` lines of a text start (0 when it has fewer)."""
    at = len(text)
    for _ in range(lines):
        at = text.rfind("\n", 0, at)
        if at < 0:
            return 0
    return at


def _split_signature(block: _Block, footer: bool) -> list[_Block]:
    # Only the block's last lines can hold a signature or a footer: searching just
    # there keeps a block of a million "-- " lines linear.
    text = block.text
    padded = "\n" + text + "\n"
    for separator, limit in (("\n-- \n", SIGNATURE_LINES), ("\n--\n", SIGNATURE_LINES // 2)):
        at = padded.find(separator, _tail_start(padded, limit + 2))
        while at >= 0:
            rest = padded[at + len(separator) : -1]
            if rest.strip() and rest.count("\n") < limit:
                return [_Block("text", text[: max(0, at - 1)]), _Block("signature", rest)]
            at = padded.find(separator, at + 1)
    if footer:
        at = padded.find("\n__________", _tail_start(padded, FOOTER_LINES + 1))
        while at >= 0:
            line_end = padded.find("\n", at + 1)
            next_end = padded.find("\n", line_end + 1)
            if (
                _FOOTER_RULE_RE.fullmatch(padded[at + 1 : line_end])
                and "mailing list" in padded[line_end:next_end].lower()
                and padded.count("\n", at + 1) <= FOOTER_LINES
            ):
                return [_Block("text", text[: max(0, at - 1)]), _Block("footer", padded[at + 1 : -1])]
            at = padded.find("\n__________", at + 1)
    return [block]


def _take_attribution(block: _Block) -> str:
    """Remove and return the attribution ("On ... wrote:") at the end of a block, if any."""
    body = block.text.rstrip()
    cut = body.rfind("\n") + 1
    last = body[cut:]
    if not last.endswith((":", "\uff1a")) or len(last) > 300:
        return ""
    if not last.lstrip().startswith(_ATTRIBUTION_STARTS):
        # "On Mon, 1 Jan 2024, Ann Example\n<ann@example.org> wrote:" broken over lines.
        earlier = cut
        for _ in range(2):
            if earlier == 0:
                break
            previous = body.rfind("\n", 0, earlier - 1) + 1
            line = body[previous : earlier - 1]
            if not line.strip():
                break
            earlier = previous
            if line.lstrip().startswith(_ATTRIBUTION_STARTS):
                cut = earlier
                break
    block.text = body[:cut]
    return " ".join(body[cut:].split())


def _folds(text: str, lines: int = FOLD_QUOTE_LINES) -> bool:
    """Whether a quote has at least ``lines`` lines with text (bare ">" lines do not count)."""
    if text.count("\n") + 1 < lines:
        return False
    found = islice(_QUOTE_CONTENT_RE.finditer("\n" + text), lines)
    return sum(1 for _ in found) == lines


_KEY_STRIP_RE = re.compile(r"^[>\s]+")


def _key(line: str) -> str:
    return " ".join(_KEY_STRIP_RE.sub("", line).split()).casefold()


_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
"""Every character ``str.isspace()`` (and so regex ``\\s``) takes for whitespace."""
_KEY_STRIP = ">" + _WHITESPACE
"""What ``_KEY_STRIP_RE`` takes off a line's start."""


def _keys(text: str) -> list[str]:
    """``_key`` of each line of ``text`` that has one, the text case folded at once (case
    folding is character by character and turns no character into or out of whitespace,
    nor into a newline or ``>``)."""
    return [key for line in text.casefold().split("\n") if (key := " ".join(line.lstrip(_KEY_STRIP).split()))]


def quote_keys(text: str) -> frozenset[str]:
    """What a reply's quote of ``text`` is compared with: each line with text, without its
    quote marks, whitespace collapsed, case folded (a reply re-wraps and re-quotes)."""
    return frozenset(_keys(text))


def _repeats(text: str, parent: frozenset[str]) -> bool:
    """Whether a quote's lines with text are (``REPEAT_SHARE`` of them) lines of the parent."""
    keys = _keys(text)
    return bool(keys) and sum(key in parent for key in keys) >= REPEAT_SHARE * len(keys)


def _structure(text: str, parent: frozenset[str] = frozenset()) -> list[_Block]:
    blocks = _runs(text)
    footer = "__________" in text
    if footer or "riginal Message" in text or "Nachricht" in text or "d'origine" in text:
        blocks = _split_original(blocks)
    signature = footer or "\n--" in text or text.startswith("--")
    hint = diff.hint(text)  # once for the whole text, not again for each of its blocks
    diffs = hint.diffs or hint.diffstats
    out: list[_Block] = []
    for block in blocks:
        if block.kind == "text":
            parts = [block]
            if diffs:
                pieces = diff.split(block.text, hint)
                if len(pieces) > 1 or pieces[0].kind != "text":
                    parts = [_Block(piece.kind, piece.text, piece=piece) for piece in pieces]
            if signature and parts[-1].kind == "text":
                parts[-1:] = _split_signature(parts[-1], footer)
            out.extend(parts)
            continue
        repeat = bool(parent) and _folds(block.text, FOLD_REPEAT_LINES) and _repeats(block.text, parent)
        folds = not repeat and not block.attribution and _folds(block.text)
        if repeat or block.attribution or folds:
            if not block.attribution and out and out[-1].kind in ("text", "signature"):
                before = out[-1].text
                block.attribution = _take_attribution(out[-1])
                if block.attribution and not (folds or _folds(block.text)):
                    out[-1].original = out[-1].original or before
            block.kind = "repeat-quote" if repeat else "folded-quote"
        out.append(block)
    return out


def _trim(text: str) -> str:
    """Without leading blank lines or trailing whitespace (the first line's indentation kept)."""
    return _LEADING_BLANK_RE.sub("", text).rstrip()


MEASURE = 82
"""Characters of a line of prose: a block with longer lines that are not prose (logs,
code, diffs, tables) keeps them whole in a box that scrolls sideways (``wide_pre``)."""


def wide_pre(texts: Texts) -> str:
    """The opening of a block with long lines (themes show a "wrap long lines" switch
    above a body that has one), labelled in the site's language."""
    return _wide_pre(texts.text("display.wide_text"))


@functools.lru_cache(maxsize=16)
def _wide_pre(label: str) -> str:
    return f'<pre class="text wide" tabindex="0" role="region" aria-label="{escape(label)}">'


_SENTENCE_BREAK_RE = re.compile(r"[.!?][\"')\]]?\s+\S")


def is_wide(text: str) -> bool:
    """Whether a block of text has a line longer than ``MEASURE`` that is not prose: a
    paragraph a mail client did not wrap (two sentences or more, or past three
    measures) wraps; a log line, a line of code or of a diff does not."""
    for line in text.split("\n"):
        if len(line) <= MEASURE or len(line) > 3 * MEASURE:
            continue
        if len(_SENTENCE_BREAK_RE.findall(line)) < 2:
            return True
    return False


def render_plain(
    text: str, obfuscate: bool, texts: Texts | None = None, *, parent: frozenset[str] = frozenset()
) -> tuple[str, str]:
    """(safe HTML, ``plain_text``) of a cleaned plain-text body. Text and short quotes
    show in one ``<pre>``; paragraphs with long lines that are not prose (``is_wide``)
    in a ``<pre>`` of their own (``wide_pre``). ``texts``: the site's words (English
    when None). ``parent``: the ``quote_keys`` of the message it answers, when known
    (quotes that repeat it fold sooner)."""
    texts = texts or english()
    wide = wide_pre(texts)
    html: list[str] = []
    new_text: list[str] = []
    pending: list[str] = []  # marked-up text and short quotes, shown in one <pre>
    run_wide = False  # whether the pending pieces are wide ones

    def flush() -> None:
        joined = _trim("\n".join(pending))
        if joined:
            html.append(f"{wide}{joined}</pre>" if run_wide else f'<pre class="text">{joined}</pre>')
        pending.clear()

    def show(marked: str, wide: bool) -> None:
        nonlocal run_wide
        if wide != run_wide:
            flush()
            run_wide = wide
        pending.append(marked)

    for block in _structure(text, parent):
        if block.kind == "text":
            if not is_wide(block.text):
                marked, plain = _markup(block.text, obfuscate)
                new_text.append(_plain(block.original, obfuscate) if block.original else plain)
                show(marked, False)
                continue
            # Paragraph by paragraph: each keeps its blank line ("\n" joins them again).
            plains = []
            for paragraph in _PARAGRAPH_RE.split(block.text):
                marked, plain = _markup(paragraph, obfuscate)
                plains.append(plain)
                show(marked, is_wide(paragraph))
            new_text.append(_plain(block.original, obfuscate) if block.original else "\n".join(plains))
        elif block.piece is not None:
            flush()
            marked, plain = _diff_html(block.piece, obfuscate, wide)
            html.append(marked)
            new_text.append(plain)
        elif block.kind == "quote":
            show(f'<span class="quote">{markup_text(block.text, obfuscate)}</span>', is_wide(block.text))
        else:
            flush()
            body = _trim(block.text)
            if body:
                html.append(_folded(block, body, obfuscate, texts))
    flush()
    return "".join(html), _new_text(new_text)


_PARAGRAPH_RE = re.compile(r"\n(?=[ \t]*\n)")


def plain_text(text: str, obfuscate: bool) -> str:
    """The new text of a cleaned plain-text body (quotes and signatures left out, addresses
    obfuscated when ``obfuscate``): ``render_plain``'s second half without its HTML."""
    shown = [_plain(block.text, obfuscate) for block in _structure(text) if block.kind in _NEW_TEXT_KINDS]
    return _new_text(shown)


_NEW_TEXT_KINDS = frozenset(("text", "diff", "diffstat"))


def _new_text(pieces: list[str]) -> str:
    return _BLANK_LINES_RE.sub("\n\n", "\n".join(pieces)).strip()


_BLANK_LINES_RE = re.compile(r"\n[ \t]*(?:\n[ \t]*)+\n")


def _diff_html(piece: diff.Piece, obfuscate: bool, wide: str) -> tuple[str, str]:
    """(safe HTML, plain text) of a diff or a diffstat: escaped (addresses obfuscated, no
    links), each part in a ``<span>`` of its class (``display.diff``), every line's first
    character (its ``+`` or ``-``) kept as it is."""
    text = piece.text
    if not (obfuscate and _AT_RE.search(text)):  # no address to hide (most diffs): its plain text is itself
        return _diff_html_as_is(piece, wide), text
    html: list[str] = []
    plains: list[str] = []
    at = 0
    offset = piece.offset
    for css, start, end in piece.parts:
        start -= offset
        end -= offset
        if start > at:
            gap = text[at:start]
            if gap != "\n":
                gap = _plain(gap, obfuscate)
                plains.append(gap)
                gap = escape(gap, quote=False)
            else:
                plains.append(gap)
            html.append(gap)
        plain = text[start:end]
        if obfuscate and _AT_RE.search(plain):  # "@@" lines are no addresses
            plain = _plain(plain, obfuscate)
        plains.append(plain)
        shown = escape(plain, quote=False)
        if css == diff.BODY:
            html.append(_hunks_html(shown))
        elif shown:
            html.append(f'<span class="{css}">{shown}</span>')
        at = end
    if at < len(text):
        plain = _plain(text[at:], obfuscate)
        plains.append(plain)
        html.append(escape(plain, quote=False))
    return _diff_div(piece, "".join(html), wide), "".join(plains)


def _diff_html_as_is(piece: diff.Piece, wide: str) -> str:
    """``_diff_html``'s HTML of a diff with no address in it: each part escaped as it is."""
    text = piece.text
    html: list[str] = []
    at = 0
    offset = piece.offset
    for css, start, end in piece.parts:
        start -= offset
        if start > at:
            gap = text[at:start]
            html.append(gap if gap == "\n" else escape(gap, quote=False))
        at = end - offset
        shown = escape(text[start:at], quote=False)
        if css == diff.BODY:
            html.append(_hunks_html(shown))
        elif shown:
            html.append(f'<span class="{css}">{shown}</span>')
    if at < len(text):
        html.append(escape(text[at:], quote=False))
    return _diff_div(piece, "".join(html), wide)


def _diff_div(piece: diff.Piece, body: str, wide: str) -> str:
    """The marked-up ``body`` of a diff or diffstat in its ``<div>`` and ``<pre>``."""
    pre = wide if _LONG_LINE_RE.search("\n" + piece.text) else '<pre class="text">'
    kind = "diff" if piece.kind == "diff" else "diff diffstat"
    body = body.rstrip("\n")
    return f'<div class="{kind}">{pre}{body}</pre></div>'


# In an escaped BODY behind a "\n": hunk lines, runs of added and of removed lines, and
# "\ No newline" lines (one regex that starts with a literal: the engine scans for it in C;
# possessive, as a run never gives a character back: less bookkeeping per line).
_HUNK_RUNS_RE = re.compile(r"\n(\+[^\n]*+(?:\n\+[^\n]*+)*+|-[^\n]*+(?:\n-[^\n]*+)*+|@@[^\n]*+|\\[^\n]*+)")
_RUN_OPEN = {
    "+": f'\n<span class="{diff.ADD}">',
    "-": f'\n<span class="{diff.DEL}">',
    "@": f'\n<span class="{diff.HUNK}">',
    "\\": f'\n<span class="{diff.META}">',
}


_LONG_LINE_RE = re.compile(f"\n[^\n]{{{MEASURE + 1}}}")
"""A line longer than ``MEASURE`` (searched in "\n" + text: a literal first, so it is fast)."""


def _hunks_html(escaped: str) -> str:
    """An escaped ``BODY`` marked up: each run of lines of one kind in a span of its class."""
    pieces = _HUNK_RUNS_RE.split("\n" + escaped)  # text, run, text, run … text
    out = [pieces[0]]
    for at in range(1, len(pieces), 2):
        run = pieces[at]
        out += (_RUN_OPEN[run[0]], run, "</span>", pieces[at + 1])
    return "".join(out)[1:]


def _folded(block: _Block, body: str, obfuscate: bool, texts: Texts) -> str:
    if block.kind == "signature":
        kind, summary = "signature", escape(texts.text("display.signature"), quote=False)
    elif block.kind == "footer":
        kind, summary = "footer", escape(texts.text("display.footer"), quote=False)
    elif block.kind == "repeat-quote":
        count = body.count("\n") + 1
        kind = "quote repeat"
        first = next(line for line in body.split("\n") if _key(line))
        first = " ".join(_KEY_STRIP_RE.sub("", first).split())
        if len(first) > 60:
            first = first[:60].rsplit(" ", 1)[0] + "…"
        shown = escape(obfuscate_addresses(first) if obfuscate else first, quote=False)
        lines = escape(texts.text("display.parent_lines", n=count), quote=False)
        summary = f'<span class="first from-mail">“{shown}”</span> <span class="lines">{lines}</span>'
    else:
        count = body.count("\n") + 1
        kind = "quote"
        lines = escape(texts.text("display.quoted_lines", n=count), quote=False)
        summary = f'<span class="lines">{lines}</span>'
    if block.attribution:
        said = obfuscate_addresses(block.attribution) if obfuscate else block.attribution
        summary = f'<span class="attribution">{escape(said, quote=False)}</span> {summary}'
    return (
        f'<details class="{kind}"><summary>{summary}</summary>'
        f'<pre class="text">{markup_text(body, obfuscate)}</pre></details>'
    )
