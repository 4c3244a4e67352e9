"""Patch subject prefixes (listlib.patchsubject): the shapes linux-raid's subjects take."""

from __future__ import annotations

import re

import pytest

from listlib.patchsubject import PatchSubject, parse_subject

from .support.helpers import CORPORA


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        ("[PATCH] md: fix a leak", PatchSubject("md: fix a leak", True)),
        ("[PATCH 0/5] raid5 batching", PatchSubject("raid5 batching", True, number=0, total=5)),
        ("[PATCH v3 2/7] md: x", PatchSubject("md: x", True, version=3, number=2, total=7)),
        ("[PATCH V2] md: x", PatchSubject("md: x", True, version=2)),
        ("[PATCHv4 dlm/next 1/2] x", PatchSubject("x", True, version=4, number=1, total=2, tags=("dlm/next",))),
        ("[PATCH 1/3 v2] x", PatchSubject("x", True, version=2, number=1, total=3)),
        ("[PATCH, v2] x", PatchSubject("x", True, version=2)),
        ("[PATCH -next v2 3/4] x", PatchSubject("x", True, version=2, number=3, total=4, tags=("-next",))),
        ("[RFC PATCH v2 1/2] x", PatchSubject("x", True, rfc=True, version=2, number=1, total=2)),
        ("[PATCH RFC md-6.9 v2 1/9] x", PatchSubject("x", True, True, False, 2, 1, 9, ("md-6.9",))),
        ("[RFC][PATCH v2 1/2] x", PatchSubject("x", True, rfc=True, version=2, number=1, total=2)),
        ("[PATCH RESEND] x", PatchSubject("x", True, resend=True)),
        ("[PATCH/RFC] x", PatchSubject("x", True, rfc=True)),
        ("[PATCHSET 0/2] x", PatchSubject("x", True, number=0, total=2)),
        ("[PATCH AUTOSEL 5.4 1/3] x", PatchSubject("x", True, number=1, total=3, tags=("AUTOSEL", "5.4"))),
        ("[PATCH for-5.13/block 1/2] x", PatchSubject("x", True, number=1, total=2, tags=("for-5.13/block",))),
        ("[mdadm PATCH 1/2] x", PatchSubject("x", True, number=1, total=2, tags=("mdadm",))),
        ("Re: [PATCH v2 1/2] md: x", PatchSubject("md: x", True, version=2, number=1, total=2, reply=True)),
        ("RE: Re: [PATCH] x", PatchSubject("x", True, reply=True)),
        ("Re[2]: [PATCH] x", PatchSubject("x", True, reply=True)),
        ("AW: [PATCH] x", PatchSubject("x", True, reply=True)),
        ("Re: RAID rebuild is slow", PatchSubject("RAID rebuild is slow", reply=True)),
        ("[mdadm] question about --grow", PatchSubject("question about --grow", tags=("mdadm",))),
        ("md: a subject without brackets [PATCH]", PatchSubject("md: a subject without brackets [PATCH]")),
        ("", PatchSubject("")),
        ("[PATCH", PatchSubject("[PATCH")),
    ],
)
def test_subject_prefixes_are_read_into_their_parts(subject: str, expected: PatchSubject) -> None:
    assert parse_subject(subject) == expected


def test_a_cover_letter_is_number_zero_of_a_series() -> None:
    assert parse_subject("[PATCH v2 0/3] x").cover_letter
    assert not parse_subject("[PATCH v2 1/3] x").cover_letter
    assert not parse_subject("[PATCH] x").cover_letter


def test_linux_raid_patch_subjects_parse_sensibly() -> None:
    source = CORPORA / "mbox" / "linux-raid.mboxrd.gz"
    if not source.exists():
        pytest.skip("the linux-raid corpus is not present")
    from listlib.filers import open_source
    from listlib.message import decode_header_value, split_message

    patches = series = odd = 0
    missed = []
    for mail in open_source(source).iter_mail():
        header = split_message(mail.raw)[0]
        found = re.search(rb"(?im)^subject:(.*(?:\r?\n[ \t].*)*)", header)
        subject = decode_header_value(found.group(1)) if found else ""
        if not re.search(r"\[[^\]]*(?:patch|rfc)", subject, re.I):
            continue
        parsed = parse_subject(subject)
        if not parsed.is_patch:
            # "[PATCH" only later in the subject, after the title started.
            if re.match(r"(?i)\s*(?:(?:re|fwd?|aw|sv)\s*:\s*)*\[[^\]]*(?:patch|rfc)", subject):
                missed.append(subject)
            continue
        patches += 1
        assert 0 <= parsed.version < 100 and parsed.title, subject  # "[PATCH v0 0/3]" happens
        if parsed.total is not None:
            series += 1
            odd += not 0 <= parsed.number <= parsed.total  # type: ignore[operator]
    assert missed == []
    assert patches > 10_000 and series > 8_000
    assert odd < series / 1000  # "[PATCH 3/2]" (a late extra patch) happens, rarely
