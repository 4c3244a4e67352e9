"""Planning a publish (no bucket): what goes up in which order, what is deleted when,
the headers of each kind of file, and the [publish] table's checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from listlib.config import parse_config
from listlib.errors import ConfigError
from listlib.publish.plan import (
    DEFAULT_CACHE_CONTROL,
    Headers,
    Record,
    content_disposition,
    object_type,
    plan_publish,
    redirect_target,
)


def published(files: dict[str, tuple[str, int]]) -> Record:
    """A record of ``files`` put up with today's header rules."""
    return Record(files=dict(files), headers=Headers().fingerprint())


OLD = {
    "index.html": ("i1", 10),
    "dev/index.html": ("l1", 10),
    "dev/2024/05/3xAAAAAa.html": ("m1", 10),
    "dev/2024/05/3xAAAAAa.eml": ("e1", 10),
    "dev/2024/05/index.html": ("x1", 10),
    "search/manifest.json": ("s1", 10),
    "search/seg/0001/t0.json": ("t1", 10),
}


def test_new_objects_go_first_then_pages_then_changed_ones_then_the_search_manifest() -> None:
    new = dict(OLD)
    new.update(
        {
            "dev/2024/05/3xAAAAAb.html": ("m2", 20),
            "dev/2024/05/3xAAAAAb.eml": ("e2", 20),
            "dev/2024/05/3xAAAAAb/patch.diff": ("a2", 20),
            "mid/ab/cdef.html": ("mid2", 20),
            "search/seg/0002/t0.json": ("t2", 20),
            "search/manifest.json": ("s2", 20),
            "dev/2024/05/index.html": ("x2", 20),
            "dev/2024/05/3xAAAAAa.html": ("m1b", 20),
        }
    )
    plan = plan_publish(new, published(OLD))
    phases = [sorted(upload.path for upload in phase) for phase in plan.phases]
    assert phases == [
        [
            "dev/2024/05/3xAAAAAb.eml",
            "dev/2024/05/3xAAAAAb.html",
            "dev/2024/05/3xAAAAAb/patch.diff",
            "search/seg/0002/t0.json",
        ],
        ["mid/ab/cdef.html"],
        ["dev/2024/05/3xAAAAAa.html"],
        ["dev/2024/05/index.html"],
        ["search/manifest.json"],
    ]
    assert plan.unchanged == len(OLD) - 3 and plan.uploads == 8 and plan.bytes == 160
    assert plan.delete == [] and plan.record.files == new and plan.record.pending == {}


def test_a_removed_file_is_pending_one_publish_then_deleted() -> None:
    built = {path: value for path, value in OLD.items() if path != "search/seg/0001/t0.json"}
    first = plan_publish(built, published(OLD))
    assert first.delete == [] and first.record.pending == {"search/seg/0001/t0.json": ("t1", 10)}
    assert first.uploads == 0 and not first.empty, "the record changes: it must be written"
    second = plan_publish(built, first.record)
    assert second.delete == ["search/seg/0001/t0.json"] and second.record.pending == {}
    third = plan_publish(built, second.record)
    assert third.empty


def test_a_pending_file_that_comes_back_unchanged_is_not_uploaded_or_deleted() -> None:
    built = {path: value for path, value in OLD.items() if path != "dev/2024/05/3xAAAAAa.eml"}
    first = plan_publish(built, published(OLD))
    again = plan_publish(OLD, first.record)
    assert again.uploads == 0 and again.delete == [] and again.record.pending == {}


def test_the_record_reads_back_what_was_written() -> None:
    record = Record(files=dict(OLD), pending={"gone.html": ("g", 1)})
    assert Record.from_bytes(record.to_bytes(), "x") == record
    assert record.to_bytes() == Record(files=dict(reversed(OLD.items())), pending=record.pending).to_bytes()


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("dev/2024/05/3xAAAAAa.html", "text/html; charset=utf-8"),
        ("dev/feed.atom", "application/atom+xml; charset=utf-8"),
        ("search/manifest.json", "application/json"),
        ("static/search.js", "text/javascript; charset=utf-8"),
        ("static/style.css", "text/css; charset=utf-8"),
        ("dev/2024/05/3xAAAAAa.eml", "message/rfc822"),
        ("dev/2024/05/dev-2024-05.mbox.gz", "application/gzip"),
        ("robots.txt", "text/plain; charset=utf-8"),
        ("dev/2024/05/3xAAAAAa/screenshot.png", "image/png"),
        ("dev/2024/05/3xAAAAAa/report.pdf", "application/pdf"),
        ("dev/2024/05/3xAAAAAa/fix.patch", "text/plain; charset=utf-8"),
        ("search/seg/0001/p0.bin", "application/octet-stream"),
        ("dev/2024/05/3xAAAAAa/blob.unknownext", "application/octet-stream"),
        ("_redirects", "text/plain; charset=utf-8"),
    ],
)
def test_every_kind_of_file_has_its_content_type(path: str, expected: str) -> None:
    assert object_type(path) == expected


