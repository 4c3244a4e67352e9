"""The options every command takes (-c/--config, -q/--quiet, --debug) work before the
command name and after it, and each command's --help lists them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ..support.helpers import make_message, mboxrd, run_listlib

COMMANDS = [
    "init",
    "import",
    "build",
    "serve",
    "search",
    "fetch",
    "check",
    "threads",
    "series",
    "deliver",
    "bounces",
    "unrouted",
    "hide",
    "unhide",
    "remove",
    "redact",
    "ledger",
    "legacy",
    "publish",
]


def test_every_command_is_listed_here(tmp_path: Path) -> None:
    listed = run_listlib("--help", cwd=tmp_path, check=True).stdout.split("Commands:")[1]
    assert sorted(line.split()[0] for line in listed.splitlines() if line.strip()) == sorted(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_takes_the_common_options(tmp_path: Path, command: str) -> None:
    result = run_listlib(command, "-c", "elsewhere.toml", "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for option in ("-c, --config FILE", "-q, --quiet", "--debug"):
        assert option in result.stdout, (command, result.stdout)


def test_quiet_after_the_command_is_quiet_before_it(tmp_path: Path) -> None:
    outputs = []
    for number, args in enumerate((["-q", "import"], ["import", "-q"], ["import", "--quiet"], ["import"])):
        site = tmp_path / f"site{number}"
        run_listlib("init", site, cwd=tmp_path, check=True)
        mail = site / "mail"
        mail.mkdir()
        (mail / "README").write_text("not mail\n")
        (mail / "one.mbox").write_bytes(mboxrd([make_message()]))
        outputs.append(run_listlib(*args, "mail", cwd=site, check=True))
    quiet_before, *quiet_after, loud = outputs
    assert "skipped 1 file" not in quiet_before.stderr and "skipped 1 file" in loud.stderr

    def untimed(text: str) -> str:  # the summary's time differs from run to run on a loaded machine
        return re.sub(r"in \d+\.\d s", "in T s", text)

    for result in quiet_after:
        assert (untimed(result.stdout), result.stderr) == (untimed(quiet_before.stdout), quiet_before.stderr)


def test_config_after_the_command_is_used_and_wins_over_the_groups(site: Path) -> None:
    text = (site / "listlib.toml").read_text()
    for name in ("one", "two"):  # separate caches: the build records belong to one output folder
        (site / f"{name}.toml").write_text(
            text.replace("[site]\n", f'[site]\noutput_dir = "{name}"\ncache_dir = ".cache-{name}"\n')
        )
    run_listlib("build", "-c", "one.toml", cwd=site, check=True)
    assert (site / "one/index.html").is_file() and not (site / "output").exists()
    run_listlib("-c", "one.toml", "build", "--config", "two.toml", cwd=site, check=True)
    assert (site / "two/index.html").is_file() and not (site / "output").exists()


def test_debug_after_the_command_shows_the_traceback(site: Path) -> None:
    (site / "listlib.toml").write_text("[site]\ntitle = 3\n")
    plain = run_listlib("check", cwd=site)
    assert plain.returncode == 1 and "Traceback" not in plain.stderr
    for args in (["check", "--debug"], ["--debug", "check"]):
        result = run_listlib(*args, cwd=site)
        assert result.returncode == 1 and "Traceback" in result.stderr and "site.title" in result.stderr


def test_init_refuses_a_config_path(tmp_path: Path) -> None:
    for args in (["init", "-c", "x.toml", "new"], ["-c", "x.toml", "init", "new"]):
        result = run_listlib(*args, cwd=tmp_path)
        assert result.returncode == 2 and "instead of --config" in result.stderr
    assert not (tmp_path / "new").exists()
