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
        (("--list", "nope"), "unknown list slug 'nope' (configured lists: dev, announce)"),
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


# Thread overrides: listlib threads --attach/--detach/--undo, and content/threads.toml.


def calls_by_message_id(site: Path) -> dict[str, str]:
    data = json.loads(run_listlib("threads", "--json", cwd=site, check=True).stdout)
    found: dict[str, str] = {}
    pending = [t["root"] for t in data["threads"]]
    while pending:
        node = pending.pop()
        if node["call"]:
            found[node["message_id"]] = node["call"]
        pending.extend(node["children"])
    return found


def test_attach_then_build_shows_the_message_under_its_new_parent_and_the_old_root_redirects(site: Path) -> None:
    import_conversation(site)
    run_listlib("build", cwd=site, check=True)
    calls = calls_by_message_id(site)
    root, other = calls["root@x"], calls["other@x"]
    old_page = site / "output" / "dev" / "2024" / "02" / f"{other}.html"
    assert 'http-equiv="refresh"' not in old_page.read_text()
    result = run_listlib("threads", "--attach", "<other@x>", "--to", root, "--reason", "lost headers", cwd=site)
    assert result.returncode == 0, result.stderr
    assert f"{other} answers {root} in list dev" in result.stdout
    assert f'[dev.attach]\n{other} = "{root}"' in (site / "content" / "threads.toml").read_text()
    text = run_listlib("threads", "--message", root, cwd=site, check=True).stdout
    assert f"\n    {other}  " in text  # one level under the root
    run_listlib("build", cwd=site, check=True)
    page = (site / "output" / "dev" / "2024" / "01" / f"{root}.html").read_text()
    section = page.split(f'id="{other}"', 1)
    assert 'class="message indent-1"' in section[0].rsplit("<article", 1)[1]
    assert f'<a href="#{root}">parent<' in section[1].split("</article>", 1)[0]
    redirect = old_page.read_text()
    assert 'http-equiv="refresh"' in redirect and f"../01/{root}.html#{other}" in redirect
    ledger = json.loads(run_listlib("ledger", "--json", cwd=site, check=True).stdout)["entries"]
    assert [(e["action"], [m["call"] for m in e["messages"]], e["reason"]) for e in ledger] == [
        ("attach", [other, root], "lost headers")
    ]


def test_detach_dry_run_json_and_undo(site: Path) -> None:
    import_conversation(site)
    calls = calls_by_message_id(site)
    reply = calls["reply@x"]
    dry = run_listlib("threads", "--detach", "<reply@x>", "--dry-run", "--json", cwd=site, check=True)
    assert json.loads(dry.stdout) | {"file": None} == {
        "action": "detach",
        "dry_run": True,
        "changed": True,
        "list": "dev",
        "message": reply,
        "parent": None,
        "before": None,
        "file": None,
        "ledger_entry": None,
    }
    assert not (site / "content" / "threads.toml").exists()
    run_listlib("threads", "--detach", reply, cwd=site, check=True)
    assert f"dev/{reply}: 1 message" in run_listlib("threads", cwd=site, check=True).stdout
    undone = run_listlib("threads", "--undo", reply, cwd=site, check=True).stdout
    assert f"{reply} is no longer detached" in undone
    assert f"dev/{reply}:" not in run_listlib("threads", cwd=site, check=True).stdout
    again = run_listlib("threads", "--undo", reply, cwd=site)
    assert again.returncode == 1
    assert f"message {reply} of list dev has no thread override; nothing was changed" in again.stderr
    actions = [e["action"] for e in json.loads(run_listlib("ledger", "--json", cwd=site).stdout)["entries"]]
    assert actions == ["detach", "undo-override"]


def test_an_unknown_id_changes_nothing_and_says_so_in_one_line(site: Path) -> None:
    import_conversation(site)
    for args in (("--attach", "<nobody@x>", "--to", "<root@x>"), ("--attach", "<root@x>", "--to", "zzzzzzzz")):
        result = run_listlib("threads", *args, cwd=site)
        assert result.returncode == 1
        (line,) = result.stderr.splitlines()
        assert "has the call number or Message-ID" in line and "nothing was changed" in line
    loop = run_listlib("threads", "--attach", "<root@x>", "--to", "<root@x>", cwd=site)
    assert loop.returncode == 1 and "cannot answer itself" in loop.stderr
    assert not (site / "content" / "threads.toml").exists()
    assert not (site / "content" / "ledger.jsonl").exists()
    usage = run_listlib("threads", "--attach", "<root@x>", cwd=site)
    assert usage.returncode == 2 and "--attach needs --to PARENT" in usage.stderr


