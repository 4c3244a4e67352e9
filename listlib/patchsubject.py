"""Patch subjects: ``[PATCH v3 2/7]``-style prefixes read into their parts; pure.

Rules (what patch-review lists write, measured on linux-raid's 19,526 subjects):

- Reply and forward prefixes (``Re:``, ``RE:``, ``Fwd:``, ``Fw:``, ``AW:``,
  ``SV:``, ``Antw:``, also ``Re[2]:``) before the first bracket make a reply.
- The bracketed groups at the start of the subject (after those prefixes, with
  or without spaces between them: ``[RFC][PATCH v2 1/2]``) are its prefix; the
  rest, stripped, is the title. Tokens in a group are separated by spaces or
  commas (``[PATCH, v2]``) and may come in any order.
- ``PATCH`` (any case, also ``PATCHv2``, ``PATCH-v2``, ``PATCHSET``) or ``RFC`` in a group
  makes it a patch; ``RFC`` and ``RESEND`` set their flags (also glued:
  ``[PATCH/RFC]``, ``[PATCH-RFC]``).
- ``vN`` / ``VN`` (also glued to PATCH) is the version (1 when absent);
  ``M/K`` the patch's number and the series' size (``0/K`` is a cover letter).
- Every other token is a tag, kept as written: ``-next``, ``md-6.9``,
  ``mdadm``, ``for-5.13/block``, ``AUTOSEL``, ``5.4`` …
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["PatchSubject", "is_reply", "parse_subject"]

_REPLY_RE = re.compile(r"\s*(?:re|fwd?|aw|sv|antw)\s*(?:\[\d+\])?\s*:", re.I)
_GROUP_RE = re.compile(r"\s*\[([^\[\]]*)\]")
_TOKEN_RE = re.compile(r"[^\s,]+")
_PATCH_RE = re.compile(r"patch(?:set|es)?(?:[-_]?v(\d{1,3}))?\Z", re.I)
_VERSION_RE = re.compile(r"v(\d{1,3})\Z", re.I)
_WORDS = frozenset(("PATCH", "RFC", "RESEND"))
_COUNTER_RE = re.compile(r"(\d{1,4})/(\d{1,4})\Z")
_SPLIT_RE = re.compile(r"[/-]")


@dataclass(frozen=True)
class PatchSubject:
    """What a subject's prefix says."""

    title: str
    """The subject without reply prefixes and bracketed groups."""
    is_patch: bool = False
    rfc: bool = False
    resend: bool = False
    version: int = 1
    number: int | None = None
    """M of ``M/K``; None for a lone patch."""
    total: int | None = None
    """K of ``M/K``."""
    tags: tuple[str, ...] = ()
    reply: bool = False

    @property
    def cover_letter(self) -> bool:
        return self.is_patch and self.number == 0 and bool(self.total)


def is_reply(subject: str) -> bool:
    """Whether a subject starts with a reply or forward prefix (``parse_subject``'s
    ``reply``, without reading the rest)."""
    return _REPLY_RE.match(subject) is not None


def parse_subject(subject: str) -> PatchSubject:
    """The parts of a subject (see the module docstring); never raises."""
    at = 0
    reply = False
    while match := _REPLY_RE.match(subject, at):
        reply, at = True, match.end()
    tokens: list[str] = []
    while match := _GROUP_RE.match(subject, at):
        for token in _TOKEN_RE.findall(match.group(1)):
            parts = _SPLIT_RE.split(token)
            glued = len(parts) > 1 and all(part.upper() in _WORDS for part in parts)  # "PATCH/RFC"
            tokens.extend(parts if glued else [token])
        at = match.end()
    title = subject[at:].strip()
    is_patch = rfc = resend = False
    version = 1
    number = total = None
    tags: list[str] = []
    for token in tokens:
        upper = token.upper()
        if patch := _PATCH_RE.match(token):
            is_patch = True
            if patch.group(1):
                version = int(patch.group(1))
        elif upper == "RFC":
            is_patch = rfc = True
        elif upper == "RESEND":
            resend = True
        elif found := _VERSION_RE.match(token):
            version = int(found.group(1))
        elif found := _COUNTER_RE.match(token):
            number, total = int(found.group(1)), int(found.group(2))
        else:
            tags.append(token)
    if not is_patch:
        return PatchSubject(title, tags=tuple(tokens), reply=reply)
    return PatchSubject(title, True, rfc, resend, version, number, total, tuple(tags), reply)
