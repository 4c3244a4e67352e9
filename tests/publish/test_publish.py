"""``listlib publish`` against a real S3 API on 127.0.0.1 (moto's server mode): the bucket
holds output/ byte for byte with the right headers; a new message puts only what
changed; a removed message's objects go on the publish after next; nothing changed puts
nothing; a kill -9 at any point then a re-run converges; bad credentials, a missing
bucket and an unreachable endpoint are one clear line and exit 1."""

from __future__ import annotations

import gzip
import itertools
import json
import posixpath
import re
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import pytest

from listlib.config import Config, load_config
from listlib.fsutil import release_lock
from listlib.manifest import load_manifest
from listlib.plan.state import lock_output
from listlib.publish.local import LocalCopy
from listlib.publish.plan import INTENT_NAME, RECORD_NAME, Record, content_disposition, object_type, redirect_target
from listlib.publish.run import publish_target
from listlib.publish.shards import SHARD_DIR, assemble, parse_root, parse_shard
from listlib.search.segment import meta_name

from ..support.helpers import REPO, make_message, mboxrd, run_listlib
from ..support.linkcheck import check_links, parse_page
from ..support.s3server import CREDENTIALS, S3Server, flaky_proxy, moto_s3

_names = itertools.count()


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with moto_s3() as server:
        yield server


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample site, imported and built once (tests copy it)."""
    root = tmp_path_factory.mktemp("sample") / "site"
    root.mkdir()
    shutil.copy(REPO / "listlib.toml", root / "listlib.toml")
    run_listlib("import", REPO / "sample", cwd=root, check=True)
    run_listlib("build", "-q", cwd=root, check=True)
    return root


@pytest.fixture
def site(built: Path, tmp_path: Path, s3: S3Server) -> Path:
    """A copy of the built sample site whose [publish] target is a fresh bucket."""
    root = tmp_path / "site"
    shutil.copytree(built, root, symlinks=True)
    bucket = s3.new_bucket(f"site-{next(_names)}")
    with (root / "listlib.toml").open("a") as file:
        file.write(f'\n[publish]\ntarget = "s3://{bucket}/archive"\nendpoint_url = "{s3.url}"\nregion = "us-east-1"\n')
    return root


def bucket_of(site: Path) -> str:
    config = load_config(site / "listlib.toml")
    assert config.publish is not None
    return config.publish.bucket


def publish(
    site: Path, *args: str, env: dict[str, str] | None = None, endpoint: str | None = None
) -> dict[str, object]:
    if endpoint is not None:
        config = (site / "listlib.toml").read_text()
        (site / "listlib.toml").write_text(re.sub(r'endpoint_url = "[^"]*"', f'endpoint_url = "{endpoint}"', config))
    result = run_listlib("publish", "--json", *args, cwd=site, env={**CREDENTIALS, **(env or {})})
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def output_files(site: Path) -> dict[str, bytes]:
    output = site / "output"
    return {str(path.relative_to(output)): path.read_bytes() for path in output.rglob("*") if path.is_file()}


def record_in(objects: dict[str, dict[str, Any]]) -> Record:
    """The record a bucket's objects hold: its root and the shards the root names."""
    root = parse_root(objects[RECORD_NAME]["body"], "test")
    if isinstance(root, Record):
        return root
    return assemble(root, (parse_shard(objects[name]["body"], name) for name in root.names.values()))


def held(objects: dict[str, dict[str, Any]]) -> set[str]:
    """The keys of the objects, the record's shards left out: there must be exactly those
    its root names (no shard left over)."""
    root = parse_root(objects[RECORD_NAME]["body"], "test")
    shards = {key for key in objects if key.startswith(f"{SHARD_DIR}/")}
    assert not isinstance(root, Record) and shards == set(root.names.values()), shards ^ set(root.names.values())
    return set(objects) - shards


def add_message(site: Path, subject: str, message_id: str) -> None:
    mbox = site / f"{next(_names)}.mbox"
    mbox.write_bytes(mboxrd([make_message(subject, message_id=message_id, to="dev@lists.example.org")]))
    run_listlib("import", mbox, cwd=site, check=True)
    run_listlib("build", "-q", cwd=site, check=True)


def remove_first_dev_message(site: Path) -> str:
    """Take down the first dev message (``listlib remove``) and build; its raw file's path."""
    manifest = load_manifest(load_config(site / "listlib.toml"))
    raw = sorted(path for path in manifest if path.startswith("dev/") and path.endswith(".eml"))[0]
    call = raw.rsplit("/", 1)[1].removesuffix(".eml")
    run_listlib("remove", call, "--reason", "privacy request", "--build", "-q", cwd=site, check=True)
    return raw


