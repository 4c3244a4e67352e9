"""Message classes: what kind of mail a message is (a patch, a review, an announcement
...), by ordered rules, the first that matches winning; pure.

After the mailing-list-ingestion seed's classifier (``seeds/aveloxis-mailing-list-
ingestion.txt`` section 5): a rule is a conjunction of conditions on the subject, the
sender, a header field, the body, and a few built-in *signals* (what the subject's
``[PATCH vN M/K]`` prefix says, whether the body holds a diff, quotes one, or gives a
review trailer). A site's rules (``[[classes.rules]]`` in listlib.toml) come first,
then ``DEFAULT_RULES`` unless the site turns them off; a message no rule matches is a
*discussion*.

A class depends on the message's own bytes and the rules only (never on its thread),
so it can be cached by the message's content hash and the rules' digest
(``rules_digest``). Reads the header block and, only when a rule asks, the body; never
raises on bad mail.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import quopri
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .message import decode_header_value, parse_from, split_message
from .patchsubject import PatchSubject, parse_subject

__all__ = [
    "CLASSES",
    "CLASSIFIER_VERSION",
    "DEFAULT_CLASS",
    "DEFAULT_RULES",
    "SIGNALS",
    "MessageView",
    "Rule",
    "classify",
    "classify_message",
    "compile_pattern",
    "rules_digest",
]

CLASSIFIER_VERSION = 1
"""Bumped when a signal's meaning changes: cached classes are then worked out again."""

CLASSES = ("patch", "cover", "review", "vote", "announcement", "automated", "discussion")
"""Every class, as search (``is:patch``), the CLI and the pages spell it (a page's badge
names them in words: the theme's ``_class_badge.html``)."""
DEFAULT_CLASS = "discussion"
"""The class of a message no rule matches."""

SIGNALS = {
    "patch": "the subject has a [PATCH]/[RFC] prefix (not 0/K) and no Re:/Fwd:",
    "cover": "the subject is a cover letter's: [PATCH 0/K] with no Re:/Fwd:",
    "patch_reply": "the subject is a Re:/Fwd: of a [PATCH]/[RFC] subject",
    "reply": "the subject starts with Re:/Fwd: (or AW:, SV: ...), or the message has In-Reply-To or References",
    "diff": "the body holds a unified diff outside quotes, or a .patch/.diff attachment",
    "quoted_diff": "the body quotes a diff (> @@, > diff --git, or several > +/- code lines)",
    "trailer": "the body gives a review trailer outside quotes (Reviewed-by:, Acked-by:, Tested-by:, Nacked-by:)",
}
"""The built-in signals a rule can ask for (``!name`` asks for its absence)."""


def compile_pattern(text: str) -> re.Pattern[str]:
    """A rule's regular expression: searched (not anchored), case-insensitive, ``^``
    and ``$`` at every line. Raises ``re.error``."""
    return re.compile(text, re.I | re.M)


@dataclass(frozen=True)
class Rule:
    """One rule: every condition given must hold."""

    cls: str
    subject: re.Pattern[str] | None = None
    """Searched in the decoded subject."""
    sender: re.Pattern[str] | None = None
    """Searched in ``Name <address>`` of the From field."""
    header: str | None = None
    """A header field's name (lower-case): the message must have it."""
    value: re.Pattern[str] | None = None
    """With ``header``: searched in each of its decoded values; one must match."""
    body: re.Pattern[str] | None = None
    """Searched in the body's lines outside quotes."""
    signals: tuple[str, ...] = ()
    """Built-in signals (``SIGNALS``) that must hold; ``!name``: must not."""
    origin: str = "default"
    """Where the rule comes from, for messages: ``classes.rules[2]`` or ``default``."""

    def describe(self) -> tuple[object, ...]:
        """The rule as plain values (for ``rules_digest``)."""
        patterns = (self.subject, self.sender, self.value, self.body)
        return (self.cls, *(p.pattern if p else None for p in patterns), self.header, self.signals)


