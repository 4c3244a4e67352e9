"""Mail that matched no list (``_no_list``): the hint after filing, the ``listlib unrouted``
report, re-filing it once its list is configured, and publishing it on request."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from listlib.urls import message_id_path

from ..support.dovecot import Mailbox
from ..support.helpers import add_pop3_account, make_message, mboxrd, run_listlib, stored_files

HINT = "matched no list (kept in _no_list, not published): see 'listlib unrouted'"


def unrouted_messages() -> list[bytes]:
    """Three messages of an unconfigured list 'users' (by List-Id), one sent only to an
    unconfigured address, and one for the configured list 'dev'."""
    users = {"List-Id": "Users <users.lists.example.org>"}
    return [
        make_message("Welcome", message_id="<u1@x>", to="users@lists.example.org", extra=users),
        make_message("Re: Welcome", message_id="<u2@x>", to="users@lists.example.org", extra=users),
        make_message(
            "Later",
            message_id="<u3@x>",
            to="users@lists.example.org",
            extra=users,
            date="Mon, 3 Jun 2024 08:00:00 +0000",
        ),
        make_message("Private", message_id="<p1@x>", to="Bob <bob@example.net>"),
        make_message("For dev", message_id="<d1@x>"),
    ]


def test_import_says_what_to_do_about_mail_that_matched_no_list(site: Path) -> None:
    (site / "a.mbox").write_bytes(mboxrd(unrouted_messages()))
    result = run_listlib("import", "a.mbox", cwd=site, check=True)
    assert f"4 messages {HINT}" in result.stderr
    assert result.stdout.strip().endswith("5 filed (0 Message-ID collisions, 4 to _no_list), 0 duplicates, 0 failed")
    again = run_listlib("import", "a.mbox", cwd=site, check=True)
    assert "unrouted" not in again.stderr  # nothing new went to _no_list
    quiet = run_listlib("-q", "import", "--dry-run", "a.mbox", cwd=site, check=True)
    assert "unrouted" not in quiet.stderr
    (site / "b.mbox").write_bytes(mboxrd([make_message("One more", message_id="<u4@x>", to="x@example.net")]))
    dry = run_listlib("import", "--dry-run", "b.mbox", cwd=site, check=True)
    assert "1 message would match no list" in dry.stderr
    as_json = run_listlib("import", "--json", "b.mbox", cwd=site, check=True)
    assert "unrouted" not in as_json.stderr and '"no_list": 1' in as_json.stdout


@pytest.mark.pop3
def test_fetch_says_what_to_do_about_mail_that_matched_no_list(site: Path, mailbox: Mailbox) -> None:
    add_pop3_account(site, mailbox)
    mailbox.drop_many(unrouted_messages())
    result = run_listlib("fetch", cwd=site, check=True)
    assert f"4 messages {HINT}" in result.stderr
    mailbox.drop_many([make_message("Again", message_id="<u9@x>", to="nobody@example.net")])
    quiet = run_listlib("fetch", "--quiet", cwd=site, check=True)
    assert "unrouted" not in quiet.stderr


def import_unrouted(site: Path) -> None:
    (site / "a.mbox").write_bytes(mboxrd(unrouted_messages()))
    run_listlib("import", "a.mbox", cwd=site, check=True)


def test_unrouted_groups_the_mail_by_list_id_and_address_with_the_lines_that_route_it(site: Path) -> None:
    import_unrouted(site)
    result = run_listlib("unrouted", cwd=site, check=True)
    out = result.stdout
    assert out.startswith("4 messages in _no_list (not published)\n")
    assert '  users.lists.example.org: 3 messages, 2024-05-17 .. 2024-06-03, e.g. "Welcome"\n' in out
    assert '      [lists.users]\n      list_ids = ["users.lists.example.org"]\n' in out
    assert '  users@lists.example.org: 3 messages, 2024-05-17 .. 2024-06-03, e.g. "Welcome"\n' in out
    assert '      [lists.users]\n      addresses = ["users@lists.example.org"]\n' in out
    assert '  bob@example.net: 1 message, 2024-05-17 .. 2024-05-17, e.g. "Private"\n' in out
    assert '      [lists.bob]\n      addresses = ["bob@example.net"]\n' in out
    assert "dev@lists.example.org" not in out  # filed under dev, not in _no_list
    assert out.index("List-Ids:") < out.index("users.lists.example.org:") < out.index("Recipient addresses:")


def test_unrouted_json_is_for_scripts(site: Path) -> None:
    import_unrouted(site)
    data = json.loads(run_listlib("unrouted", "--json", cwd=site, check=True).stdout)
    assert data["messages"] == 4 and data["unaddressed"] == 0 and data["routable"] == {}
    (users,) = data["list_ids"]
    assert users["value"] == "users.lists.example.org" and users["messages"] == 3
    assert users["snippet"] == '[lists.users]\nlist_ids = ["users.lists.example.org"]'
    assert users["first"] < users["last"] and users["example_subject"] == "Welcome"
    assert [(a["value"], a["messages"]) for a in data["addresses"]] == [
        ("users@lists.example.org", 3),
        ("bob@example.net", 1),
    ]


def test_unrouted_shows_control_characters_of_a_subject_as_visible_symbols(site: Path) -> None:
    evil = make_message("Hi \x1b]0;owned\x07 there \x9b31m", message_id="<e@x>", to="x@example.net")
    (site / "e.mbox").write_bytes(mboxrd([evil]))
    run_listlib("import", "e.mbox", cwd=site, check=True)
    out = run_listlib("unrouted", cwd=site, check=True).stdout
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out
    assert "Hi ␛]0;owned␇ there" in out


def test_unrouted_says_when_the_configuration_now_routes_the_mail(site: Path) -> None:
    import_unrouted(site)
    with (site / "listlib.toml").open("a") as f:
        f.write('\n[lists.users]\nlist_ids = ["users.lists.example.org"]\n')
    out = run_listlib("unrouted", cwd=site, check=True).stdout
    assert "3 messages now match list users: run 'listlib unrouted --refile' to move them" in out
    assert "routed to list users now" in out


def add_users_list(site: Path) -> None:
    with (site / "listlib.toml").open("a") as f:
        f.write('\n[lists.users]\nname = "Users"\nlist_ids = ["users.lists.example.org"]\n')


def lists_in_store(site: Path) -> dict[str, int]:
    found: dict[str, int] = {}
    for path in stored_files(site / "content"):
        found[path.split("/")[0]] = found.get(path.split("/")[0], 0) + 1
    return found


def test_refile_moves_the_mail_a_new_list_matches_once_and_the_build_shows_it(site: Path) -> None:
    import_unrouted(site)
    before = stored_files(site / "content")
    add_users_list(site)
    dry = run_listlib("unrouted", "--refile", "--dry-run", cwd=site, check=True)
    assert "4 messages in _no_list: 3 would be moved (3 to users), 1 still match no list" in dry.stdout
    assert stored_files(site / "content") == before
    result = run_listlib("unrouted", "--refile", cwd=site, check=True)
    assert "4 messages in _no_list: 3 moved (3 to users), 1 still match no list" in result.stdout
    assert lists_in_store(site) == {"_no_list": 1, "dev": 1, "users": 3}
    assert sorted(stored_files(site / "content").values()) == sorted(before.values())  # bytes unchanged
    users = sorted(p for p in stored_files(site / "content") if p.startswith("users/"))
    assert [p.split("/")[1:3] for p in users] == [["2024", "05"], ["2024", "05"], ["2024", "06"]]  # months kept
    assert run_listlib("check", cwd=site, check=True).stdout.endswith("clean\n")
    again = run_listlib("import", "--json", "a.mbox", cwd=site, check=True)
    assert json.loads(again.stdout)["duplicates"] == 5
    assert lists_in_store(site) == {"_no_list": 1, "dev": 1, "users": 3}
    assert "0 moved" in run_listlib("unrouted", "--refile", cwd=site, check=True).stdout
    run_listlib("build", cwd=site, check=True)
    output = site / "output"
    assert "Users" in (output / "users" / "index.html").read_text()
    pages = [p.read_text() for p in (output / "users" / "2024").rglob("*.html")]
    assert any("Re: Welcome" in page for page in pages)
    assert not (output / "_no_list").exists()


def test_refile_removes_the_unrouted_copy_of_mail_its_list_already_has(site: Path) -> None:
    import_unrouted(site)
    add_users_list(site)
    run_listlib("import", "a.mbox", cwd=site, check=True)  # the users mail, now routed, a second time
    assert lists_in_store(site) == {"_no_list": 4, "dev": 1, "users": 3}
    result = run_listlib("unrouted", "--refile", cwd=site, check=True)
    assert "3 moved (3 to users); 3 were already in their list" in result.stdout
    assert lists_in_store(site) == {"_no_list": 1, "dev": 1, "users": 3}
    assert run_listlib("check", cwd=site, check=True).stdout.endswith("clean\n")


@pytest.mark.parametrize(
    "point",
    [
        "refile-journaled:1",
        "pending-committed:1",
        "temp-synced:1",
        "renamed:2",
        "folders-synced:1",
        "marked:1",
        "refile-filed:1",
        "refile-unlinked:1",
        "refile-unlinked:3",
        "refile-done:1",
    ],
)
def test_a_refile_killed_at_any_point_loses_nothing_and_files_nothing_twice(site: Path, point: str) -> None:
    import_unrouted(site)
    before = sorted(stored_files(site / "content").values())
    add_users_list(site)
    killed = run_listlib("unrouted", "--refile", cwd=site, env={"LISTLIB_CRASH_AT": point})
    assert killed.returncode == -signal.SIGKILL
    check = run_listlib("check", cwd=site)
    if check.returncode != 0:  # what the kill left is named, and the next run finishes it
        assert "unrouted --refile' is unfinished" in check.stderr or "pending" in check.stderr, check.stderr
    run_listlib("unrouted", "--refile", cwd=site, check=True)
    assert lists_in_store(site) == {"_no_list": 1, "dev": 1, "users": 3}
    assert sorted(stored_files(site / "content").values()) == before
    assert run_listlib("check", cwd=site, check=True).stdout.endswith("clean\n")


@pytest.mark.parametrize("point", ["refile-filed:1", "refile-unlinked:2"])
def test_any_command_that_takes_the_store_finishes_a_killed_refile(site: Path, point: str) -> None:
    import_unrouted(site)
    add_users_list(site)
    killed = run_listlib("unrouted", "--refile", cwd=site, env={"LISTLIB_CRASH_AT": point})
    assert killed.returncode == -signal.SIGKILL
    assert "unrouted --refile' is unfinished" in run_listlib("check", cwd=site).stderr
    run_listlib("import", "a.mbox", cwd=site, check=True)
    assert lists_in_store(site) == {"_no_list": 1, "dev": 1, "users": 3}
    assert run_listlib("check", cwd=site, check=True).stdout.endswith("clean\n")


def set_publish_unrouted(site: Path, on: bool) -> None:
    toml = site / "listlib.toml"
    text = toml.read_text().replace("publish_unrouted = true\n", "")
    if on:
        text = text.replace("[site]\n", "[site]\npublish_unrouted = true\n", 1)
    toml.write_text(text)


def test_publish_unrouted_builds_pages_for_the_unsorted_mail_and_turning_it_off_removes_them(site: Path) -> None:
    import_unrouted(site)
    run_listlib("build", cwd=site, check=True)
    output = site / "output"
    assert not (output / "_no_list").exists()
    assert "Unsorted mail" not in (output / "index.html").read_text()
    set_publish_unrouted(site, True)
    run_listlib("build", cwd=site, check=True)
    assert "Unsorted mail" in (output / "index.html").read_text()
    assert "Unsorted mail" in (output / "_no_list" / "index.html").read_text()
    pages = "".join(p.read_text() for p in (output / "_no_list").rglob("*.html"))
    assert "Private" in pages and "Re: Welcome" in pages
    assert "For dev" not in pages
    hits = json.loads(run_listlib("search", "--json", "Private", cwd=site, check=True).stdout)
    assert [hit["list"] for hit in hits["hits"]] == ["_no_list"]
    nothing = run_listlib("build", "--json", cwd=site, check=True)
    assert json.loads(nothing.stdout)["written"] == 0
    set_publish_unrouted(site, False)
    run_listlib("build", cwd=site, check=True)
    assert not (output / "_no_list").exists()
    assert "Unsorted mail" not in (output / "index.html").read_text()
    assert json.loads(run_listlib("search", "--json", "Private", cwd=site, check=True).stdout)["total"] == 0
    run_listlib("build", "--clean", cwd=site, check=True)
    assert not (output / "_no_list").exists()


def test_a_published_unrouted_message_moves_to_its_list_when_refiled(site: Path) -> None:
    import_unrouted(site)
    set_publish_unrouted(site, True)
    run_listlib("build", cwd=site, check=True)
    add_users_list(site)
    run_listlib("unrouted", "--refile", cwd=site, check=True)
    run_listlib("build", cwd=site, check=True)
    output = site / "output"
    unsorted = "".join(p.read_text() for p in (output / "_no_list").rglob("*.html"))
    assert "Private" in unsorted and "Welcome" not in unsorted
    assert "Re: Welcome" in "".join(p.read_text() for p in (output / "users").rglob("*.html"))
    lookup = (output / message_id_path("u2@x")).read_text()
    assert "users/2024/05/" in lookup and "_no_list" not in lookup


def test_publish_unrouted_must_be_true_or_false(site: Path) -> None:
    toml = site / "listlib.toml"
    toml.write_text(toml.read_text().replace("[site]\n", '[site]\npublish_unrouted = "yes"\n'))
    result = run_listlib("build", cwd=site)
    assert result.returncode == 1 and "site.publish_unrouted: expected true or false" in result.stderr
