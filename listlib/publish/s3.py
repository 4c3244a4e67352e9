"""The bucket through boto3, the standard S3 client (the only module that imports it):
get, put (streamed from the file, multipart when big) and delete objects, every failure
turned into one PublishError sentence naming the target.

boto3 is an optional extra (``pip install 'listlib[publish]'``); it is imported when a
publish starts, with a clear message when it is missing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..config import PublishConfig
from ..errors import PublishError

__all__ = ["Bucket"]

MULTIPART_BYTES = 64 * 1024 * 1024
"""Files this big or bigger go up in parts (boto3's managed transfer); smaller ones in one PUT."""
_DELETE_BATCH = 1000
_CREDENTIAL_CODES = {
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "InvalidClientTokenId",
    "ExpiredToken",
    "AccessDenied",
    "AuthorizationHeaderMalformed",
    "InvalidToken",
    "403",
}


class Bucket:
    """One target's bucket and prefix. Thread-safe: uploads run on a pool."""

    def __init__(self, config: PublishConfig) -> None:
        try:
            import boto3
            from botocore.config import Config as BotoConfig
        except ImportError:
            raise PublishError(
                "publishing needs boto3, which is not installed: pip install 'listlib[publish]'"
            ) from None
        self.config = config
        self.where = config.target + (f" at {config.endpoint_url}" if config.endpoint_url else "")
        try:
            session = boto3.session.Session(profile_name=config.profile)
            self.client: Any = session.client(
                "s3",
                endpoint_url=config.endpoint_url,
                region_name=config.region,
                config=BotoConfig(
                    retries={"mode": config.retry_mode, "max_attempts": config.max_attempts},
                    max_pool_connections=config.workers,
                    connect_timeout=10,
                    read_timeout=60,
                    s3={"addressing_style": "path" if config.endpoint_url else "auto"},
                ),
            )
        except Exception as exc:
            raise self._error(exc) from None
        self.bucket = config.bucket
        self.prefix = config.prefix

    def key(self, path: str) -> str:
        return self.prefix + path

    def get(self, path: str, etag: str | None = None, *, check: bool = True) -> tuple[bytes | None, str | None]:
        """The object's bytes and ETag; (None, None) when there is none (after checking
        the bucket exists, when ``check``); (None, etag) when it is still ``etag``."""
        options: dict[str, str] = {"IfNoneMatch": etag} if etag else {}
        try:
            answer = self.client.get_object(Bucket=self.bucket, Key=self.key(path), **options)
            return answer["Body"].read(), answer.get("ETag")
        except Exception as exc:
            code = _code(exc)
            if code in {"304", "NotModified"}:
                return None, etag
            if code in {"NoSuchKey", "404"}:
                if check:
                    self.check_bucket()
                return None, None
            raise self._error(exc) from None

    def check_bucket(self) -> None:
        try:
            self.client.head_bucket(Bucket=self.bucket)
        except Exception as exc:
            raise self._error(exc) from None

    def sizes(self) -> dict[str, int]:
        """Path under the prefix -> size of every object there (one LIST per 1,000)."""
        found: dict[str, int] = {}
        try:
            for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self.prefix):
                for item in page.get("Contents", []):
                    found[item["Key"][len(self.prefix) :]] = int(item["Size"])
        except Exception as exc:
            raise self._error(exc) from None
        return found

    def put_file(
        self,
        path: str,
        file: Path,
        content_type: str,
        cache_control: str,
        size: int,
        *,
        disposition: str | None = None,
        redirect: str | None = None,
    ) -> None:
        """Upload ``file``; ``redirect`` (a URL relative to the prefix, or an http(s) URL) also
        makes the bucket's website endpoint answer it with a 301 there."""
        headers = {"ContentType": content_type, "CacheControl": cache_control}
        if disposition:
            headers["ContentDisposition"] = disposition
        if redirect:
            headers["WebsiteRedirectLocation"] = self.location(redirect)
        try:
            if size >= MULTIPART_BYTES:
                self.client.upload_file(str(file), self.bucket, self.key(path), ExtraArgs=headers)
                return
            with file.open("rb") as body:
                self.client.put_object(Bucket=self.bucket, Key=self.key(path), Body=body, **headers)
        except FileNotFoundError:
            raise PublishError(
                f"{file}: missing, though the last build made it; run 'listlib build' (or wait for the running one)"
            ) from None
        except Exception as exc:
            raise self._error(exc, path) from None

    def put_redirect(self, path: str, target: str, content_type: str, cache_control: str) -> None:
        """An empty object that a bucket's website endpoint answers with a 301 to the object
        ``target`` (a path under the prefix, like ``path``): how a symlink of output/ is
        published (``x-amz-website-redirect-location``, its ``%XX`` escaped)."""
        try:
            self.client.put_object(
                Bucket=self.bucket,
                Key=self.key(path),
                Body=b"",
                ContentType=content_type,
                CacheControl=cache_control,
                WebsiteRedirectLocation=self.location(quote(target)),
            )
        except Exception as exc:
            raise self._error(exc, path) from None

    def location(self, target: str) -> str:
        """``x-amz-website-redirect-location`` of ``target``: an absolute URL as it is, a
        URL relative to output/ as the URL of the object's key from the bucket's root."""
        if target.startswith(("http://", "https://")):
            return target
        return "/" + self.key(target)

    def put_bytes(self, path: str, data: bytes, content_type: str) -> str | None:
        """Write a small object; its new ETag."""
        try:
            answer = self.client.put_object(
                Bucket=self.bucket, Key=self.key(path), Body=data, ContentType=content_type, CacheControl="no-store"
            )
        except Exception as exc:
            raise self._error(exc, path) from None
        return answer.get("ETag")

    def delete(self, paths: list[str]) -> None:
        for start in range(0, len(paths), _DELETE_BATCH):
            batch = paths[start : start + _DELETE_BATCH]
            try:
                answer = self.client.delete_objects(
                    Bucket=self.bucket, Delete={"Objects": [{"Key": self.key(p)} for p in batch], "Quiet": True}
                )
            except Exception as exc:
                raise self._error(exc) from None
            errors = answer.get("Errors") or []
            if errors:
                first = errors[0]
                why = f"{first.get('Code')} {first.get('Message', '')}".rstrip()
                raise PublishError(f"{self.where}: cannot delete {first.get('Key')}: {why}")

    def _error(self, exc: Exception, path: str | None = None) -> PublishError:
        """One sentence for a botocore failure."""
        from botocore import exceptions as errors

        where = self.where
        about = f" (writing {path})" if path else ""
        if isinstance(exc, errors.NoCredentialsError | errors.PartialCredentialsError):
            return PublishError(
                f"{where}: no AWS credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
                "or a profile in ~/.aws/credentials ('profile' in [publish] or AWS_PROFILE)"
            )
        if isinstance(exc, errors.ProfileNotFound):
            return PublishError(f"{where}: {exc}")
        if isinstance(exc, errors.EndpointConnectionError | errors.ConnectionClosedError | errors.ConnectTimeoutError):
            return PublishError(f"{where}: cannot reach the endpoint ({exc})")
        if isinstance(exc, errors.ReadTimeoutError):
            return PublishError(f"{where}: the endpoint did not answer in time{about}")
        code = _code(exc)
        if code in {"NoSuchBucket"} or (code == "404" and path is None):
            return PublishError(f"{where}: bucket {self.bucket!r} does not exist")
        if code in _CREDENTIAL_CODES:
            return PublishError(f"{where}: the credentials were refused ({code}){about}")
        if code is not None:
            message = getattr(exc, "response", {}).get("Error", {}).get("Message") or ""
            return PublishError(f"{where}: {code} {message}".rstrip() + about)
        return PublishError(f"{where}: {exc}{about}")


def _code(exc: Exception) -> str | None:
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return None
    code = response.get("Error", {}).get("Code")
    return str(code) if code is not None else None
