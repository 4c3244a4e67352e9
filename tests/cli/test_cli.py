"""The command line as users meet it: real subprocesses, exit codes, messages, no tracebacks."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..support.helpers import REPO, early_pipermail, make_message, mboxrd, run_listlib, stored_files, subprocess_env


def assert_clean_error(result, *needles: str) -> None:  # type: ignore[no-untyped-def]
    assert result.returncode != 0
    assert "Traceback" not in result.stderr + result.stdout
    for needle in needles:
        assert needle in result.stderr, result.stderr


def test_help_for_every_command(tmp_path: Path) -> None:
    for args in ([], ["init"], ["import"], ["check"], ["publish"]):
        result = run_listlib(*args, "--help", cwd=tmp_path)
        assert result.returncode == 0 and "Usage: listlib" in result.stdout


def test_init_writes_a_working_skeleton_and_refuses_to_overwrite(tmp_path: Path) -> None:
    result = run_listlib("init", "newsite", "--title", "My lists", cwd=tmp_path, check=True)
    assert "created" in result.stdout
    site = tmp_path / "newsite"
    assert (site / "content").is_dir() and (site / "themes").is_dir()
    assert 'title = "My lists"' in (site / "listlib.toml").read_text()
    assert run_listlib("check", cwd=site, check=True).stdout.endswith("clean\n")
    assert_clean_error(run_listlib("init", "newsite", cwd=tmp_path), "already exists")


def test_import_prints_a_summary_that_adds_up(site: Path) -> None:
    (site / "a.mbox").write_bytes(mboxrd([make_message(message_id=f"<{i % 4}@x>") for i in range(6)]))
    result = run_listlib("import", "a.mbox", cwd=site, check=True)
    assert result.stdout.strip().endswith("4 filed (0 Message-ID collisions, 0 to _no_list), 2 duplicates, 0 failed")
    data = json.loads(run_listlib("import", "--json", "a.mbox", cwd=site, check=True).stdout)
    assert (data["messages"], data["filed"], data["duplicates"], data["failed"]) == (6, 0, 6, 0)
    assert result.stderr == ""  # no progress bar when not on a terminal


def test_early_pipermail_archive_files_every_message_separately(site: Path) -> None:
    # Mailman 2's early Pipermail dated its separators the RFC 2822 way; listlib once filed
    # each such month as one "no-headers" failure.
    dates = [
        "Thu, 1 Jul 1999 06:06:56 -0400 (EDT)",
        "Fri, 2 Jul 1999 07:00:00 +0000 (GMT)",
        "Sat, 3 Jul 1999 08:00:00 -0700 (PDT)",
    ]
    body = "From what I can see, this is body text.\nFrom: not a header either\n"
    july = [make_message(f"july {i}", body, message_id=f"<j{i}@x>", date=d) for i, d in enumerate(dates)]
    august = [make_message("august", message_id=f"<a{i}@x>", date=f"{i + 1} Aug 1999 09:00:00 GMT") for i in range(3)]
    archive = site / "archive"
    archive.mkdir()
    (archive / "1999-July.txt").write_bytes(early_pipermail(july, dates))
    (archive / "1999-August.txt.gz").write_bytes(
        gzip.compress(early_pipermail(august, [f"Sun, {i + 1} Aug 1999 09:00:00 GMT" for i in range(3)]))
    )
    data = json.loads(run_listlib("import", "--json", "archive", cwd=site, check=True).stdout)
    assert (data["messages"], data["filed"], data["failed"]) == (6, 6, 0), data["failures"]
    stored = stored_files(site / "content")
    assert sorted(stored.values()) == sorted(july + august)
    assert sorted({path.rsplit("/", 1)[0] for path in stored}) == ["dev/1999/07", "dev/1999/08"]


def test_a_failed_blob_with_separator_like_lines_says_so(site: Path) -> None:
    # A separator shape listlib does not know makes a whole file one message: the
    # reason must show at once that it held several.
    blob = b"".join(
        b"From ann@example.org 1999-07-0%d 06:06:56\n" % i + make_message(message_id=f"<{i}@x>") + b"\n"
        for i in range(1, 4)
    )
    (site / "1999-July.txt").write_bytes(blob)
    data = json.loads(run_listlib("import", "--json", "1999-July.txt", cwd=site, check=True).stdout)
    assert (data["messages"], data["failed"]) == (1, 1)
    [failure] = data["failures"]
    assert failure["reason"] == "no-headers"
    assert "3 lines that look like mbox separators" in failure["detail"]
    [sidecar] = (site / "content" / "_failed").glob("*.json")
    meta = json.loads(sidecar.read_text())
    assert (meta["reason"], meta["detail"]) == ("no-headers", failure["detail"])
    assert (site / "content" / "_failed" / f"{sidecar.stem}.eml").read_bytes() == blob
    text = run_listlib("import", "1999-July.txt", cwd=site, check=True).stderr
    assert "look like mbox separators" not in text  # a duplicate now: nothing failed
    (site / "b.txt").write_bytes(blob.replace(b"<", b"<b"))
    assert "3 lines that look like mbox separators" in run_listlib("import", "b.txt", cwd=site, check=True).stderr


def test_dry_run_writes_nothing(site: Path) -> None:
    (site / "a.mbox").write_bytes(mboxrd([make_message()]))
    result = run_listlib("import", "--dry-run", "a.mbox", cwd=site, check=True)
    assert "1 would be filed" in result.stdout
    assert stored_files(site / "content") == {}


UNKNOWN_NOPE = "unknown list slug 'nope' (configured lists: dev, announce)"


@pytest.mark.parametrize(
    ("setup", "args", "needle"),
    [
        (None, ["import", "missing.mbox"], "missing.mbox: no such file or folder"),
        ("emptydir", ["import", "emptydir"], "emptydir: no mail found"),
        ("notmail", ["import", "notmail"], "notmail: no mail found"),
        (None, ["import", "--list", "nope", "."], UNKNOWN_NOPE),
        # Every command with --list names an unknown list in the same words.
        (None, ["threads", "--list", "nope"], UNKNOWN_NOPE),
        (None, ["search", "--list", "nope", "x"], UNKNOWN_NOPE),
        (None, ["bounces", "--list", "nope"], UNKNOWN_NOPE),
        (None, ["hide", "--list", "nope", "--reason", "x"], UNKNOWN_NOPE),
        (None, ["remove", "--list", "nope", "--show-quotes"], UNKNOWN_NOPE),
    ],
)
def test_user_errors_are_one_clear_line(site: Path, setup: str | None, args: list[str], needle: str) -> None:
    if setup == "emptydir":
        (site / "emptydir").mkdir()
    elif setup == "notmail":
        (site / "notmail").mkdir()
        (site / "notmail" / "README.md").write_text("# not mail\n")
    assert_clean_error(run_listlib(*args, cwd=site), needle)


def test_config_problems_are_listed_with_key_paths(site: Path) -> None:
    (site / "listlib.toml").write_text('[site]\ntitle = "x"\nbase_url = "nope"\n[lists.dev]\naddresses = ["dev"]\n')
    result = run_listlib("import", "x.mbox", cwd=site)
    assert_clean_error(
        result,
        "site.base_url: 'nope' is not an absolute http(s) URL",
        "lists.dev.addresses[0]: 'dev' is not an email address",
    )
    (site / "listlib.toml").write_text("[site\n")
    assert_clean_error(run_listlib("check", cwd=site), "TOML syntax error")


def test_missing_config_says_what_to_do(tmp_path: Path) -> None:
    assert_clean_error(run_listlib("check", cwd=tmp_path), "no listlib.toml", "listlib init")


def test_unknown_config_keys_are_errors_with_the_nearest_spelling(site: Path) -> None:
    (site / "listlib.toml").write_text((site / "listlib.toml").read_text() + "\n[serve]\nport = 1\n")
    assert_clean_error(
        run_listlib("check", cwd=site), "serve: unknown table (known: build, classes, delivery, imap, lists, pop3,"
    )
    (site / "listlib.toml").write_text('[site]\ntitle = "x"\nbase_ulr = "https://a.example/"\n')
    assert_clean_error(
        run_listlib("build", cwd=site),
        "site.base_ulr: unknown key (did you mean base_url?)",
        "site.base_url: is required",
    )


def test_a_typo_in_a_list_table_unpublishes_nothing_and_publish_false_does(site: Path) -> None:
    (site / "a.mbox").write_bytes(mboxrd([make_message(to="announce@lists.example.org")]))
    run_listlib("import", "a.mbox", cwd=site, check=True)
    run_listlib("build", cwd=site, check=True)
    pages = sorted(p for p in (site / "output/announce").rglob("*") if p.is_file())
    assert pages
    config = (site / "listlib.toml").read_text()
    (site / "listlib.toml").write_text(config.replace("[lists.announce]", "[list.announce]"))
    assert_clean_error(run_listlib("build", cwd=site), "list: unknown table (did you mean lists?)")
    assert sorted(p for p in (site / "output/announce").rglob("*") if p.is_file()) == pages
    # A misspelt slug is a valid new list, and the real one looks removed: still refused,
    # because its mail is in the store.
    (site / "listlib.toml").write_text(config.replace("[lists.announce]", "[lists.anounce]"))
    for command in (["build"], ["build", "--plan"], ["build", "--clean"]):
        assert_clean_error(run_listlib(*command, cwd=site), "list 'announce' is published", "publish = false")
        assert sorted(p for p in (site / "output/announce").rglob("*") if p.is_file()) == pages
    (site / "listlib.toml").write_text(config.split("[lists.announce]")[0])
    assert_clean_error(run_listlib("build", cwd=site), "no [lists.announce] table")
    # Taking the pages down on purpose: the table stays, with publish = false.
    (site / "listlib.toml").write_text(config.replace("[lists.announce]\n", "[lists.announce]\npublish = false\n"))
    run_listlib("build", cwd=site, check=True)
    assert not (site / "output/announce").exists()
    assert stored_files(site / "content")  # the mail stays filed
    # Once unpublished and built, the table can go: nothing of the list is published any more.
    (site / "listlib.toml").write_text(config.split("[lists.announce]")[0])
    run_listlib("build", cwd=site, check=True)


def test_check_reports_problems_as_json_and_repair_fixes_them(site: Path) -> None:
    (site / "a.mbox").write_bytes(mboxrd([make_message(message_id=f"<{i}@x>") for i in range(3)]))
    run_listlib("import", "a.mbox", cwd=site, check=True)
    victim = next(p for p in (site / "content" / "dev").rglob("*.eml"))
    victim.unlink()
    result = run_listlib("check", "--json", cwd=site)
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert not report["ok"] and "in the index but the file is missing" in report["problems"][0]
    repaired = run_listlib("check", "--repair", cwd=site, check=True)
    assert "rebuilt the index: 2 messages" in repaired.stdout


def test_bundled_sample_site_works_from_a_fresh_clone(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    shutil.copytree(REPO / "content", clone / "content", ignore=shutil.ignore_patterns(".index", ".tmp", ".lock"))
    shutil.copytree(REPO / "sample", clone / "sample")
    shutil.copy(REPO / "listlib.toml", clone / "listlib.toml")
    before = stored_files(clone / "content")
    assert len(before) == 28
    check = run_listlib("check", cwd=clone, check=True)
    assert check.stdout.strip().endswith("28 messages in " + str(clone / "content") + ": clean")
    result = run_listlib("import", "--json", "sample", cwd=clone, check=True)
    data = json.loads(result.stdout)
    assert (data["messages"], data["duplicates"], data["filed"]) == (28, 28, 0)
    assert stored_files(clone / "content") == before


def test_corrupt_compressed_source_names_the_file_and_keeps_what_was_filed(site: Path) -> None:
    import gzip

    messages = [make_message(message_id=f"<{i}@x>", body=f"message {i} " * 400 + "\n") for i in range(400)]
    whole = gzip.compress(mboxrd(messages))
    (site / "broken.mbox.gz").write_bytes(whole[: len(whole) * 3 // 4])
    result = run_listlib("import", "broken.mbox.gz", cwd=site)
    assert_clean_error(result, "broken.mbox.gz: cannot be read")
    assert run_listlib("check", cwd=site).returncode == 0
    filed_before_the_break = len(stored_files(site / "content"))
    assert 200 < filed_before_the_break < 400
    (site / "broken.mbox.gz").write_bytes(whole)
    rerun = json.loads(run_listlib("import", "--json", "broken.mbox.gz", cwd=site, check=True).stdout)
    assert rerun["filed"] + rerun["duplicates"] == 400
    assert len(stored_files(site / "content")) == 400


def test_unwritable_store_is_a_clear_error(site: Path) -> None:
    (site / "blocker").write_text("a file where a folder should be")
    text = (site / "listlib.toml").read_text().replace("[site]\n", '[site]\ncontent_dir = "blocker/content"\n')
    (site / "listlib.toml").write_text(text)
    (site / "a.mbox").write_bytes(mboxrd([make_message()]))
    assert_clean_error(run_listlib("import", "a.mbox", cwd=site), "blocker")


def test_import_from_standard_input_for_mta_delivery(site: Path) -> None:
    import subprocess
    import sys

    from ..support.helpers import subprocess_env

    message = make_message(message_id="<piped@x>")
    for _ in range(2):
        result = subprocess.run(
            [sys.executable, "-m", "listlib", "import", "--json", "-"],
            input=message,
            cwd=site,
            capture_output=True,
            env=subprocess_env(),
            check=True,
        )
    data = json.loads(result.stdout)
    assert (data["messages"], data["duplicates"]) == (1, 1)
    assert list(stored_files(site / "content").values()) == [message]


def test_a_damaged_index_is_reported_and_repair_rebuilds_it(site: Path) -> None:
    (site / "a.mbox").write_bytes(mboxrd([make_message(message_id=f"<{i}@x>") for i in range(3)]))
    run_listlib("import", "a.mbox", cwd=site, check=True)
    index = site / "content" / ".index" / "index.sqlite"
    for suffix in ("-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    index.write_bytes(b"this is not a database" * 100)
    assert_clean_error(run_listlib("check", cwd=site), "the index is damaged", "check --repair")
    repaired = run_listlib("check", "--repair", cwd=site, check=True)
    assert "rebuilt the index: 3 messages" in repaired.stdout
    assert run_listlib("import", "--json", "a.mbox", cwd=site, check=True).stdout.count('"duplicates": 3') == 1


def test_commands_started_together_on_a_fresh_site_all_succeed(site: Path) -> None:
    """Imports and checks that race to create the store and its index."""
    import subprocess
    import sys

    from ..support.helpers import subprocess_env

    (site / "a.mbox").write_bytes(mboxrd([make_message(message_id=f"<{i}@x>") for i in range(50)]))
    for _ in range(3):
        shutil.rmtree(site / "content", ignore_errors=True)
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "listlib", *args],
                cwd=site,
                env=subprocess_env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for args in (["import", "a.mbox"], ["check"], ["import", "a.mbox"], ["check"])
        ]
        for proc in procs:
            _out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
        assert len(stored_files(site / "content")) == 50


def test_import_with_build_files_the_mail_then_brings_the_site_up_to_date(site: Path) -> None:
    import subprocess
    import sys

    from ..build.test_build import tree
    from ..support.helpers import subprocess_env

    message = make_message(message_id="<piped@x>", subject="Piped and published")
    runs = [
        subprocess.run(
            [sys.executable, "-m", "listlib", "import", "--build", "--json", "-"],
            input=message,
            cwd=site,
            capture_output=True,
            env=subprocess_env(),
            check=True,
        )
        for _ in range(2)
    ]
    first, again = (json.loads(run.stdout) for run in runs)
    assert (first["filed"], first["build"]["jobs_unchanged"]) == (1, 0) and first["build"]["written"] > 0
    assert (again["duplicates"], again["build"]["written"], again["build"]["removed"]) == (1, 0, 0)
    pages = [p for p in (site / "output" / "dev").rglob("*.html") if b"Piped and published" in p.read_bytes()]
    assert pages, "the thread is published by the import itself"
    # The same site a full build makes: nothing to write, byte for byte.
    built = tree(site / "output")
    assert json.loads(run_listlib("build", "--json", cwd=site, check=True).stdout)["written"] == 0
    run_listlib("build", "--clean", cwd=site, check=True)
    assert tree(site / "output") == built
    # Without --json: the import's summary, then the build's.
    (site / "b.mbox").write_bytes(mboxrd([make_message(message_id="<second@x>")]))
    lines = run_listlib("import", "--build", "b.mbox", cwd=site, check=True).stdout.splitlines()
    assert lines[0].endswith("1 filed (0 Message-ID collisions, 0 to _no_list), 0 duplicates, 0 failed")
    assert " files written, " in lines[1] and len(lines) == 2


def test_import_with_build_keeps_the_mail_when_the_build_fails(site: Path) -> None:
    (site / "output").write_text("a file where the website should go\n")
    (site / "a.mbox").write_bytes(mboxrd([make_message(message_id="<kept@x>")]))
    result = run_listlib("import", "--build", "a.mbox", cwd=site)
    assert_clean_error(result, "output")
    assert "1 filed" in result.stdout
    assert len(stored_files(site / "content")) == 1
    assert_clean_error(run_listlib("import", "--build", "--dry-run", "a.mbox", cwd=site), "--build", "--dry-run")


def test_the_process_ends_at_once_but_never_cuts_off_a_thread_still_running(tmp_path: Path) -> None:
    import subprocess
    import sys

    from ..support.helpers import subprocess_env

    def leave(setup: str) -> subprocess.CompletedProcess[str]:
        code = f"import threading, time\nfrom listlib.cli import _leave\n{setup}\nprint('done')\n_leave(3)\n"
        return subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, env=subprocess_env(), capture_output=True, text=True
        )

    quick = leave("")
    assert (quick.returncode, quick.stdout) == (3, "done\n")  # buffered output is flushed
    waited = leave("threading.Thread(target=lambda: (time.sleep(0.3), print('late', flush=True))).start()")
    assert (waited.returncode, waited.stdout) == (3, "done\nlate\n")


def _without_root_powers() -> list[str]:
    """A command prefix under which a mode-000 file is unreadable, even for root."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root reads any file, and setpriv (to drop that power) is not installed")
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--bounding-set={caps}", f"--inh-caps={caps}"]


