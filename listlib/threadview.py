"""Thread trees as plain data and as text, for ``listlib threads`` and scripts.

Turns a cached thread (call numbers, parents, depths) plus the index rows of its
messages into nested dictionaries (JSON-ready), their JSON text and an indented
text listing. Nothing here recurses on the depth of a thread: a reply chain is as
deep as mail makes it (20,000 in tests). Pure: it never reads the disk, except
through the thread set and index that ``select_threads`` is handed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .store.index import Index, Row
from .threadcache import ThreadEntry
from .values import Month, is_call_number, plural

if TYPE_CHECKING:
    from .threadset import ThreadSet

__all__ = ["dumps_json", "format_thread", "parse_month", "select_threads", "thread_view"]


def _iso(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def thread_view(
    slug: str, entry: ThreadEntry, rows: Mapping[str, Row], classes: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A thread as nested dictionaries: every node has call, message_id, date, subject
    and children, and with ``classes`` (call -> class) its class too; a placeholder root
    has call, date and subject set to None."""
    nodes: dict[str, dict[str, Any]] = {}
    top: list[dict[str, Any]] = []
    for call, parent, _depth in entry.messages:
        row = rows.get(call)
        node = {
            "call": call,
            "message_id": row.message_id if row else None,
            "date": _iso(row.date) if row else None,
            "subject": row.subject if row else None,
            "children": [],
        }
        if classes is not None:
            node["class"] = classes.get(call)
        nodes[call] = node
        (nodes[parent]["children"] if parent else top).append(node)
    if entry.missing_root is not None:
        root: dict[str, Any] = {
            "call": None,
            "message_id": entry.missing_root,
            "date": None,
            "subject": None,
            "children": top,
        }
    else:
        root = top[0]
    return {
        "list": slug,
        "id": entry.id,
        "messages": entry.count,
        "first": _iso(entry.first),
        "last": _iso(entry.last),
        "months": {f"{y:04d}-{m:02d}": n for y, m, n in entry.months},
        "root": root,
    }


def format_thread(view: Mapping[str, Any]) -> str:
    """An indented listing: a header line, then one line per message."""
    months = ", ".join(view["months"])
    lines = [
        f"{view['list']}/{view['id']}: {plural(view['messages'], 'message')}, "
        f"{view['first'][:10]} to {view['last'][:10]} ({months})"
    ]
    stack = [(view["root"], 1)]
    while stack:
        node, depth = stack.pop()
        indent = "  " * depth
        if node["call"] is None:
            lines.append(f"{indent}(not archived)  <{node['message_id']}>")
        else:
            when = node["date"][:16].replace("T", " ") if node["date"] else "?"
            mid = f"  <{node['message_id']}>" if node["message_id"] else ""
            cls = f"  [{node['class']}]" if node.get("class") else ""
            lines.append(f"{indent}{node['call']}  {when}  {node['subject'] or '(no subject)'}{mid}{cls}")
        stack.extend((child, depth + 1) for child in reversed(node["children"]))
    return "\n".join(lines)


_END = object()


JSON_INDENT_LEVELS = 100
"""Deeper than this (50 replies), JSON text is not indented further: whitespace means
nothing to JSON, and indenting every level makes a reply chain 20,000 deep 5 GB of
spaces (the text grows with the square of the depth)."""


def dumps_json(value: Any) -> str:
    """``json.dumps(value, indent=2, ensure_ascii=False)``, the same text up to
    ``JSON_INDENT_LEVELS``, without recursion: the stdlib encoder recurses once per
    level and fails on a deep thread. Keys must be strings."""
    out: list[str] = []
    # Per open container: its entries, its closing bracket, its depth, whether one was written.
    frames: list[tuple[Iterator[Any], str, int, list[bool]]] = []

    def put(item: Any, depth: int) -> None:
        if isinstance(item, dict) and item:
            out.append("{")
            frames.append((iter(item.items()), "}", depth + 1, [False]))
        elif isinstance(item, list | tuple) and item:
            out.append("[")
            frames.append((iter(item), "]", depth + 1, [False]))
        else:  # scalars, and empty containers ("{}", "[]")
            out.append(json.dumps(item, ensure_ascii=False))

    put(value, 0)
    while frames:
        entries, closer, depth, started = frames[-1]
        entry = next(entries, _END)
        if entry is _END:
            frames.pop()
            out.append("\n" + "  " * min(depth - 1, JSON_INDENT_LEVELS) + closer)
            continue
        out.append(("," if started[0] else "") + "\n" + "  " * min(depth, JSON_INDENT_LEVELS))
        started[0] = True
        if closer == "}":
            key, entry = entry
            out.append(json.dumps(key, ensure_ascii=False) + ": ")
        put(entry, depth)
    return "".join(out)


def parse_month(text: str) -> Month:
    """``2024-03`` as a Month; ValueError (saying what a month looks like) for anything else."""
    try:
        year, month = (int(part) for part in text.split("-"))
        if not 1 <= month <= 12:
            raise ValueError
    except ValueError:
        raise ValueError(f"{text!r} is not a month like 2024-03") from None
    return Month(year, month)


def select_threads(
    threadset: ThreadSet, index: Index, slug: str, month: Month | None, message: str | None
) -> list[str]:
    """The ids of the list's threads holding ``message`` (a call number or a Message-ID,
    with or without angle brackets), else those with messages in ``month``, else all."""
    if message is not None:
        calls = [message] if is_call_number(message) else []
        calls += [row.call for row in index.rows_by_message_id(slug, message.strip("<>"))]
        found = {threadset.thread_of(slug, call) for call in calls}
        return sorted(t for t in found if t is not None)
    if month is not None:
        return [thread_id for thread_id, _ in threadset.month(slug, month).threads]
    return threadset.thread_ids(slug)
