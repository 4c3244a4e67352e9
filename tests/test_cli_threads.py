"""``listlib threads``: thread trees as text and JSON, filtered by list, month or message."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import make_message, mboxrd, run_listlib


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