def test_cache_control_by_kind() -> None:
    cache_control = Headers().cache_control_of
    assert cache_control("search/seg/0001/p0.bin") == "public, max-age=31536000, immutable"
    for short in ("index.html", "dev/feed.atom", "search/manifest.json", "dev/2024/05/sitemap.xml", "mid/ab/c.html"):
        assert cache_control(short) == "public, max-age=300", short
    for medium in ("dev/2024/05/3xAAAAAa.eml", "dev/2024/05/dev-2024-05.mbox.gz", "static/style.css"):
        assert cache_control(medium) == "public, max-age=3600", medium
    for attachment in ("dev/2024/05/3xAAAAAa/notes.txt", "dev/2024/05/3xAAAAAa/photo.png"):
        assert cache_control(attachment) == "public, max-age=31536000", attachment


def test_the_cache_control_of_a_kind_can_be_set_in_the_publish_table() -> None:
    config = parse_config(
        {
            "site": {"title": "t", "base_url": "https://lists.example.org/"},
            "publish": {"target": "s3://bucket", "cache_control": {"pages": "no-cache", "attachments": "max-age=60"}},
        },
        Path("/tmp/x/listlib.toml"),
    )
    assert config.publish is not None
    headers = Headers(config.publish.cache_control)
    assert headers.cache_control_of("dev/index.html") == "no-cache"
    assert headers.cache_control_of("dev/2024/05/3xAAAAAa/notes.txt") == "max-age=60"
    assert headers.cache_control_of("static/style.css") == DEFAULT_CACHE_CONTROL["files"]


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"page": "no-cache"}, r"publish\.cache_control\.page: unknown key \(did you mean pages\?\)"),
        ({"pages": "no-cache\r\nX-Evil: 1"}, r"publish\.cache_control\.pages: .* is not a header value"),
        ({"pages": ""}, r"publish\.cache_control\.pages: .* is not a header value"),
        ({"pages": 300}, r"publish\.cache_control\.pages"),
    ],
)
def test_a_bad_cache_control_table_names_the_key(table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(
            {
                "site": {"title": "t", "base_url": "https://l.example.org/"},
                "publish": {"target": "s3://b", "cache_control": table},
            },
            Path("/tmp/x/listlib.toml"),
        )


def test_other_header_rules_upload_every_file_again_once() -> None:
    plan = plan_publish(OLD, published(OLD), headers=Headers((("pages", "no-cache"),)))
    assert plan.uploads == len(OLD) and plan.unchanged == 0 and plan.delete == []
    again = plan_publish(OLD, plan.record, headers=Headers((("pages", "no-cache"),)))
    assert again.empty and again.uploads == 0
    # a record from before header fingerprints (or another listlib's rules) too
    assert plan_publish(OLD, Record(files=dict(OLD))).uploads == len(OLD)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("dev/2024/05/3xAAAAAa/photo.png", "inline; filename=\"photo.png\"; filename*=UTF-8''photo.png"),
        ("dev/2024/05/3xAAAAAa/notes.txt", "inline; filename=\"notes.txt\"; filename*=UTF-8''notes.txt"),
        ("dev/2024/05/3xAAAAAa/report.pdf", "inline; filename=\"report.pdf\"; filename*=UTF-8''report.pdf"),
        ("dev/2024/05/3xAAAAAa/src.tar.gz", "attachment; filename=\"src.tar.gz\"; filename*=UTF-8''src.tar.gz"),
        ("dev/2024/05/3xAAAAAa/a.bin", "attachment; filename=\"a.bin\"; filename*=UTF-8''a.bin"),
        (
            'dev/2024/05/3xAAAAAa/Überblick "v2".pdf',
            "inline; filename=\"_berblick _v2_.pdf\"; filename*=UTF-8''%C3%9Cberblick%20%22v2%22.pdf",
        ),
        ("dev/2024/05/3xAAAAAa.eml", None),
        ("dev/2024/05/index.html", None),
        ("static/logo.png", None),
    ],
)
def test_attachments_have_a_content_disposition(path: str, expected: str | None) -> None:
    assert content_disposition(path) == expected
    if expected is not None:
        assert expected.isascii()


def test_uploads_carry_the_disposition_of_attachments() -> None:
    new = {**OLD, "dev/2024/05/3xAAAAAa/data.csv": ("c1", 5)}
    plan = plan_publish(new, published(OLD))
    (upload,) = [u for phase in plan.phases for u in phase]
    assert upload.content_disposition == "attachment; filename=\"data.csv\"; filename*=UTF-8''data.csv"
    assert upload.cache_control == DEFAULT_CACHE_CONTROL["attachments"]