def assert_whole(
    s3: S3Server, bucket: str, prefix: str, site: Path, mirror: Path, known: dict[str, bytes] | None = None
) -> None:
    """What a reader can meet in the bucket now is whole: every page reachable from a URL
    published before (the bucket's record names them) links only to objects there, and
    the search manifest's segments are all there. New pages a publish has put but
    nothing published links to yet may still link to each other's missing pages (a new
    message page and its new month index link to each other: one of them goes first)."""
    shutil.rmtree(mirror, ignore_errors=True)
    objects = s3.objects(bucket, prefix) if known is None else s3.bodies(bucket, prefix, known)
    for path, found in objects.items():
        (mirror / path).parent.mkdir(parents=True, exist_ok=True)
        (mirror / path).write_bytes(found["body"])
    record = record_in(objects)
    entries = [path for path in [*record.files, *record.pending] if path.endswith(".html") and path in objects]
    reachable: set[str] = set()
    while entries:
        path = entries.pop()
        if path in reachable:
            continue
        reachable.add(path)
        for link in parse_page(mirror / path).links:
            target = posixpath.normpath(posixpath.join(posixpath.dirname(path), unquote(urlsplit(link).path)))
            if target.endswith(".html") and target in objects and "://" not in link:
                entries.append(target)
    broken = [problem for problem in check_links(mirror) if problem.split(" -> ")[0] in reachable]
    assert broken == [], prefix
    manifest = json.loads(objects["search/manifest.json"]["body"])
    for segment in manifest["segments"]:
        there = {path for path in objects if path.startswith(f"search/seg/{segment['id']}/")}
        built = site / "output" / "search" / "seg" / segment["id"]
        expected = {f"search/seg/{segment['id']}/{f.name}" for f in built.iterdir()} if built.is_dir() else set()
        meta = f"search/seg/{segment['id']}/{meta_name(segment.get('rev', 0))}"
        assert meta in there and expected <= there, (prefix, segment["id"])


def record_of(s3: S3Server, bucket: str) -> Record:
    return record_in(s3.objects(bucket, "archive/"))


def test_the_bucket_holds_output_byte_for_byte_with_the_right_headers(site: Path, s3: S3Server) -> None:
    report = publish(site)
    files = output_files(site)
    assert report["uploaded"] == len(files) and report["unchanged"] == 0 and report["deleted"] == 0
    objects = s3.objects(bucket_of(site), "archive/")
    assert held(objects) == set(files) | {RECORD_NAME}
    for path, data in files.items():
        assert objects[path]["body"] == data, path
        assert objects[path]["type"] == object_type(path), path
        assert objects[path]["encoding"] is None, path
    kinds = {
        ".html": "text/html; charset=utf-8",
        ".atom": "application/atom+xml; charset=utf-8",
        ".json": "application/json",
        ".js": "text/javascript; charset=utf-8",
        ".css": "text/css; charset=utf-8",
        ".eml": "message/rfc822",
        ".mbox.gz": "application/gzip",
        ".txt": "text/plain; charset=utf-8",
        ".patch": "text/plain; charset=utf-8",
        ".bin": "application/octet-stream",
        ".xml": "application/xml; charset=utf-8",
    }
    for suffix, expected in kinds.items():
        paths = [path for path in files if path.endswith(suffix)]
        assert paths, f"the sample site has no {suffix} file"
        assert {objects[path]["type"] for path in paths} == {expected}, suffix
    segment = next(path for path in files if path.startswith("search/seg/"))
    assert "immutable" in objects[segment]["cache"] and "max-age=31536000" in objects[segment]["cache"]
    for short in ("index.html", "dev/feed.atom", "search/manifest.json"):
        assert objects[short]["cache"] == "public, max-age=300", short
    # attachments say how to show them; redirect pages carry their 301 to a published object
    attachments = [path for path in files if content_disposition(path)]
    assert attachments, "the sample site has no attachment"
    for path in files:
        assert objects[path]["disposition"] == content_disposition(path), path
    redirects = {path: objects[path]["redirect"] for path in files if objects[path]["redirect"]}
    pages = [path for path in files if path.endswith(".html") and redirect_target(path, files[path])]
    assert pages and sorted(redirects) == sorted(pages)
    for path, location in redirects.items():
        assert location == "/archive/" + redirect_target(path, files[path]), path
        target = unquote(location.removeprefix("/archive/").partition("#")[0])
        assert target.endswith(".html") and target in objects, (path, location)
    # the record names every file with the build's digest
    record = record_of(s3, bucket_of(site))
    manifest = load_manifest(load_config(site / "listlib.toml"))
    assert record.files == manifest and not record.pending