def _rule(
    cls: str,
    *,
    subject: str | None = None,
    sender: str | None = None,
    header: str | None = None,
    value: str | None = None,
    body: str | None = None,
    signals: tuple[str, ...] = (),
) -> Rule:
    def pattern(text: str | None) -> re.Pattern[str] | None:
        return compile_pattern(text) if text is not None else None

    return Rule(cls, pattern(subject), pattern(sender), header, pattern(value), pattern(body), signals)


_BOT_ADDRESSES = (
    r"lkp@intel\.com|syzbot|syzkaller|noreply|no-reply|do-not-reply|donotreply|bugzilla|"
    r"jira@|buildbot|jenkins|patchwork-bot|patchwork@|mailer-daemon|trac@|trac-|github-actions|"
    r"notifications@github\.com|cvs-commit|svn-commit|commits@|gitlab@|(?<![a-z0-9])bot@|rssfeeds?@"
)

DEFAULT_RULES: tuple[Rule, ...] = (
    # Automated mail first: a CI robot's report on a patch answers the patch, and must not
    # read as a human review.
    _rule("automated", header="auto-submitted", value=r"^\s*auto-(generated|replied|notified)"),
    _rule("automated", sender=rf"<[^>]*(?:{_BOT_ADDRESSES})[^>]*>$"),
    _rule("automated", sender=r"^(kernel test robot|build ?bot|jenkins|bugzilla|patchwork|syzbot|trac)\b"),
    _rule("automated", header="x-bugzilla-reason"),
    _rule("automated", header="x-trac-ticket-url"),
    _rule("automated", header="x-github-reason"),
    _rule("automated", header="x-gitlab-project"),
    _rule("automated", header="x-jenkins-job"),
    _rule("automated", subject=r"^\s*(?:\[[^\]]*\]\s*)*(?:\[?(?:cvs|svn|git) commit\b|cvs:\s)"),
    _rule("automated", subject=r"^\s*(?:out of (?:the )?office|auto(?:matic)?[- ]?reply)\b"),
    # Votes before patches: "[VOTE] Release 1.2" and its replies (the votes) are votes.
    _rule("vote", subject=r"\[(?:vote|result|results)\]|^\s*(?:re:\s*)*vote:"),
    _rule("cover", signals=("cover",)),
    _rule("patch", signals=("patch",)),
    _rule("patch", signals=("!reply",), subject=r"^\s*(?:\[[^\]]*\]\s*)*\[git pull"),
    # A reply to a patch or a cover letter is part of its review (the seed's "review
    # replies"): measured on the labelled sample, 94% of them review the change; so is
    # a reply anywhere that gives a review trailer.
    _rule("review", signals=("patch_reply",)),
    _rule("review", signals=("reply", "trailer")),
    # Mail that carries a diff (inline or as a .patch/.diff attachment) is a patch,
    # [PATCH] or not: a fix offered in a bug report's thread too.
    _rule("patch", signals=("diff",)),
    # Read from the body, so after the rules that settle mail of patch threads (most of a
    # patch list) by its header alone.
    _rule("automated", body=r"\A\s*this is an? automatic(?:ally generated)? (?:reply|response|message)"),
    _rule(
        "announcement",
        signals=("!reply",),
        subject=r"^\s*(?:\[[^\]]*\]\s*)*\[?(?:ann|announce|release)\]?\s*[:\]]"
        r"|\bannounc(?:e|es|ing|ement)\b|\d\S*\s+(?:(?:is|has been)\s+)?released\b"
        r"|\b(?:is out|now available)\s*[.!]*\s*$|\brelease notes\b",
    ),
)
"""The rules every site has after its own (``[classes] default_rules = false`` drops them)."""


def rules_digest(rules: Sequence[Rule]) -> str:
    """A digest of the rules and the classifier's version: a cached class stays right
    while it stays the same."""
    text = repr((CLASSIFIER_VERSION, [rule.describe() for rule in rules]))
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


