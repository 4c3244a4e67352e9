"""The ``[classes]`` table: the site's message-class rules (``classify``), read in
order into ``classify.Rule`` records ahead of the default rules.

Every problem names its key (``classes.rules[2].subject``) and says what is wrong: an
unknown class or signal, a regular expression that does not compile, a rule with no
condition (it would swallow every message). Records problems on the Reader; never raises.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..classify import CLASSES, DEFAULT_RULES, SIGNALS, Rule, compile_pattern
from ..errors import ConfigIssue
from .reader import Reader, kind_of
from .schema import ClassesConfig

__all__ = ["read_classes"]

_KEYS = {"rules", "default_rules"}
_RULE_KEYS = {"class", "subject", "sender", "header", "value", "body", "signals"}
_HEADER_NAME_RE = re.compile(r"[\x21-\x39\x3b-\x7e]+\Z")


def _pattern(reader: Reader, table: Mapping[str, Any], key: str, where: str) -> re.Pattern[str] | None:
    if key not in table:
        return None
    text = reader.string(table, key, where)
    try:
        return compile_pattern(text)
    except re.error as exc:
        reader.issues.append(ConfigIssue(f"{where}.{key}", f"{text!r} is not a regular expression ({exc})"))
        return None


def _check_class(value: str) -> str | None:
    return None if value in CLASSES else f"{value!r} is not a class (one of {', '.join(CLASSES)})"


def _check_signal(value: str) -> str | None:
    if value.removeprefix("!") in SIGNALS:
        return None
    return f"{value!r} is not a signal (one of {', '.join(SIGNALS)}, each maybe with a leading '!')"


def _check_header(value: str) -> str | None:
    return None if _HEADER_NAME_RE.match(value) else f"{value!r} is not a header field name (like 'X-Bugzilla-Reason')"


def _read_rule(reader: Reader, table: object, where: str) -> Rule | None:
    if not isinstance(table, Mapping):
        reader.issues.append(ConfigIssue(where, f"expected a table, got {kind_of(table)}"))
        return None
    before = len(reader.issues)
    reader.unknown(table, _RULE_KEYS, where)
    cls = reader.string(table, "class", where, check=_check_class)
    header = reader.string(table, "header", where, default="", check=_check_header) or None
    rule = Rule(
        cls,
        subject=_pattern(reader, table, "subject", where),
        sender=_pattern(reader, table, "sender", where),
        header=header.lower() if header else None,
        value=_pattern(reader, table, "value", where),
        body=_pattern(reader, table, "body", where),
        signals=reader.strings(table, "signals", where, check=_check_signal),
        origin=where,
    )
    if "value" in table and "header" not in table:
        reader.issues.append(ConfigIssue(f"{where}.value", "needs 'header' (the field whose value it matches)"))
    if not (_RULE_KEYS - {"class"}) & table.keys():
        reader.issues.append(
            ConfigIssue(where, "has no condition (subject, sender, header, body or signals): it matches every message")
        )
    return rule if len(reader.issues) == before else None


def read_classes(reader: Reader, data: Mapping[str, Any]) -> ClassesConfig:
    """The ``[classes]`` table: the site's rules, then the default ones unless
    ``default_rules = false``."""
    table = reader.table(data, "classes", "classes")
    reader.unknown(table, _KEYS, "classes")
    defaults = reader.boolean(table, "default_rules", "classes", True)
    found = table.get("rules", [])
    if not isinstance(found, list):
        reader.issues.append(ConfigIssue("classes.rules", f"expected an array of tables, got {kind_of(found)}"))
        found = []
    rules = [_read_rule(reader, item, f"classes.rules[{index}]") for index, item in enumerate(found)]
    site_rules = tuple(rule for rule in rules if rule is not None)
    return ClassesConfig(rules=site_rules + (DEFAULT_RULES if defaults else ()), site_rules=len(site_rules))