def refresh(url: str) -> bytes:
    return f'<!doctype html><head><meta http-equiv="refresh" content="0; url={url}"></head>'.encode()


@pytest.mark.parametrize(
    ("path", "url", "expected"),
    [
        ("dev/2024/05/3xAAAAAa.html", "3xAAAAAa/thread.html#m3xAAAAAa", "dev/2024/05/3xAAAAAa/thread.html#m3xAAAAAa"),
        ("dev/2024/05/3xAAAAAb.html", "../04/t.html#m3x&amp;1", "dev/2024/04/t.html#m3x&1"),
        ("old/msg00012.html", "../dev/2024/05/3xAAAAAa.html", "dev/2024/05/3xAAAAAa.html"),
        ("old/2019/index.html", "../../dev/", "dev/"),
        ("old/index.html", "../", ""),
        ("old/x.html", "https://elsewhere.example/a", "https://elsewhere.example/a"),
        ("old/x.html", "../../outside.html", None),
        ("old/x.html", "/absolute.html", None),
        ("old/x.html", "javascript:alert(1)", None),
        ("old/x.html", "//evil.example/", None),
    ],
)
def test_a_redirect_page_names_its_target(path: str, url: str, expected: str | None) -> None:
    assert redirect_target(path, refresh(url)) == expected


def test_a_page_without_a_refresh_is_no_redirect() -> None:
    assert redirect_target("dev/index.html", b"<!doctype html><title>x</title><p>url=elsewhere.html</p>") is None


def test_the_publish_table_reads_its_keys() -> None:
    config = parse_config(
        {
            "site": {"title": "t", "base_url": "https://lists.example.org/"},
            "publish": {"target": "s3://bucket/a/b/", "endpoint_url": "https://s3.example.org", "region": "auto"},
        },
        Path("/tmp/x/listlib.toml"),
    )
    assert config.publish is not None
    assert (config.publish.bucket, config.publish.prefix) == ("bucket", "a/b/")
    assert config.publish.endpoint_url == "https://s3.example.org" and config.publish.region == "auto"


@pytest.mark.parametrize("key", ["aws_secret_access_key", "access_key_id", "secret_key", "session_token"])
def test_credentials_in_listlib_toml_are_refused(key: str) -> None:
    with pytest.raises(ConfigError, match=rf"publish\.{key}: credentials do not belong in listlib.toml"):
        parse_config(
            {"site": {"title": "t", "base_url": "https://l.example.org/"}, "publish": {"target": "s3://b", key: "x"}},
            Path("/tmp/x/listlib.toml"),
        )


@pytest.mark.parametrize("target", ["https://bucket/x", "s3://", "s3:///x", "bucket/prefix"])
def test_a_target_that_is_not_an_s3_address_is_refused(target: str) -> None:
    with pytest.raises(ConfigError, match=r"publish\.target"):
        parse_config(
            {"site": {"title": "t", "base_url": "https://l.example.org/"}, "publish": {"target": target}},
            Path("/tmp/x/listlib.toml"),
        )


def test_the_retry_mode_is_standard_or_adaptive() -> None:
    site = {"title": "t", "base_url": "https://l.example.org/"}
    config = parse_config(
        {"site": site, "publish": {"target": "s3://bkt", "retry_mode": "adaptive"}}, Path("/x/l.toml")
    )
    assert config.publish is not None and config.publish.retry_mode == "adaptive"
    with pytest.raises(ConfigError, match=r"publish\.retry_mode: 'fast' is not one of"):
        parse_config({"site": site, "publish": {"target": "s3://bkt", "retry_mode": "fast"}}, Path("/x/l.toml"))


def test_files_an_interrupted_publish_meant_to_put_are_uploaded_again_or_deleted_later() -> None:
    built = dict(OLD)
    built["dev/2024/05/3xAAAAAc.html"] = ("m3", 30)
    plan = plan_publish(built, Record(files=dict(OLD), generation=7, headers=Headers().fingerprint()))
    assert plan.intent == {"dev/2024/05/3xAAAAAc.html": ("m3", 30)} and plan.record.generation == 8
    # killed after the intent: one file still built (uploaded again, whatever the bucket holds),
    # one no longer built (pending: deleted by the publish after)
    unsure = {"dev/2024/05/3xAAAAAc.html": ("m3", 30), "dev/2024/05/3xAAAAAd.html": ("m4", 40)}
    again = plan_publish(built, Record(files=dict(OLD), generation=7, headers=Headers().fingerprint()), unsure)
    assert [upload.path for phase in again.phases for upload in phase] == ["dev/2024/05/3xAAAAAc.html"]
    assert again.record.pending == {"dev/2024/05/3xAAAAAd.html": ("m4", 40)} and again.delete == []
    assert again.intent == unsure, "a second kill still knows both"
    assert plan_publish(built, again.record).delete == ["dev/2024/05/3xAAAAAd.html"]
