"""Query text -> a parsed query (``parse_query``); ``search.js`` parses the same way.

Syntax: words (all must match), ``"exact phrases"``, ``-excluded`` (a word, a prefix
or a phrase), ``prefix*``, ``from:`` and ``subject:`` (a word, prefix or quoted
phrase restricted to the author or subject), ``list:SLUG``, ``after:DATE`` and
``before:DATE`` (``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD``: ``after:`` keeps messages
from the first day of that period on, ``before:`` those before it), ``is:CLASS``
(the message's class, ``classify``: ``is:patch``, ``-is:automated``). A word the analyser splits into several
tokens (``mdadm.conf``, a CJK run) is a phrase. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

from .analysis import words

__all__ = ["CLASS_FIELD", "Clause", "Query", "only_excludes", "parse_query"]

_ITEM_RE = re.compile(r'(-?)(?:([A-Za-z]+):)?(?:"([^"]*)"?|(\S+))')
_DATE_RE = re.compile(r"(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?\Z")
_EPOCH = date(1970, 1, 1).toordinal()
_FIELDS = {"from": "f:", "subject": "s:", "is": "c:"}
CLASS_FIELD = "c:"
"""The field of a message's class (``is:``): it narrows the results, and is no word to highlight."""


@dataclass(frozen=True)
class Clause:
    """Tokens that must occur: one (a word), several in a row (a phrase), or a prefix."""

    tokens: tuple[str, ...]
    field: str = ""
    """``""`` (any field), ``"s:"``, ``"f:"`` or ``"c:"`` (the class)."""
    prefix: bool = False


@dataclass
class Query:
    must: list[Clause] = field(default_factory=list)
    must_not: list[Clause] = field(default_factory=list)
    lists: list[str] = field(default_factory=list)
    after: int | None = None
    """First day (days since 1970-01-01) a result may have."""
    before: int | None = None
    """First day a result may no longer have."""


def _day(text: str) -> int | None:
    """The first day of ``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD``, as days since 1970-01-01."""
    match = _DATE_RE.match(text)
    if not match:
        return None
    try:
        start = date(int(match[1]), int(match[2] or 1), int(match[3] or 1))
    except ValueError:
        return None
    return start.toordinal() - _EPOCH


def parse_query(text: str) -> Query:
    query = Query()
    for match in _ITEM_RE.finditer(text):
        negate, name, quoted, bare = match[1] == "-", (match[2] or "").lower(), match[3], match[4]
        if name and name not in (*_FIELDS, "list", "after", "before"):
            # Not a field we know ("re:", "http:"): the whole item is text.
            bare = f"{match[2]}:{quoted if quoted is not None else bare}"
            name = ""
            quoted = None
        value = quoted if quoted is not None else bare or ""
        if name == "list":
            if value and not negate:
                query.lists.append(value.lower())
            continue
        if name in ("after", "before"):
            day = _day(value)
            if day is not None and name == "after":
                query.after = day
            elif day is not None:
                query.before = day
            continue
        prefix = quoted is None and value.endswith("*")
        toks = tuple(words(value[:-1] if prefix else value))
        if not toks:
            continue
        clause = Clause(toks, _FIELDS.get(name, ""), prefix and len(toks) == 1)
        (query.must_not if negate else query.must).append(clause)
    return query


def only_excludes(text: str) -> bool:
    """Whether the query has words to leave out and none to look for (it finds nothing)."""
    query = parse_query(text)
    return not query.must and bool(query.must_not)
