"""The ``[publish]`` table: the S3-compatible bucket ``listlib publish`` uploads to.

Records problems on the Reader; never connects. Credentials are refused here: they
come only from the standard AWS chain (environment, shared config and credentials
files, instance roles), never from listlib.toml, which is often committed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigIssue
from .checks import check_nonempty, check_url
from .reader import Reader
from .schema import PublishConfig

__all__ = ["read_publish"]

_KEYS = {"target", "endpoint_url", "region", "profile", "workers", "max_attempts", "retry_mode", "cache_control"}
CACHE_KINDS = ("segments", "attachments", "pages", "files")
"""The kinds of file ``[publish.cache_control]`` names (see ``publish.plan.cache_kind``)."""
_HEADER_RE = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?\Z")
_RETRY_MODES = ("standard", "adaptive")
_SECRET_KEYS = {
    "access_key",
    "access_key_id",
    "aws_access_key_id",
    "secret_key",
    "secret_access_key",
    "aws_secret_access_key",
    "session_token",
    "aws_session_token",
    "password",
    "credentials",
}
_BUCKET_RE = re.compile(r"[a-z0-9][a-z0-9.\-_]{1,254}\Z", re.I)


def check_target(value: str) -> str | None:
    if not value.startswith("s3://"):
        return f"{value!r} is not an s3://bucket/prefix address"
    bucket = value.removeprefix("s3://").partition("/")[0]
    if not _BUCKET_RE.match(bucket):
        return f"{value!r}: {bucket!r} is not a bucket name"
    return None


def check_header_value(value: str) -> str | None:
    if not _HEADER_RE.match(value):
        return f"{value!r} is not a header value (printable ASCII on one line, e.g. 'public, max-age=300')"
    return None


def _cache_control(reader: Reader, table: Mapping[str, Any], where: str) -> tuple[tuple[str, str], ...]:
    if "cache_control" not in table:
        return ()
    where = f"{where}.cache_control"
    kinds = reader.table(table, "cache_control", where)
    reader.unknown(kinds, set(CACHE_KINDS), where)
    return tuple(
        (kind, reader.string(kinds, kind, where, check=check_header_value)) for kind in CACHE_KINDS if kind in kinds
    )


def check_retry_mode(value: str) -> str | None:
    return None if value in _RETRY_MODES else f"{value!r} is not one of 'standard', 'adaptive'"


def read_publish(reader: Reader, data: Mapping[str, Any]) -> PublishConfig | None:
    if "publish" not in data:
        return None
    where = "publish"
    table = reader.table(data, "publish", where)
    secrets = sorted(key for key in table if key.lower() in _SECRET_KEYS)
    for key in secrets:
        reader.issues.append(
            ConfigIssue(
                f"{where}.{key}",
                "credentials do not belong in listlib.toml; use the AWS chain (AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY, ~/.aws/credentials with 'profile', or an instance role)",
            )
        )
    reader.unknown({key: value for key, value in table.items() if key not in secrets}, _KEYS, where)
    return PublishConfig(
        target=reader.string(table, "target", where, check=check_target),
        endpoint_url=reader.string(table, "endpoint_url", where, default="", check=check_url) or None,
        region=reader.string(table, "region", where, default="", check=check_nonempty) or None,
        profile=reader.string(table, "profile", where, default="", check=check_nonempty) or None,
        workers=reader.integer(table, "workers", where, 1, 64) or 16,
        max_attempts=reader.integer(table, "max_attempts", where, 1, 20) or 5,
        retry_mode=reader.string(table, "retry_mode", where, default="standard", check=check_retry_mode),
        cache_control=_cache_control(reader, table, where),
    )