def test_a_publish_waits_for_the_build_lock(site: Path, s3: S3Server) -> None:
    """A build and a publish never overlap: a publish started while the lock is held
    (as a build holds it) waits, then goes up whole."""
    config = load_config(site / "listlib.toml")
    bucket = bucket_of(site)
    lock = lock_output(config.site.cache_dir)
    before = len(s3.requests("PUT", f"/{bucket}/"))  # the bucket's creation
    puts_while_held: list[int] = []

    def release_later() -> None:
        time.sleep(3.0)
        puts_while_held.append(len(s3.requests("PUT", f"/{bucket}/")) - before)
        release_lock(lock)

    holder = threading.Thread(target=release_later)
    holder.start()
    try:
        report = publish(site)
    finally:
        holder.join()
    assert puts_while_held == [0]
    assert report["uploaded"] == len(output_files(site))


def test_nothing_changed_puts_nothing(site: Path, s3: S3Server) -> None:
    publish(site)
    mark = s3.mark()
    report = publish(site)
    under = f"/{bucket_of(site)}/"
    assert report["uploaded"] == 0 and report["unchanged"] == len(output_files(site))
    assert s3.since(mark, "PUT", under) == [] and s3.since(mark, "DELETE", under) == []
    assert s3.since(mark, "POST", under) == []
    # with the cached record a no-change publish reads only a "not modified" root (which
    # would name the intent of an interrupted publish)
    assert len(s3.since(mark, "GET", under)) == 1
    assert [status for _, path, status in s3.log.requests[mark:] if path.startswith(under)] == [304]