def test_a_loop_of_attachments_is_refused(site: Path) -> None:
    import_conversation(site)
    run_listlib("threads", "--attach", "<root@x>", "--to", "<other@x>", cwd=site, check=True)
    result = run_listlib("threads", "--attach", "<other@x>", "--to", "<root@x>", cwd=site)
    assert result.returncode == 1
    assert "would make the overrides of list dev loop" in result.stderr


def test_a_bad_hand_edited_file_is_a_clear_error(site: Path) -> None:
    import_conversation(site)
    run_listlib("build", cwd=site, check=True)
    calls = calls_by_message_id(site)
    path = site / "content" / "threads.toml"
    path.write_text(
        "[dev]\n"
        f'detach = ["{calls["reply@x"]}", "zzzzzzzz"]\n'
        "\n"
        "[dev.attach]\n"
        f'{calls["root@x"]} = "{calls["other@x"]}"\n'
        f'{calls["other@x"]} = "{calls["root@x"]}"\n'
        "\n"
        "[nolist]\n"
        f'detach = ["{calls["reply@x"]}"]\n'
    )
    for command in ("build", "threads"):
        result = run_listlib(command, cwd=site)
        assert result.returncode == 1
        assert "Traceback" not in result.stderr
        assert f"{path}, line 2: [dev] detach zzzzzzzz: no message zzzzzzzz in the store" in result.stderr
        assert f"{path}, line 5: [dev.attach] attachments make a loop" in result.stderr
        assert f"{path}, line 8: [nolist]: no list 'nolist' in listlib.toml" in result.stderr
    check = run_listlib("check", cwd=site)
    assert check.returncode == 1 and "3 problems" in check.stdout
    path.write_text("[dev\n")
    for args in (("build",), ("check",), ("threads", "--detach", calls["reply@x"])):
        result = run_listlib(*args, cwd=site)
        assert result.returncode == 1
        assert f"{path}, line 1, column 5: TOML syntax error" in result.stderr
    assert path.read_text() == "[dev\n"  # never rewritten over what the operator wrote


def import_patch_thread(site: Path) -> None:
    diff = "diff --git a/a.c b/a.c\n--- a/a.c\n+++ b/a.c\n@@ -1 +1 @@\n-old\n+new\n"
    messages = [
        make_message("[PATCH 0/1] md: fixes", message_id="<cover@x>", date="Mon, 29 Jan 2024 10:00:00 +0000"),
        make_message(
            "[PATCH 1/1] md: fix it",
            diff,
            message_id="<patch@x>",
            date="Mon, 29 Jan 2024 10:01:00 +0000",
            extra={"In-Reply-To": "<cover@x>", "References": "<cover@x>"},
        ),
        make_message(
            "Re: [PATCH 1/1] md: fix it",
            "Reviewed-by: Bob <bob@x>\n",
            message_id="<review@x>",
            date="Tue, 30 Jan 2024 10:00:00 +0000",
            extra={"In-Reply-To": "<patch@x>", "References": "<cover@x> <patch@x>"},
        ),
    ]
    (site / "patches.mbox").write_bytes(mboxrd(messages))
    run_listlib("import", "patches.mbox", cwd=site, check=True)


def test_threads_class_keeps_threads_holding_that_class_and_labels_every_message(site: Path) -> None:
    import_conversation(site)
    import_patch_thread(site)
    text = run_listlib("threads", "--class", "patch", cwd=site, check=True).stdout
    assert "[PATCH 0/1] md: fixes  <cover@x>  [cover]" in text
    assert "[PATCH 1/1] md: fix it  <patch@x>  [patch]" in text
    assert "<review@x>  [review]" in text
    assert "Release plan" not in text and "Unrelated" not in text
    data = json.loads(run_listlib("threads", "--class", "review", "--json", cwd=site, check=True).stdout)
    (thread,) = data["threads"]
    assert thread["root"]["class"] == "cover"
    assert run_listlib("threads", "--class", "vote", cwd=site, check=True).stdout == ""
    # Without --class the listing is as before: no classes.
    assert "[cover]" not in run_listlib("threads", cwd=site, check=True).stdout


def test_threads_class_refuses_an_unknown_class_and_an_edit_in_one_line(site: Path) -> None:
    import_patch_thread(site)
    bad = run_listlib("threads", "--class", "patches", cwd=site)
    assert bad.returncode == 2 and "'patches' is not one of" in bad.stderr
    edit = run_listlib("threads", "--class", "patch", "--detach", "<patch@x>", cwd=site)
    assert edit.returncode == 2 and "--class only selects threads to print" in edit.stderr
    assert "Traceback" not in bad.stderr + edit.stderr
