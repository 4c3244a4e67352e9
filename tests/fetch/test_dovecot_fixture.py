"""The Dovecot fixtures skip, saying why, on a machine where Dovecot is missing or half
installed, and fail loudly when an installed Dovecot does not start."""

from __future__ import annotations

import imaplib
import ssl
from pathlib import Path

import pytest

from ..support.dovecot import DovecotServer
from ..support.helpers import new_dovecot, new_imap_dovecot

HELPERS = ("config", "log", "anvil", "auth", "pop3-login", "pop3")


def fake_dovecot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, helpers: tuple[str, ...]) -> Path:
    """A dovecot binary that exits at once, with ``helpers`` in its helper folder."""
    binary = tmp_path / "dovecot"
    binary.write_text("#!/bin/sh\necho 'Fatal: this dovecot is a fake' >&2\nexit 89\n")
    binary.chmod(0o755)
    libexec = tmp_path / "libexec"
    libexec.mkdir()
    for name in helpers:
        (libexec / name).write_text("")
    monkeypatch.setenv("LISTLIB_DOVECOT", str(binary))
    monkeypatch.setenv("LISTLIB_DOVECOT_LIBEXEC", str(libexec))
    return libexec


def test_no_dovecot_binary_skips_with_the_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LISTLIB_DOVECOT", str(tmp_path / "nowhere/dovecot"))
    with pytest.raises(pytest.skip.Exception, match=r"dovecot is not installed: no .*nowhere/dovecot"):
        new_dovecot()


@pytest.mark.parametrize("missing", ["pop3", "pop3-login", "auth"])
def test_a_half_installed_dovecot_skips_naming_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    libexec = fake_dovecot(tmp_path, monkeypatch, tuple(h for h in HELPERS if h != missing))
    with pytest.raises(pytest.skip.Exception, match="half installed") as info:
        new_dovecot()
    assert f"{libexec / missing} (apt-get install" in str(info.value)


def test_an_installed_dovecot_that_does_not_start_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_dovecot(tmp_path, monkeypatch, HELPERS)
    server = new_dovecot()
    assert isinstance(server, DovecotServer)
    with pytest.raises(RuntimeError, match=r"dovecot exited: .*this dovecot is a fake"), server:
        pass
    assert not server.base.exists()


def test_without_dovecot_imapd_the_imap_fixture_skips_and_pop3_still_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_dovecot(tmp_path, monkeypatch, HELPERS)  # no imap, imap-login
    with pytest.raises(pytest.skip.Exception, match=r"dovecot-imapd is not installed: no .*imap-login"):
        new_imap_dovecot()
    server = new_dovecot()
    try:
        assert not server.has_imap  # a POP3-only configuration
        assert "protocols = pop3\n" in (server.base / "dovecot.conf").read_text()
    finally:
        server.stop()


def test_the_imap_server_announces_idle_unless_told_not_to() -> None:
    def capabilities(server: DovecotServer) -> set[str]:
        mailbox = server.add_user("ann")
        context = ssl.create_default_context(cafile=str(server.ca_file))
        conn = imaplib.IMAP4_SSL("127.0.0.1", server.imaps_port, ssl_context=context, timeout=30)
        try:
            conn.login(mailbox.user, mailbox.password)
            return set(conn.capability()[1][-1].decode().split())
        finally:
            conn.logout()

    with new_imap_dovecot() as server:
        assert {"IDLE", "MOVE", "UIDPLUS"} <= capabilities(server)
    with new_imap_dovecot("IMAP4rev1 LITERAL+") as server:
        assert not {"IDLE", "MOVE", "UIDPLUS"} & capabilities(server)