def test_one_unreadable_file_in_a_maildir_is_reported_and_everything_else_filed(site: Path) -> None:
    (site / "first.mbox").write_bytes(mboxrd([make_message(message_id="<before@x>")]))
    maildir = site / "md"
    for name in ("cur", "new", "tmp"):
        (maildir / name).mkdir(parents=True)
    for n in range(4):
        (maildir / "cur" / f"{n}:2,S").write_bytes(make_message(message_id=f"<md{n}@x>"))
    secret = maildir / "cur" / "secret:2,S"
    secret.write_bytes(make_message(message_id="<secret@x>"))
    secret.chmod(0)
    result = subprocess.run(
        [*_without_root_powers(), sys.executable, "-m", "listlib", "import", "--json", "first.mbox", "md"],
        cwd=site,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "Error: md/cur/secret:2,S: permission denied" in result.stderr.splitlines()
    report = json.loads(result.stdout)
    assert report["filed"] == 5
    assert report["unreadable"] == [{"path": "md/cur/secret:2,S", "reason": "permission denied"}]
    assert len(stored_files(site / "content")) == 5
    secret.chmod(0o644)
    again = run_listlib("import", "first.mbox", "md", cwd=site, check=True)
    assert again.stdout.strip().endswith("1 filed (0 Message-ID collisions, 0 to _no_list), 5 duplicates, 0 failed")


@pytest.mark.parametrize("point", ["temp-synced", "renamed"])
def test_check_after_a_killed_import_says_the_pending_batch_is_finished_by_the_next_run(site: Path, point: str) -> None:
    messages = [make_message(message_id=f"<k{i}@x>", body=f"body {i}\n") for i in range(300)]
    (site / "in.mbox").write_bytes(mboxrd(messages))
    killed = run_listlib("import", "in.mbox", cwd=site, env={"LISTLIB_CRASH_AT": f"{point}:1"})
    assert killed.returncode == -9
    check = run_listlib("check", "--json", cwd=site)
    report = json.loads(check.stdout)
    assert not report["ok"]
    # One line that says what happened and what to do, not one line per pending row.
    assert len(report["problems"]) == 1, report["problems"]
    assert "interrupted import or fetch left 300 messages pending" in report["problems"][0]
    assert "listlib import" in report["problems"][0]
    assert len(report["leftovers"]) <= 1
    run_listlib("import", "in.mbox", cwd=site, check=True)
    assert json.loads(run_listlib("check", "--json", cwd=site, check=True).stdout)["ok"]
    assert len(stored_files(site / "content")) == 300
