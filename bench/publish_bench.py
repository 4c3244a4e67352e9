#!/usr/bin/env python3
"""Publish benchmark: ``listlib publish`` of a generated archive to a local S3 API.

A generated archive (``build_bench.generate``, ``--messages N``, default 2,000) is
imported and built in a fresh site, then published (real commands, subprocesses) to
moto's S3 server on 127.0.0.1 (``pip install 'moto[server]'``, in this process):

- the first publish: files, bytes, wall time, files/second, peak PSS of the process;
- a publish with nothing new: wall time and requests (target: no PUT, <= 1 s at 50,000
  messages);
- one reply to an old thread, imported and built, then published: the files uploaded,
  the requests, wall time (target: <= 30 requests and <= 2 s at 50,000 messages).

moto keeps every object in this process's memory and answers from one Python thread
per request: the rates measure listlib and moto together, a lower bound for a real
server.

    python3 bench/publish_bench.py
    python3 bench/publish_bench.py --messages 50000 --site-dir /dev/shm
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

from build_bench import REPO, SITE_TOML, generate, listlib, reply_to_old_thread

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
    "AWS_CONFIG_FILE": "/nonexistent",
    "AWS_EC2_METADATA_DISABLED": "true",
}
_REQUEST_RE = re.compile(r'"([A-Z]+) \S+ HTTP/[\d.]+"')


class Requests(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.methods: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        found = _REQUEST_RE.search(re.sub(r"\x1b\[[\d;]*m", "", record.getMessage()))
        if found:
            self.methods[found[1]] += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--site-dir", type=Path, default=None, help="where to make the site (default: a temp dir)")
    args = parser.parse_args()

    import os

    import boto3
    from moto.server import ThreadedMotoServer

    os.environ.update(CREDENTIALS)
    requests = Requests()
    werkzeug = logging.getLogger("werkzeug")
    werkzeug.addHandler(requests)
    werkzeug.setLevel(logging.INFO)
    werkzeug.propagate = False
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    boto3.client("s3", endpoint_url=url, region_name="us-east-1").create_bucket(Bucket="bench")

    scratch = Path(tempfile.mkdtemp(prefix="publish-bench-", dir=args.site_dir))
    try:
        site = scratch / "site"
        site.mkdir()
        (site / "listlib.toml").write_text(
            SITE_TOML + f'[publish]\ntarget = "s3://bench/site"\nendpoint_url = "{url}"\nregion = "us-east-1"\n'
        )
        mbox = generate(args.messages, scratch / "archive.mbox")
        listlib("import", "--list", "bench", mbox, cwd=site)
        listlib("build", "-q", cwd=site)
        print(f"{args.messages} messages, REPO {REPO}")

        def publish(label: str) -> None:
            requests.methods.clear()
            run = listlib("publish", "--json", cwd=site)
            report = json.loads(run.out)
            rate = report["uploaded"] / run.wall if run.wall else 0.0
            print(
                f"{label:<12} {run.wall:6.2f} s  {report['uploaded']:>7} uploaded {report['unchanged']:>7} unchanged "
                f"{report['bytes'] / 1e6:8.1f} MB  {rate:7.0f} files/s  peak {run.peak / 2**20:5.0f} MB  "
                f"requests {dict(requests.methods)}",
                flush=True,
            )

        publish("first")
        publish("no change")
        reply = scratch / "reply.eml"
        reply_to_old_thread(site, reply)
        listlib("import", "--list", "bench", reply, cwd=site)
        listlib("build", "-q", cwd=site)
        publish("one reply")
    finally:
        server.stop()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
