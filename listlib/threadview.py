"""Thread trees as plain data and as text, for ``listlib threads`` and scripts.

Turns a cached thread (call numbers, parents, depths) plus the index rows of its
messages into nested dictionaries (JSON-ready) and an indented text listing.
Pure: it never reads the disk.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from .index import Row
from .threadcache import ThreadEntry

__all__ = ["format_thread", "thread_view"]


def _iso(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def thread_view(slug: str, entry: ThreadEntry, rows: Mapping[str, Row]) -> dict[str, Any]:
    """A thread as nested dictionaries: every node has call, message_id, date, subject
    and children; a placeholder root has call, date and subject set to None."""
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
        f"{view['list']}/{view['id']}: {view['messages']} message{'' if view['messages'] == 1 else 's'}, "
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
            lines.append(f"{indent}{node['call']}  {when}  {node['subject'] or '(no subject)'}{mid}")
        stack.extend((child, depth + 1) for child in reversed(node["children"]))
    return "\n".join(lines)
