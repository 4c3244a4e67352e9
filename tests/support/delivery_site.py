"""Helpers shared by the delivery tests: a site with delivery on, queue inspection."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from listlib.delivery.queue import STAGES, Outbound

from .helpers import make_message, run_listlib
from .smtpserver import SmtpServer

NOW = 1_800_000_000.0
"""The delivery clock of the tests (LISTLIB_NOW), well after the messages' dates."""


def delivery_toml(
    server: SmtpServer | int,
    *,
    verp: bool = False,
    max_recipients: int = 50,
    give_up_days: float = 5,
    extra_list: str = "",
    **list_keys: Any,
) -> str:
    port = server if isinstance(server, int) else server.port
    keys = {"deliver": True, "subscribers_file": "subscribers.txt", **list_keys}
    lines = "\n".join(f"{k} = {json.dumps(v)}" for k, v in keys.items())
    return f"""\
[site]
title = "Test archive"
base_url = "https://lists.example.org/archive/"

[lists.dev]
name = "Dev list"
addresses = ["dev@lists.example.org"]
list_ids = ["dev.lists.example.org"]
{lines}
{extra_list}
[lists.announce]
addresses = ["announce@lists.example.org"]

[smtp]
host = "127.0.0.1"
port = {port}
security = "none"
timeout = 5
max_recipients = {max_recipients}

[delivery]
verp = {"true" if verp else "false"}
retry_first_minutes = 5
retry_max_minutes = 240
give_up_days = {give_up_days}
"""


def make_site(root: Path, server: SmtpServer | int, subscribers: list[str], **options: Any) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "listlib.toml").write_text(delivery_toml(server, **options))
    (root / "subscribers.txt").write_text("# dev subscribers\n" + "\n".join(subscribers) + "\n")
    return root


def post(n: int = 1, sender: str = "ok-poster@example.org", **kw: Any) -> bytes:
    return make_message(
        kw.pop("subject", f"post {n}"),
        body=kw.pop("body", f"Body of post {n}.\n.leading dot line\n"),
        message_id=f"<post{n}@example.org>",
        sender=sender,
        **kw,
    )


def import_posts(site: Path, *messages: bytes, env: dict[str, str] | None = None) -> str:
    folder = site / "incoming"
    folder.mkdir(exist_ok=True)
    for number, raw in enumerate(messages):
        (folder / f"{len(list(folder.iterdir()))}-{number}.eml").write_bytes(raw)
    result = run_listlib("import", "--deliver", folder, cwd=site, env={"LISTLIB_NOW": str(NOW), **(env or {})})
    assert result.returncode == 0, result.stderr
    return result.stdout + result.stderr


def deliver(site: Path, now: float = NOW, *args: str, env: dict[str, str] | None = None, check: bool = True) -> Any:
    result = run_listlib("deliver", *args, cwd=site, env={"LISTLIB_NOW": str(now), **(env or {})})
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


def queue_status(site: Path) -> list[dict[str, Any]]:
    """What 'listlib deliver --status --json' prints, read in this process (it is faster)."""
    outbound = Outbound(site / "queue")
    if not outbound.root.is_dir():
        return []
    return [post.to_dict() for stage in STAGES for post in outbound.iter_stage(stage)]


def subscribers(count: int) -> list[str]:
    """A mix: mostly good, some permanent failures, some temporary (1-2 tries), some 'mailbox full'."""
    out = []
    for i in range(count):
        if i % 10 == 3:
            out.append(f"perm{i}@example.net")
        elif i % 10 == 5:
            out.append(f"temp{1 + i % 2}-{i}@example.net")
        elif i % 25 == 7:
            out.append(f"full1-{i}@example.com")
        else:
            out.append(f"ok{i}@example.com")
    return out


def _cut_in_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _flip_last_byte(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))


DAMAGES: dict[str, tuple[str, Callable[[Path], None]]] = {
    # name: (the kind the queue reports, what happens to the post folder)
    "no post.json": ("missing-post-json", lambda p: (p / "post.json").unlink()),
    "truncated post.json": ("invalid-post-json", lambda p: _cut_in_half(p / "post.json")),
    "post.json without recipients": ("invalid-post-json", lambda p: (p / "post.json").write_text('{"version": 1}')),
    "no journal": ("missing-journal", lambda p: (p / "journal").unlink()),
    "garbled journal line": ("invalid-journal", lambda p: (p / "journal").write_bytes(b'{"r":"ann@ex\x00\x00\n')),
    "journal of other recipients": (
        "invalid-journal",
        lambda p: (p / "journal").write_bytes(b'{"r":"zed@example.com","s":"done"}\n'),
    ),
    "no message.eml": ("missing-message", lambda p: (p / "message.eml").unlink()),
    "truncated message.eml": ("message-mismatch", lambda p: _cut_in_half(p / "message.eml")),
    "altered message.eml": ("message-mismatch", lambda p: _flip_last_byte(p / "message.eml")),
    "unknown file": ("unexpected-file", lambda p: (p / "message.eml~").write_bytes(b"x")),
}
"""Ways a queued post gets damaged (a disk error, a crash of the file system, a hand edit)."""