# -- what the rules read of a message -----------------------------------------------------

_QUOTED_DIFF_RE = re.compile(r"^[ \t]*>[> \t]*(?:@@ -\d|diff --git |\+\+\+ [ab]/|--- a/)", re.M)
_QUOTED_CODE_RE = re.compile(r"^[ \t]*>[> \t]*[+-](?![+-]|\s*$)", re.M)
_DIFF_RE = re.compile(r"^(?:diff --git |diff -[a-zA-Z]+ |Index: \S)|^--- \S.*\n\+\+\+ \S.*\n@@ -\d", re.M)
_PATCH_FILE_RE = re.compile(
    rb"^[ \t]*(?:content-disposition|content-type):[^\n]*(?:\n[ \t][^\n]*)*name=\"?[^\"\n]*\.(?:patch|diff)\b",
    re.M | re.I,
)
_TRAILER_RE = re.compile(r"^[ \t]*(?:Reviewed|Acked|Tested|Nacked)-by:[ \t]*\S", re.M | re.I)
_QUOTE_LINE_RE = re.compile(r"^[ \t]*>.*\n?", re.M)
_CTE_RE = re.compile(r"^content-transfer-encoding:[ \t]*([\w-]+)", re.M | re.I)
_FIELD_NAME_RE = re.compile(rb"\n([\x21-\x39\x3b-\x7e]+)[ \t]*:")
_BODY_LIMIT = 1 << 20
"""Bytes of a body the signals read: a patch shows itself long before a megabyte."""
_T = TypeVar("_T")
_FIELD_PATTERNS: dict[str, tuple[bytes, re.Pattern[bytes]]] = {}
"""Field name -> its name as bytes and the pattern of its lines, compiled once per process."""


def _field_pattern(name: str) -> tuple[bytes, re.Pattern[bytes]]:
    found = _FIELD_PATTERNS.get(name)
    if found is None:
        encoded = name.encode("ascii")
        pattern = re.compile(rb"\n" + re.escape(encoded) + rb"[ \t]*:([^\n]*(?:\n[ \t][^\n]*)*)", re.I)
        found = _FIELD_PATTERNS[name] = (encoded, pattern)
    return found


class _once(Generic[_T]):
    """``functools.cached_property`` without its lock (Python 3.11 takes one at each
    first read; a ``MessageView`` is one thread's): the value is kept in the instance,
    which answers every later read itself."""

    def __init__(self, function: Callable[[Any], _T]) -> None:
        self.function = function
        self.name = function.__name__
        self.__doc__ = function.__doc__

    def __get__(self, view: object, owner: type | None = None) -> _T:
        if view is None:
            return self  # type: ignore[return-value]
        value = view.__dict__[self.name] = self.function(view)
        return value


