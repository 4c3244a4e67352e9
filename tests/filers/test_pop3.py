"""The POP3 filer's wire decoding (sessions against a real server: fetch/test_fetch.py)."""

from __future__ import annotations

import pytest

from listlib.filers.pop3 import from_wire


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        (b"\r\nSubject: x\r\n\r\nbody\r\n", b"Subject: x\n\nbody\n"),
        (b"\r\n", b""),
        (b"\r\nS: x\r\n\r\n..\r\n...\r\n..x\r\n. y\r\n", b"S: x\n\n.\n..\n.x\n. y\n"),
        (b"\r\n..x: starts with a dot\r\n", b".x: starts with a dot\n"),
        (b"\r\nx\ry\x00z\r\n", b"x\ry\x00z\n"),
        (b"\r\n\xe9t\xe9\r\n", b"\xe9t\xe9\n"),
    ],
)
def test_wire_form_becomes_stored_bytes(wire: bytes, message: bytes) -> None:
    assert from_wire(wire) == message


def test_a_first_line_the_server_left_unstuffed_keeps_its_dot() -> None:
    # Dovecot 2.3 does not dot-stuff the first line of a message.
    assert from_wire(b"\r\n.x: starts with a dot\r\n") == b".x: starts with a dot\n"
