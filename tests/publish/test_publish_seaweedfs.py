"""``listlib publish`` against a second real server, SeaweedFS (``weed mini``), which
stores objects as a real deployment does and checks signatures: the bucket holds
output/ byte for byte with its headers; a removed message goes on the publish after
next; refused credentials and a missing bucket are one line and exit 1, nothing deleted."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from listlib.publish.plan import RECORD_NAME, Headers, content_disposition, object_type
from listlib.publish.shards import SHARD_DIR

from ..support.helpers import REPO, run_listlib
from ..support.s3server import CREDENTIALS, SEAWEED_KEYS, seaweedfs

ENV = {**CREDENTIALS, **SEAWEED_KEYS}


@pytest.fixture(scope="module")
def weed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with seaweedfs(tmp_path_factory.mktemp("seaweedfs")) as url:
        yield url


@pytest.fixture(scope="module")
def client(weed: str) -> Any:
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=weed,
        region_name="us-east-1",
        aws_access_key_id=SEAWEED_KEYS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=SEAWEED_KEYS["AWS_SECRET_ACCESS_KEY"],
    )


@pytest.fixture
def site(tmp_path: Path, weed: str, client: Any) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    shutil.copy(REPO / "listlib.toml", root / "listlib.toml")
    bucket = f"weed-{tmp_path.name.lower().replace('_', '-')[:40]}"
    client.create_bucket(Bucket=bucket)
    with (root / "listlib.toml").open("a") as file:
        file.write(f'\n[publish]\ntarget = "s3://{bucket}/site"\nendpoint_url = "{weed}"\nregion = "us-east-1"\n')
    run_listlib("import", REPO / "sample", cwd=root, check=True)
    run_listlib("build", "-q", cwd=root, check=True)
    return root


def bucket_of(site: Path) -> str:
    text = (site / "listlib.toml").read_text()
    return text.split('target = "s3://', 1)[1].split("/", 1)[0]


def objects(client: Any, bucket: str) -> dict[str, dict[str, Any]]:
    found = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="site/"):
        for item in page.get("Contents", []):
            answer = client.get_object(Bucket=bucket, Key=item["Key"])
            found[item["Key"].removeprefix("site/")] = {
                "body": answer["Body"].read(),
                "type": answer.get("ContentType"),
                "cache": answer.get("CacheControl"),
                "encoding": answer.get("ContentEncoding"),
                "disposition": answer.get("ContentDisposition"),
            }
    return found


def output_files(site: Path) -> dict[str, bytes]:
    output = site / "output"
    return {str(path.relative_to(output)): path.read_bytes() for path in output.rglob("*") if path.is_file()}


def publish(site: Path) -> dict[str, Any]:
    result = run_listlib("publish", "--json", cwd=site, env=ENV)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_seaweedfs_holds_output_with_its_headers_and_the_removed_message_goes_a_publish_later(
    site: Path, client: Any
) -> None:
    bucket = bucket_of(site)
    first = publish(site)
    files = output_files(site)
    assert first["uploaded"] == len(files)
    stored = objects(client, bucket)
    assert {key for key in stored if not key.startswith(f"{SHARD_DIR}/")} == set(files) | {RECORD_NAME}
    for path, data in files.items():
        assert stored[path]["body"] == data, path
        assert stored[path]["type"] == object_type(path), path
        assert stored[path]["cache"] == Headers().cache_control_of(path), path
        assert stored[path]["encoding"] is None, path
        assert stored[path]["disposition"] == content_disposition(path), path
    assert stored["dev/feed.atom"]["type"] == "application/atom+xml; charset=utf-8"
    assert publish(site)["uploaded"] == 0

    raw = sorted(path for path in files if path.startswith("dev/") and path.endswith(".eml"))[0]
    call = raw.rsplit("/", 1)[1].removesuffix(".eml")
    run_listlib("remove", call, "--reason", "privacy request", "--build", "-q", cwd=site, check=True)
    assert not (site / "output" / raw).exists()
    later = publish(site)
    assert later["pending"] >= 1 and later["deleted"] == 0
    assert objects(client, bucket)[raw]["body"] == files[raw]
    final = publish(site)
    assert final["deleted"] == later["pending"] and final["pending"] == 0
    left = {key for key in objects(client, bucket) if not key.startswith(f"{SHARD_DIR}/")}
    assert left == set(output_files(site)) | {RECORD_NAME}


def test_seaweedfs_refuses_a_wrong_secret_and_nothing_is_deleted(site: Path, client: Any) -> None:
    bucket = bucket_of(site)
    publish(site)
    before = objects(client, bucket)
    result = run_listlib("publish", cwd=site, env={**ENV, "AWS_SECRET_ACCESS_KEY": "wrong"})
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert "the credentials were refused (SignatureDoesNotMatch)" in result.stderr
    unknown = run_listlib("publish", cwd=site, env={**ENV, "AWS_ACCESS_KEY_ID": "nobody"})
    assert unknown.returncode == 1 and "the credentials were refused (InvalidAccessKeyId)" in unknown.stderr
    assert objects(client, bucket) == before


def test_seaweedfs_a_missing_bucket_is_one_line(site: Path, weed: str) -> None:
    result = run_listlib("publish", "s3://no-such-bucket/x", cwd=site, env=ENV)
    assert result.returncode == 1
    assert result.stderr == f"Error: s3://no-such-bucket/x at {weed}: bucket 'no-such-bucket' does not exist\n"