class MessageView:
    """A message as the rules read it: header fields decoded when first asked for, the
    body's text and signals worked out only when a rule needs them."""

    def __init__(self, raw: bytes) -> None:
        self._header, self._raw_body = split_message(raw)
        self._header_nl = b"\n" + self._header
        self._fields: dict[str, list[str] | None] = {}
        self._names: set[bytes] | None = None

    def values(self, name: str) -> list[str] | None:
        """The decoded values of the header field ``name`` (lower-case), in header order;
        None when the message has no such field. Only the fields rules ask for are decoded."""
        if self._names is None:
            self._names = {found.lower() for found in _FIELD_NAME_RE.findall(self._header_nl)}
        encoded, pattern = _field_pattern(name)
        if encoded not in self._names:
            return None
        found = self._fields.get(name)
        if found is None and name not in self._fields:
            raw = pattern.findall(self._header_nl)
            found = self._fields[name] = [decode_header_value(value) for value in raw] if raw else None
        return found

    def first(self, name: str) -> str:
        return (self.values(name) or [""])[0]

    @_once
    def subject(self) -> str:
        return self.first("subject")

    @_once
    def sender(self) -> str:
        name, address = parse_from(self.first("from"))
        return f"{name} <{address}>"

    @_once
    def parsed_subject(self) -> PatchSubject:
        return parse_subject(self.subject)

    @_once
    def text(self) -> str:
        """The body as text (a single-part body's transfer encoding undone)."""
        body = self._raw_body[:_BODY_LIMIT]
        encoding = _CTE_RE.search(self._header.decode("latin-1"))
        kind = encoding.group(1).lower() if encoding else ""
        try:
            if kind == "base64":
                body = base64.b64decode(body, validate=False)
            elif kind == "quoted-printable":
                body = quopri.decodestring(body)
        except (binascii.Error, ValueError):
            pass
        return body.decode("utf-8", "replace").replace("\r\n", "\n")

    @_once
    def unquoted(self) -> str:
        """The body's lines outside quotes."""
        text = self.text
        return _QUOTE_LINE_RE.sub("", text) if ">" in text else text

    def signal(self, name: str) -> bool:
        patch = self.parsed_subject
        if name == "patch":
            return patch.is_patch and not patch.reply and patch.number != 0
        if name == "cover":
            return patch.cover_letter and not patch.reply
        if name == "patch_reply":
            return patch.is_patch and patch.reply
        if name == "reply":
            # Pipermail's archives drop "Re:" from many subjects; the header fields stay.
            return patch.reply or self.values("in-reply-to") is not None or self.values("references") is not None
        if name == "diff":
            unquoted = self.unquoted
            # Each of _DIFF_RE's ways needs one of these (a plain test over the text is a
            # fraction of a search for line starts).
            if ("diff -" in unquoted or "Index: " in unquoted or "\n+++ " in unquoted) and _DIFF_RE.search(unquoted):
                return True
            # Attached patches: only a multipart body has parts with file names.
            multipart = "multipart/" in self.first("content-type").lower()
            return multipart and bool(_PATCH_FILE_RE.search(self._raw_body[:_BODY_LIMIT]))
        if name == "quoted_diff":
            return bool(_QUOTED_DIFF_RE.search(self.text)) or len(_QUOTED_CODE_RE.findall(self.text)) >= 3
        if name == "trailer":
            # A trailer has "-by:", in any case: only B/b and Y/y are b and y to re.I.
            unquoted = self.unquoted
            return _has_by(unquoted) and bool(_TRAILER_RE.search(unquoted))
        raise ValueError(f"unknown signal {name!r}")


def _has_by(text: str) -> bool:
    """Whether ``text`` has ``-by:`` in some mix of cases."""
    return "-by:" in text or "-By:" in text or "-BY:" in text or "-bY:" in text


def _matches(rule: Rule, view: MessageView) -> bool:
    # Cheapest first: the subject and sender are one header each; the body comes last.
    if rule.subject is not None and not rule.subject.search(view.subject):
        return False
    if rule.sender is not None and not rule.sender.search(view.sender):
        return False
    if rule.header is not None:
        values = view.values(rule.header)
        if values is None:
            return False
        if rule.value is not None and not any(rule.value.search(value) for value in values):
            return False
    for signal in rule.signals:
        wanted = not signal.startswith("!")
        if view.signal(signal.lstrip("!")) != wanted:
            return False
    return rule.body is None or bool(rule.body.search(view.unquoted))


def classify(view: MessageView, rules: Sequence[Rule]) -> str:
    """The class of the first rule the message matches, else ``DEFAULT_CLASS``."""
    for rule in rules:
        if _matches(rule, view):
            return rule.cls
    return DEFAULT_CLASS


def classify_message(raw: bytes, rules: Sequence[Rule] = DEFAULT_RULES) -> str:
    """The class of a raw message under ``rules``; never raises on bad mail."""
    return classify(MessageView(raw), rules)