def test_nothing_new_reads_neither_the_manifest_nor_the_record(
    site: Path, s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A publish after a publish with only builds of nothing between (a cron job's usual
    run) asks the bucket one question and reads no record: the manifest's token and the
    root's ETag say enough. Any change the build made, or another publisher's, is not
    taken for nothing (the tests around this one)."""
    from listlib.publish import run

    publish(site)
    run_listlib("build", "-q", cwd=site, check=True)  # nothing to do: the same manifest
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)

    def unread(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("read")

    config = load_config(site / "listlib.toml")
    assert config.publish is not None
    with monkeypatch.context() as patch:
        patch.setattr(run, "load_manifest", unread)
        patch.setattr(run.LocalCopy, "load", unread)
        mark = s3.mark()
        report = run.publish_site(config, config.publish)
    assert report.uploaded == 0 and report.unchanged == len(output_files(site)) and report.deleted == 0
    assert [status for _, path, status in s3.log.requests[mark:] if path.startswith(f"/{bucket_of(site)}/")] == [304]
    # --verify lists the bucket, whatever the token says
    with monkeypatch.context() as patch:
        patch.setattr(run, "load_manifest", unread)
        with pytest.raises(AssertionError, match="read"):
            run.publish_site(config, config.publish, verify=True)


def test_after_a_killed_build_a_publish_is_one_clear_line_and_puts_nothing(site: Path, s3: S3Server) -> None:
    """Whatever the last publish noted: the files of an unfinished build are not published."""
    publish(site)
    mbox = site / "new.mbox"
    mbox.write_bytes(mboxrd([make_message("Cut short", message_id="<cut@example.org>", to="dev@lists.example.org")]))
    run_listlib("import", mbox, cwd=site, check=True)
    killed = run_listlib("build", "-q", cwd=site, env={"LISTLIB_CRASH_AT": "job-done:1"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    mark = s3.mark()
    result = run_listlib("publish", cwd=site, env=CREDENTIALS)
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert "the last build did not finish" in result.stderr
    assert s3.since(mark, "PUT", f"/{bucket_of(site)}/") == []
    run_listlib("build", "-q", cwd=site, check=True)
    assert publish(site)["uploaded"] > 0


def test_new_cache_control_rules_put_every_file_again(site: Path, s3: S3Server) -> None:
    publish(site)
    with (site / "listlib.toml").open("a") as file:
        file.write('\n[publish.cache_control]\npages = "no-cache"\n')
    report = publish(site)
    assert report["uploaded"] == len(output_files(site))
    head = s3.client.head_object(Bucket=bucket_of(site), Key="archive/index.html")
    assert head["CacheControl"] == "no-cache"
    assert publish(site)["uploaded"] == 0


def test_a_new_message_puts_only_the_objects_that_changed(site: Path, s3: S3Server) -> None:
    publish(site)
    config = load_config(site / "listlib.toml")
    before = load_manifest(config)
    add_message(site, "A brand new thread", "<new-1@example.org>")
    after = load_manifest(config)
    changed = {path for path, value in after.items() if before.get(path) != value}
    assert changed and any(path.endswith(".eml") for path in changed)
    mark = s3.mark()
    report = publish(site)
    prefix = f"/{bucket_of(site)}/archive/"
    put = [path.removeprefix(prefix) for path in s3.since(mark, "PUT", prefix)]
    requests = [path for _, path, _ in s3.log.requests[mark:] if path.startswith(f"/{bucket_of(site)}/")]
    assert len(requests) == len(changed) + 3, "one GET and two PUTs of the root besides the files"
    assert sorted(put[1:-1]) == sorted(changed), "each changed object once"
    # the root first (the record as it was, naming the new objects), the new record last;
    # the changes go in the root's delta: no shard of the record is written again
    assert put[0] == RECORD_NAME and put[-1] == RECORD_NAME, "the intent first, the record last"
    root = parse_root(s3.objects(bucket_of(site), "archive/")[RECORD_NAME]["body"], "test")
    assert not isinstance(root, Record) and set(root.delta.files) == changed and not root.intent
    bucket = f"/{bucket_of(site)}/"
    assert s3.since(mark, "DELETE", prefix) == [] and s3.since(mark, "POST", bucket) == []
    assert put.index("search/manifest.json") == len(put) - 2 if "search/manifest.json" in changed else True
    assert report["uploaded"] == len(changed) and report["unchanged"] == len(after) - len(changed)
    removed = set(before) - set(after)
    assert report["pending"] == len(removed) and s3.since(mark, "DELETE", prefix) == []
    objects = s3.objects(bucket_of(site), "archive/")
    for path, data in output_files(site).items():
        assert objects[path]["body"] == data, path


def test_new_objects_go_up_before_the_pages_linking_to_them(site: Path, s3: S3Server) -> None:
    publish(site)
    add_message(site, "Ordering check", "<order-1@example.org>")
    mark = s3.mark()
    publish(site)
    prefix = f"/{bucket_of(site)}/archive/"
    put = [path.removeprefix(prefix) for path in s3.since(mark, "PUT", prefix)]
    raw = next(i for i, path in enumerate(put) if path.endswith(".eml"))
    month_index = next(i for i, path in enumerate(put) if path.endswith("/index.html"))
    assert raw < month_index < put.index("search/manifest.json") < len(put) - 1 and put[-1] == RECORD_NAME
    segments = [i for i, path in enumerate(put) if path.startswith("search/seg/")]
    assert segments and max(segments) < put.index("search/manifest.json")


def test_a_removed_message_stays_one_publish_then_goes(site: Path, s3: S3Server) -> None:
    publish(site)
    bucket = bucket_of(site)
    config = load_config(site / "listlib.toml")
    before = load_manifest(config)
    raw = sorted(path for path in before if path.startswith("dev/") and path.endswith(".eml"))[0]
    old_bytes = (site / "output" / raw).read_bytes()
    assert remove_first_dev_message(site) == raw
    after = load_manifest(config)
    gone = set(before) - set(after)
    assert raw in gone

    first = publish(site)
    assert first["deleted"] == 0 and first["pending"] == len(gone)
    objects = s3.objects(bucket, "archive/")
    assert objects[raw]["body"] == old_bytes, "a reader holding an older page still finds it"
    assert record_of(s3, bucket).pending == {path: before[path] for path in gone}

    mark = s3.mark()
    second = publish(site)
    assert second["deleted"] == len(gone) and second["uploaded"] == 0 and second["pending"] == 0
    objects = s3.objects(bucket, "archive/")
    assert not gone & set(objects)
    assert held(objects) == set(output_files(site)) | {RECORD_NAME}
    # nothing new to name first: only the record's root, its delta holding the deletions
    put = [path.removeprefix(f"/{bucket}/archive/") for path in s3.since(mark, "PUT", f"/{bucket}/archive/")]
    assert put == [RECORD_NAME]
    root = parse_root(objects[RECORD_NAME]["body"], "test")
    assert not isinstance(root, Record) and gone <= set(root.delta.pending)

    mark = s3.mark()
    publish(site)
    assert s3.since(mark, "PUT", f"/{bucket}/") == [] and s3.since(mark, "POST", f"/{bucket}/") == []


def test_dry_run_changes_nothing_and_build_publish_publishes(site: Path, s3: S3Server) -> None:
    bucket = bucket_of(site)
    dry = publish(site, "--dry-run", "--files")
    assert dry["dry_run"] is True and dry["uploaded"] == len(output_files(site))
    assert set(dry["uploads"]) == set(output_files(site))  # type: ignore[arg-type]
    assert s3.objects(bucket, "archive/") == {}
    result = run_listlib("build", "--publish", cwd=site, env=CREDENTIALS)
    assert result.returncode == 0, result.stderr
    assert f"s3://{bucket}/archive: {len(output_files(site))} files uploaded" in result.stdout
    assert held(s3.objects(bucket, "archive/")) == set(output_files(site)) | {RECORD_NAME}


def test_a_target_on_the_command_line_overrides_the_table(site: Path, s3: S3Server) -> None:
    bucket = bucket_of(site)
    report = publish(site, f"s3://{bucket}/elsewhere/")
    assert report["target"] == f"s3://{bucket}/elsewhere/"
    assert held(s3.objects(bucket, "elsewhere/")) == set(output_files(site)) | {RECORD_NAME}
    assert s3.objects(bucket, "archive/") == {}


CRASH_POINTS = [
    "publish-intent:1",
    "publish-upload:1",
    "publish-upload:3",
    "publish-upload:LAST",
    "publish-phase:1",
    "publish-phase:2",
    "publish-phase:3",
    "publish-delete:1",
    "publish-deleted:1",
    "publish-shards:1",
    "publish-record:1",
]


def copy_published(s3: S3Server, config: Config, source: str, targets: list[str]) -> None:
    """Make each of ``targets`` (s3:// URLs in ``source``'s bucket) what a publish to it
    would have left where one to ``source`` did: every object under ``source``'s prefix
    copied server-side with its headers, and the cache folder's local copy of the record.
    The record's root and shards name paths relative to the prefix, so they copy as they
    are; a redirect's location is a URL from the bucket's root (the prefix in it), so it
    takes the new one."""
    bucket, _, old = source.removeprefix("s3://").partition("/")
    pages = s3.client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=old)
    keys = [item["Key"] for page in pages for item in page.get("Contents", [])]
    assert keys
    for key in keys:
        head = s3.client.head_object(Bucket=bucket, Key=key)
        location = head.get("WebsiteRedirectLocation")
        relative = location is not None and not location.startswith(("http://", "https://"))
        assert not relative or location.startswith(f"/{old}"), (key, location)
        headers = {
            name: head[name]
            for name in ("ContentType", "CacheControl", "ContentEncoding", "ContentDisposition")
            if head.get(name)
        }
        for target in targets:
            new = target.removeprefix(f"s3://{bucket}/")
            copy = {"Bucket": bucket, "Key": new + key.removeprefix(old), "CopySource": {"Bucket": bucket, "Key": key}}
            if relative:
                moved = f"/{new}{location.removeprefix(f'/{old}')}"
                s3.client.copy_object(**copy, **headers, WebsiteRedirectLocation=moved, MetadataDirective="REPLACE")
            else:
                s3.client.copy_object(**copy, MetadataDirective="COPY")
    there = LocalCopy(config.site.cache_dir, publish_target(config, source))
    assert there.path.exists(), there.path
    for target in targets:
        here = LocalCopy(config.site.cache_dir, publish_target(config, target))
        for path, copied in ((there.path, here.path), (there.quiet_path, here.quiet_path)):
            if path.exists():
                shutil.copyfile(path, copied)


@pytest.mark.slow
def test_a_kill_9_at_any_point_then_a_rerun_converges(site: Path, s3: S3Server) -> None:
    """Per crash point, its own prefix: published, a message removed and published (its
    files pending), a message added; then the publish that uploads and deletes is killed
    at the point and run again: the bucket is output/ and the record exactly."""
    bucket = bucket_of(site)
    targets = {point: f"s3://{bucket}/crash{number}/" for number, point in enumerate(CRASH_POINTS)}
    first, *others = targets.values()
    publish(site, first)
    config = load_config(site / "listlib.toml")
    remove_first_dev_message(site)
    assert publish(site, first)["pending"] > 0
    # The set-up is the same work on every prefix: done once, then copied server-side
    # with the local copy of the record (the bucket holds the same bytes: same ETag).
    copy_published(s3, config, first, others)
    add_message(site, "Crash test thread", "<crash-1@example.org>")
    uploads = publish(site, "--dry-run", next(iter(targets.values())))["uploaded"]
    assert isinstance(uploads, int) and uploads >= 4
    manifest = load_manifest(config)
    files = output_files(site)
    known: dict[str, bytes] = {}  # ETag -> bytes: most objects are the same on every prefix
    for point, target in targets.items():
        spec = point.replace("LAST", str(uploads))
        crashed = run_listlib("publish", "-q", target, cwd=site, env={**CREDENTIALS, "LISTLIB_CRASH_AT": spec})
        assert crashed.returncode == -signal.SIGKILL, f"{spec} never reached: {crashed.stderr}"
        prefix = target.removeprefix(f"s3://{bucket}/")
        assert_whole(s3, bucket, prefix, site, site.parent / "mirror", known)  # what readers met when it died
        rerun = publish(site, target)
        objects = s3.bodies(bucket, prefix, known)
        left = held(objects) - {INTENT_NAME}  # spent, when the kill came between the record and its deletion
        assert left == set(files) | {RECORD_NAME}, f"{spec}: {left ^ (set(files) | {RECORD_NAME})}"
        for path, data in files.items():
            assert objects[path]["body"] == data, f"{spec}: {path}"
        record = record_in(objects)
        assert record.files == manifest and not record.pending, spec
        assert rerun["pending"] == 0, spec


def test_no_credentials_one_line_exit_1(site: Path) -> None:
    env = {**CREDENTIALS, "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}
    result = run_listlib("publish", cwd=site, env=env)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "no AWS credentials found" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_refused_credentials_delete_nothing(site: Path, s3: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    from moto import settings

    publish(site)
    remove_first_dev_message(site)
    publish(site)
    bucket = bucket_of(site)
    before = s3.objects(bucket, "archive/")
    monkeypatch.setattr(settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)  # moto now checks keys: ours are unknown
    result = run_listlib("publish", cwd=site, env=CREDENTIALS)
    monkeypatch.undo()
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1, result.stderr
    assert "the credentials were refused (InvalidAccessKeyId)" in result.stderr
    assert s3.objects(bucket, "archive/") == before


def test_a_missing_bucket_one_line_exit_1(site: Path, s3: S3Server) -> None:
    result = run_listlib("publish", "s3://no-such-bucket/x", cwd=site, env=CREDENTIALS)
    assert result.returncode == 1
    assert result.stderr == f"Error: s3://no-such-bucket/x at {s3.url}: bucket 'no-such-bucket' does not exist\n"


def test_an_unreachable_endpoint_one_line_exit_1(site: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = (site / "listlib.toml").read_text()
    config = config.replace('region = "us-east-1"', 'region = "us-east-1"\nmax_attempts = 1')
    (site / "listlib.toml").write_text(
        "\n".join(
            f'endpoint_url = "http://127.0.0.1:{port}"' if line.startswith("endpoint_url") else line
            for line in config.splitlines()
        )
    )
    result = run_listlib("publish", cwd=site, env=CREDENTIALS)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "cannot reach the endpoint" in result.stderr, result.stderr


def test_a_damaged_record_is_one_clear_line(site: Path, s3: S3Server) -> None:
    bucket = bucket_of(site)
    s3.client.put_object(Bucket=bucket, Key=f"archive/{RECORD_NAME}", Body=gzip.compress(b"{not json"))
    result = run_listlib("publish", cwd=site, env=CREDENTIALS)
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert "the record of the last publish is damaged" in result.stderr


def test_the_bucket_record_wins_over_a_stale_local_copy(site: Path, s3: S3Server) -> None:
    publish(site)
    bucket = bucket_of(site)
    # another publisher (or a lost record): the bucket's record now says nothing was published
    # (one in the format before shards, which is still read)
    s3.client.put_object(Bucket=bucket, Key=f"archive/{RECORD_NAME}", Body=Record().to_bytes())
    report = publish(site)
    assert report["uploaded"] == len(output_files(site)) and report["unchanged"] == 0
    assert record_of(s3, bucket).files == load_manifest(load_config(site / "listlib.toml"))
    # and without the local copy, a publish with nothing new still puts nothing
    shutil.rmtree(site / ".cache" / "publish")
    mark = s3.mark()
    assert publish(site)["uploaded"] == 0
    assert s3.since(mark, "PUT", f"/{bucket}/") == []


def test_a_record_of_the_format_before_deltas_and_its_intent_object_are_taken_over(site: Path, s3: S3Server) -> None:
    """A root without a delta (format 2) and the intent object a publish of that version
    left when killed: its files are uploaded again, the object deleted, the root rewritten."""
    publish(site)
    bucket = bucket_of(site)
    objects = s3.objects(bucket, "archive/")
    root = parse_root(objects[RECORD_NAME]["body"], "test")
    assert not isinstance(root, Record) and not root.delta
    old_root = {"format": 2, "generation": root.generation, "headers": root.headers, "shards": root.names}
    s3.client.put_object(Bucket=bucket, Key=f"archive/{RECORD_NAME}", Body=gzip.compress(json.dumps(old_root).encode()))
    page = next(path for path in output_files(site) if path.endswith(".eml"))
    intent = {"generation": root.generation, "files": {page: ["x", 1]}, "shards": [], "retire": []}
    s3.client.put_object(Bucket=bucket, Key=f"archive/{INTENT_NAME}", Body=json.dumps(intent).encode())
    report = publish(site, "--files")
    assert report["uploads"] == [page], "the file the killed publish meant to put goes up again"
    objects = s3.objects(bucket, "archive/")
    assert held(objects) == set(output_files(site)) | {RECORD_NAME}, "the intent object is gone"
    again = parse_root(objects[RECORD_NAME]["body"], "test")
    assert (
        not isinstance(again, Record)
        and not again.legacy
        and record_in(objects).files == load_manifest(load_config(site / "listlib.toml"))
    )


@pytest.mark.parametrize("mode", ["503", "drop"])
def test_a_server_failing_one_request_in_ten_still_converges(site: Path, s3: S3Server, mode: str) -> None:
    bucket = bucket_of(site)
    with flaky_proxy(s3.url, 10, mode) as proxy:
        port = proxy.server_address[1]
        report = publish(site, endpoint=f"http://127.0.0.1:{port}")
        assert proxy.failed >= len(output_files(site)) // 10, "the proxy failed requests"
    assert report["uploaded"] == len(output_files(site))
    objects = s3.objects(bucket, "archive/")
    assert held(objects) == set(output_files(site)) | {RECORD_NAME}
    for path, data in output_files(site).items():
        assert objects[path]["body"] == data, path


def test_verify_uploads_again_what_the_bucket_lost(site: Path, s3: S3Server) -> None:
    publish(site)
    bucket = bucket_of(site)
    files = output_files(site)
    lost = sorted(files)[:2]
    s3.client.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": f"archive/{path}"} for path in lost]})
    s3.client.put_object(Bucket=bucket, Key="archive/index.html", Body=b"defaced")
    assert publish(site)["uploaded"] == 0, "without --verify the record is trusted"
    report = publish(site, "--verify", "--files")
    assert report["repaired"] == 3 and sorted(report["uploads"]) == sorted([*lost, "index.html"])  # type: ignore[arg-type]
    objects = s3.objects(bucket, "archive/")
    for path, data in files.items():
        assert objects[path]["body"] == data, path
    assert publish(site, "--verify")["uploaded"] == 0


def test_without_build_records_nothing_is_published_or_deleted(site: Path, s3: S3Server) -> None:
    publish(site)
    bucket = bucket_of(site)
    before = s3.objects(bucket, "archive/")
    shutil.rmtree(site / ".cache")  # safe to delete: the next build makes it again
    for _ in range(2):
        result = run_listlib("publish", cwd=site, env=CREDENTIALS)
        assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
        assert "no build recorded" in result.stderr and "run 'listlib build' first" in result.stderr
    assert s3.objects(bucket, "archive/") == before
    run_listlib("build", "-q", cwd=site, check=True)
    assert publish(site)["deleted"] == 0


def test_a_file_deleted_from_output_is_a_clear_error(site: Path) -> None:
    (site / "output" / "index.html").unlink()
    result = run_listlib("publish", cwd=site, env=CREDENTIALS)
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert "index.html: missing, though the last build made it; run 'listlib build'" in result.stderr


@pytest.mark.slow
def test_a_kill_9_from_outside_at_measured_moments_then_a_rerun_converges(site: Path, s3: S3Server) -> None:
    """SIGKILL lands wherever the publisher happens to be (start-up, planning, uploads,
    the record), each time on a first publish of its own prefix; a re-run completes it."""
    import subprocess
    import sys
    import time

    from ..support.helpers import subprocess_env

    bucket = bucket_of(site)
    files = output_files(site)
    env = {**subprocess_env(), **CREDENTIALS}
    for number, delay in enumerate((0.3, 0.6, 0.8, 1.0, 1.2, 1.5)):
        target = f"s3://{bucket}/outside{number}/"
        proc = subprocess.Popen(
            [sys.executable, "-m", "listlib", "publish", "-q", target],
            cwd=site,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        publish(site, target)
        objects = s3.objects(bucket, f"outside{number}/")
        assert held(objects) == set(files) | {RECORD_NAME}, delay
        for path, data in files.items():
            assert objects[path]["body"] == data, (delay, path)


def test_files_a_killed_publish_put_are_deleted_when_the_build_drops_them(site: Path, s3: S3Server) -> None:
    """A publish killed after putting a new message's files, the message then removed and
    the site built: no record ever named those files, the intent did; they go on the
    publish after next, as any removed file."""
    publish(site)
    bucket = bucket_of(site)
    add_message(site, "Soon taken down", "<down-1@example.org>")
    dry = publish(site, "--dry-run", "--files")
    uploads = dry["uploads"]
    assert isinstance(uploads, list)
    spec = f"publish-upload:{len(uploads) // 2}"
    crashed = run_listlib("publish", "-q", cwd=site, env={**CREDENTIALS, "LISTLIB_CRASH_AT": spec})
    assert crashed.returncode == -signal.SIGKILL
    put_by_the_killed_one = (
        {key for key in s3.objects(bucket, "archive/") if not key.startswith(f"{SHARD_DIR}/")}
        - set(record_of(s3, bucket).files)
        - {INTENT_NAME, RECORD_NAME}
    )
    assert put_by_the_killed_one, "the killed publish put some new files"
    manifest = load_manifest(load_config(site / "listlib.toml"))
    raw = next(path for path in uploads if path.endswith(".eml"))
    run_listlib(
        "remove", raw.rsplit("/", 1)[1].removesuffix(".eml"), "--reason", "x", "--build", "-q", cwd=site, check=True
    )
    dropped = set(manifest) - set(load_manifest(load_config(site / "listlib.toml")))
    assert put_by_the_killed_one & dropped, "some of them are no longer built"
    first = publish(site)
    assert first["deleted"] == 0 and first["pending"] >= len(put_by_the_killed_one & dropped)
    publish(site)
    assert held(s3.objects(bucket, "archive/")) == set(output_files(site)) | {RECORD_NAME}


def test_message_id_links_are_published_as_website_redirects_not_copies(site: Path, s3: S3Server) -> None:
    with (site / "listlib.toml").open("r+") as file:
        text = file.read()
        file.seek(0)
        file.write(text.replace("[site]\n", "[site]\nmessage_id_paths = true\n", 1))
    run_listlib("build", "-q", cwd=site, check=True)
    output = site / "output"
    links = sorted(str(p.relative_to(output)) for p in output.rglob("*") if p.is_symlink())
    assert links and all(link.endswith(("/raw", "/t.mbox.gz")) for link in links)
    publish(site)
    bucket = bucket_of(site)
    for link in links:
        head = s3.client.head_object(Bucket=bucket, Key=f"archive/{link}")
        target = posixpath.normpath(posixpath.join(posixpath.dirname(link), (output / link).readlink().as_posix()))
        assert (output / target).is_file() and not (output / target).is_symlink()
        assert head["WebsiteRedirectLocation"] == f"/archive/{quote(target)}" and head["ContentLength"] == 0, link
        assert head["ContentType"] == object_type(link)
    # Verified against the bucket's listing, the empty redirects are as recorded; nothing changed puts nothing.
    before = len(s3.requests("PUT", f"/{bucket}/"))
    assert publish(site, "--verify")["uploaded"] == 0
    assert len(s3.requests("PUT", f"/{bucket}/")) == before


def test_a_file_of_64_mb_or_more_goes_up_in_parts_with_its_headers(
    s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The managed (multipart) upload of big files keeps the bytes and every header."""
    from listlib.config import PublishConfig
    from listlib.publish.s3 import MULTIPART_BYTES, Bucket

    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    bucket = s3.new_bucket(f"big-{next(_names)}")
    big = tmp_path / "big.tar.gz"
    block = bytes(range(256)) * 4096  # 1 MiB, not all one byte
    with big.open("wb") as file:
        for index in range(MULTIPART_BYTES // len(block) + 3):
            file.write(index.to_bytes(4, "big") + block[4:])
    path = "dev/2024/05/3xAAAAAa/big.tar.gz"
    mark = s3.mark()
    Bucket(PublishConfig(target=f"s3://{bucket}/archive", endpoint_url=s3.url, region="us-east-1")).put_file(
        path,
        big,
        object_type(path),
        "public, max-age=60",
        big.stat().st_size,
        disposition=content_disposition(path),
    )
    stored = s3.objects(bucket, "archive/")[path]
    assert stored["body"] == big.read_bytes()
    assert (stored["type"], stored["cache"]) == ("application/gzip", "public, max-age=60")
    assert stored["disposition"] == "attachment; filename=\"big.tar.gz\"; filename*=UTF-8''big.tar.gz"
    parts = s3.since(mark, "PUT", f"/{bucket}/archive/{path}")
    assert len(parts) > 1, "uploaded in one PUT, not in parts"
