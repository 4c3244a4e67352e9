"""``listlib threads``: thread trees as text and JSON, filtered by list, month or message."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from listlib.threadview import JSON_INDENT_LEVELS, dumps_json

from ..support.helpers import make_message, mboxrd, run_listlib
from ..support.hostile.checks import load_deep_json


def import_conversation(site: Path) -> None:
    messages = [
        make_message("Release plan", message_id="<root@x>", date="Mon, 29 Jan 2024 10:00:00 +0000"),
        make_message(
            "Re: Release plan",
            message_id="<reply@x>",
            date="Thu, 01 Feb 2024 09:00:00 +0000",
            extra={"In-Reply-To": "<root@x>", "References": "<root@x>"},
        ),
        make_message(
            "Re: Release plan",
            message_id="<orphan@x>",
            date="Fri, 02 Feb 2024 09:00:00 +0000",
            extra={"In-Reply-To": "<never-archived@x>"},
        ),
        make_message(
            "Re: Release plan",
            message_id="<orphan2@x>",
            date="Sat, 03 Feb 2024 09:00:00 +0000",
            extra={"In-Reply-To": "<never-archived@x>"},
        ),
        make_message("Unrelated", message_id="<other@x>", date="Sun, 04 Feb 2024 09:00:00 +0000"),
    ]
    (site / "mail.mbox").write_bytes(mboxrd(messages))
    run_listlib("import", "mail.mbox", cwd=site, check=True)


def test_threads_json_gives_trees_with_placeholders(site: Path) -> None:
    import_conversation(site)
    result = run_listlib("threads", "--json", cwd=site, check=True)
    threads = json.loads(result.stdout)["threads"]
    assert [t["root"]["subject"] or t["root"]["message_id"] for t in threads] == [
        "Release plan",
        "never-archived@x",
        "Unrelated",
    ]
    first = threads[0]
    assert first["list"] == "dev"
    assert first["messages"] == 2
    assert first["months"] == {"2024-01": 1, "2024-02": 1}
    assert first["root"]["message_id"] == "root@x"
    assert first["root"]["date"] == "2024-01-29T10:00:00Z"
    assert [c["message_id"] for c in first["root"]["children"]] == ["reply@x"]
    placeholder = threads[1]["root"]
    assert placeholder["call"] is None
    assert [c["message_id"] for c in placeholder["children"]] == ["orphan@x", "orphan2@x"]


def test_threads_text_filters_by_month_and_message(site: Path) -> None:
    import_conversation(site)
    january = run_listlib("threads", "--month", "2024-01", cwd=site, check=True).stdout
    assert "Release plan  <root@x>" in january
    assert "    " in january.splitlines()[2]  # the reply is indented under the root
    assert "Unrelated" not in january
    by_id = run_listlib("threads", "--message", "<orphan2@x>", "--list", "dev", cwd=site, check=True).stdout
    assert "(not archived)  <never-archived@x>" in by_id
    assert "Unrelated" not in by_id
    call = by_id.splitlines()[2].split()[0]
    assert run_listlib("threads", "--message", call, cwd=site, check=True).stdout == by_id


def test_threads_reports_bad_arguments_in_one_line(site: Path) -> None:
    import_conversation(site)
    for args, expected in [
        (("--month", "2024-13"), "'2024-13' is not a month like 2024-03"),
        (("--list", "nope"), "no threaded messages in list 'nope'"),
        (("--message", "<missing@x>"), "no filed message has call number or Message-ID '<missing@x>'"),
    ]:
        result = run_listlib("threads", *args, cwd=site)
        assert result.returncode in (1, 2)
        assert expected in result.stderr
        assert "Traceback" not in result.stderr


def test_threads_rebuilds_a_deleted_cache_and_sees_new_mail(site: Path) -> None:
    import_conversation(site)
    run_listlib("threads", cwd=site, check=True)
    assert (site / ".cache" / "threads.sqlite").exists()
    late = make_message(
        "Re: Unrelated",
        message_id="<late@x>",
        date="Mon, 05 Feb 2024 09:00:00 +0000",
        extra={"In-Reply-To": "<other@x>"},
    )
    (site / "late.eml").write_bytes(late)
    run_listlib("import", "late.eml", cwd=site, check=True)
    text = run_listlib("threads", "--message", "<other@x>", cwd=site, check=True).stdout
    assert "late@x" in text
    for path in (site / ".cache").iterdir():
        path.unlink()
    assert run_listlib("threads", "--message", "<other@x>", cwd=site, check=True).stdout == text


@pytest.mark.slow
def test_threads_json_shows_a_reply_chain_20000_deep(site: Path) -> None:
    depth = 20_000
    start = datetime(2024, 1, 1, tzinfo=UTC)
    messages = [
        make_message(
            "Re: chain" if n else "chain",
            "x\n",
            message_id=f"<c{n}@x>",
            date=start + timedelta(seconds=n),
            extra={"In-Reply-To": f"<c{n - 1}@x>"} if n else None,
        )
        for n in range(depth)
    ]
    (site / "chain.mbox").write_bytes(mboxrd(messages))
    run_listlib("import", "chain.mbox", cwd=site, check=True)
    result = run_listlib("threads", "--json", cwd=site)
    assert result.returncode == 0, result.stderr[-2000:]
    (thread,) = load_deep_json(result.stdout)["threads"]
    assert thread["messages"] == depth
    node, seen = thread["root"], 1
    while node["children"]:
        (node,) = node["children"]
        seen += 1
    assert (seen, node["message_id"]) == (depth, f"c{depth - 1}@x")
    assert max(map(len, result.stdout.splitlines())) < 300  # indentation stops growing


def test_the_iterative_json_writer_writes_what_json_dumps_writes() -> None:
    data = {
        "threads": [
            {"a": 1, "b": None, "c": [], "d": {}, "e": [1.5, True, 'Grüße \x1b \u2028 "q"'], "f": {"g": [{"h": []}]}},
            [],
        ],
        "empty": "",
    }
    assert dumps_json(data) == json.dumps(data, indent=2, ensure_ascii=False)
    assert dumps_json([]) == "[]" and dumps_json("x") == '"x"'
    deep: list[Any] = []
    for _ in range(300):
        deep = [deep, 1]
    assert json.loads(dumps_json(deep)) == json.loads(json.dumps(deep))
    assert max(map(len, dumps_json(deep).splitlines())) == 2 * JSON_INDENT_LEVELS + len("[],")
