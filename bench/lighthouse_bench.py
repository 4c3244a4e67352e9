#!/usr/bin/env python3
"""Lighthouse benchmark: the accessibility and performance scores of each kind of page.

Builds the repository's example site (``listlib.toml`` and ``sample/``) in a temporary
folder, or takes an already built ``--output`` folder (e.g. linux-raid's), serves it over
http on 127.0.0.1 and runs Lighthouse (npm ``lighthouse``, version 12 needs Node 18.20+)
in the installed headless Chromium on: the site index, a list index, a month page, its
by-date page, the largest thread page, the search page with results and the 404 page.
Prints each page's accessibility and performance score (0-100) and the audits that
cost points; ``--json PATH`` keeps them.

    npm install --prefix tests/.node lighthouse@12      # once; tests/.node/ is git-ignored
    python3 bench/lighthouse_bench.py
    python3 bench/lighthouse_bench.py --preset desktop --output /path/to/site/output
    python3 bench/lighthouse_bench.py --gzip --output /path/to/site/output

Targets (issue 29): accessibility 100, performance >= 95 on every page. The server is
Python's plain ``http.server``: no cache headers, and no compression unless ``--gzip``
(text files gzip-compressed, as static hosts and CDNs serve them; an uncompressed page
of a few hundred KB costs Lighthouse's simulated slow-4G phone its first paint).
Lighthouse's audits about those headers are the server's, not the pages'.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

REPO = Path(__file__).resolve().parent.parent
LOCAL_CLI = REPO / "tests" / ".node" / "node_modules" / "lighthouse" / "cli" / "index.js"
CATEGORIES = ("accessibility", "performance")


def lighthouse_command() -> list[str]:
    """How to start Lighthouse: the project-local install, else one on PATH."""
    node = shutil.which("node")
    if LOCAL_CLI.is_file() and node:
        return [node, str(LOCAL_CLI)]
    found = shutil.which("lighthouse")
    if found:
        return [found]
    sys.exit("Lighthouse is not installed: npm install --prefix tests/.node lighthouse@12 (needs Node 18.20+)")


def chromium() -> str:
    found = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
    if found is None:
        sys.exit("no Chromium found (apt-get install chromium)")
    return found


def build_sample(folder: Path) -> Path:
    """The example site of this repository, imported and built in ``folder``: its output."""
    shutil.copy(REPO / "listlib.toml", folder / "listlib.toml")
    shutil.copytree(REPO / "sample", folder / "sample")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for step in (["import", "sample"], ["build"]):
        subprocess.run([sys.executable, "-m", "listlib", *step], cwd=folder, env=env, check=True, capture_output=True)
    return folder / "output"


def pages(output: Path, query: str) -> dict[str, str]:
    """The page of each kind in a built output folder, as paths under it."""
    months = sorted(output.glob("*/[0-9][0-9][0-9][0-9]/[0-9][0-9]/index.html"))
    if not months:
        sys.exit(f"{output} holds no month page: is it a built listlib site?")
    month = months[-1]
    threads = [
        p for p in output.glob("*/[0-9][0-9][0-9][0-9]/[0-9][0-9]/*.html") if p.name not in ("index.html", "date.html")
    ]
    largest = max(threads, key=lambda p: p.stat().st_size)
    found = {
        "site index": "index.html",
        "list index": month.parents[2].relative_to(output).as_posix() + "/index.html",
        "month": month.relative_to(output).as_posix(),
        "by date": month.with_name("date.html").relative_to(output).as_posix(),
        "largest thread": largest.relative_to(output).as_posix(),
        "search": "search/index.html?q=" + quote(query),
        "404": "404.html",
    }
    return {kind: path for kind, path in found.items() if (output / path.split("?")[0]).is_file()}


def run_lighthouse(command: list[str], url: str, preset: str, browser: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="listlib-lighthouse-") as scratch:
        report = Path(scratch) / "report.json"
        args = [
            *command,
            url,
            "--quiet",
            "--output=json",
            f"--output-path={report}",
            f"--only-categories={','.join(CATEGORIES)}",
            "--chrome-flags=--headless --no-sandbox --disable-gpu",
        ]
        if preset == "desktop":
            args.append("--preset=desktop")
        subprocess.run(args, check=True, env={**os.environ, "CHROME_PATH": browser, "TMPDIR": scratch}, timeout=300)
        return json.loads(report.read_text())  # type: ignore[no-any-return]


def summary(report: dict[str, Any]) -> dict[str, Any]:
    """The scores (0-100) and, per category, the audits that cost points."""
    out: dict[str, Any] = {"lighthouse": report["lighthouseVersion"]}
    for name in CATEGORIES:
        category = report["categories"][name]
        out[name] = round(100 * (category["score"] or 0))
        lost = []
        for ref in category["auditRefs"]:
            audit = report["audits"][ref["id"]]
            if ref["weight"] and audit.get("score") is not None and audit["score"] < 1:
                lost.append(f"{ref['id']} {audit['score']:.2f}")
        out[f"{name} lost"] = lost
    return out


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


_COMPRESSED = (".html", ".css", ".js", ".json", ".xml", ".txt", ".atom")


class _Gzipped(_Quiet):
    """Text files gzip-compressed for a client that accepts it (``Content-Encoding: gzip``),
    as static hosts and CDNs send them (GitHub Pages, Netlify, Cloudflare, nginx's
    ``gzip on``); everything else as it is."""

    def send_head(self):  # type: ignore[no-untyped-def]
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        accepts = "gzip" in self.headers.get("Accept-Encoding", "")
        if not (accepts and path.suffix in _COMPRESSED and path.is_file()):
            return super().send_head()
        body = gzip.compress(path.read_bytes(), 6)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, help="a built site's output folder (default: build the example site)")
    parser.add_argument("--preset", choices=("mobile", "desktop"), default="mobile", help="Lighthouse's form factor")
    parser.add_argument("--query", default="patch", help="the search page's query (default: patch)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--gzip", action="store_true", help="serve text files gzip-compressed, as static hosts and CDNs do"
    )
    options = parser.parse_args()
    command, browser = lighthouse_command(), chromium()
    version = subprocess.run([*command, "--version"], capture_output=True, text=True).stdout.strip()
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    served = "gzip-compressed" if options.gzip else "uncompressed"
    print(f"Lighthouse {version}, Node {node}, {Path(browser).name}, preset {options.preset}, pages {served}")
    with tempfile.TemporaryDirectory(prefix="listlib-lighthouse-site-", dir=REPO.parent) as folder:
        output = options.output.resolve() if options.output else build_sample(Path(folder))
        handler = partial(_Gzipped if options.gzip else _Quiet, directory=str(output))
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        results: dict[str, Any] = {}
        try:
            base = f"http://127.0.0.1:{httpd.server_address[1]}/"
            for kind, path in pages(output, options.query).items():
                size = (output / path.split("?")[0]).stat().st_size
                results[kind] = {
                    "path": path,
                    "bytes": size,
                    **summary(run_lighthouse(command, base + path, options.preset, browser)),
                }
                row = results[kind]
                lost = "; ".join(row["accessibility lost"] + row["performance lost"])
                print(
                    f"{kind:15} a11y {row['accessibility']:3d}  perf {row['performance']:3d}  {size:>9,} B  {path}"
                    + (f"  [{lost}]" if lost else "")
                )
        finally:
            httpd.shutdown()
            httpd.server_close()
            thread.join(5)
    worst = {name: min(row[name] for row in results.values()) for name in CATEGORIES}
    met = worst["accessibility"] == 100 and worst["performance"] >= 95
    print(
        f"lowest: accessibility {worst['accessibility']}, performance {worst['performance']} "
        f"(target 100 and >= 95: {'met' if met else 'NOT met'})"
    )
    if options.json:
        record = {"preset": options.preset, "gzip": options.gzip, "pages": results}
        options.json.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
