"""The message classifier: ordered rules, first match wins; the site's rules from
listlib.toml come before the default ones."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from listlib.classify import DEFAULT_RULES, Rule, _has_by, classify_message, compile_pattern, rules_digest
from listlib.config import load_config
from listlib.errors import ConfigError
from tests.support.helpers import SITE_TOML, make_message

DIFF = """\
Signed-off-by: Ann Example <ann@example.org>
---
 drivers/md/raid1.c | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/drivers/md/raid1.c b/drivers/md/raid1.c
index 1111111..2222222 100644
--- a/drivers/md/raid1.c
+++ b/drivers/md/raid1.c
@@ -10,7 +10,7 @@ static int f(void)
-	return 0;
+	return 1;
"""
QUOTED_DIFF = """\
On Mon, Ann wrote:
> @@ -10,7 +10,7 @@ static int f(void)
> -	return 0;
> +	return 1;

Why 1? This breaks the resync path.
"""


def test_patch_subjects_and_cover_letters_are_told_apart() -> None:
    assert classify_message(make_message("[PATCH v2 1/3] md: fix it", DIFF)) == "patch"
    assert classify_message(make_message("[PATCH v2 0/3] md: fixes", "This series fixes...\n")) == "cover"
    assert classify_message(make_message("[RFC PATCH] md: idea", DIFF)) == "patch"


def test_a_reply_to_a_patch_is_a_review_when_it_quotes_the_diff_or_gives_a_trailer() -> None:
    assert classify_message(make_message("Re: [PATCH 1/3] md: fix it", QUOTED_DIFF)) == "review"
    trailer = "> some commit message\n\nReviewed-by: Bob <bob@example.org>\n"
    assert classify_message(make_message("Re: [PATCH] md: fix it", trailer)) == "review"
    assert classify_message(make_message("Re: [PATCH] md: fix it", "Applied to md-next, thanks.\n")) == "review"


def test_a_trailer_counts_only_outside_quotes() -> None:
    quoted = "> Reviewed-by: Bob <bob@example.org>\n\nDoes this also fix bug 12?\n"
    assert classify_message(make_message("Re: disk trouble", quoted)) == "discussion"
    given = "> the fix\n\nReviewed-by: Bob <bob@example.org>\n"
    assert classify_message(make_message("Re: disk trouble", given)) == "review"


def test_robots_are_automated_even_when_they_answer_a_patch() -> None:
    robot = make_message("Re: [PATCH] md: fix it", QUOTED_DIFF, sender="kernel test robot <lkp@intel.com>")
    assert classify_message(robot) == "automated"
    auto = make_message("Build failed", "red\n", extra={"Auto-Submitted": "auto-generated"})
    assert classify_message(auto) == "automated"
    assert classify_message(make_message("[Bug 1] crash", "x\n", extra={"X-Bugzilla-Reason": "CC"})) == "automated"


def test_a_human_whose_address_says_robot_is_not_automated() -> None:
    human = make_message("Re: disk failed", "Try mdadm --examine.\n", sender="David T-G <davidtg-robot@example.org>")
    assert classify_message(human) == "discussion"


def test_votes_and_announcements_are_read_from_the_subject() -> None:
    assert classify_message(make_message("[VOTE] Release Twisted 2.0", "+1\n")) == "vote"
    assert classify_message(make_message("Re: [VOTE] Release Twisted 2.0", "+1\n")) == "vote"
    assert classify_message(make_message("[ANN] Twisted 2.0 released", "Get it.\n")) == "announcement"
    assert classify_message(make_message("ANNOUNCE: mdadm 4.2", "Get it.\n")) == "announcement"
    assert classify_message(make_message("Re: [ANN] Twisted 2.0 released", "Thanks!\n")) == "discussion"


def test_mail_carrying_a_diff_is_a_patch_with_or_without_a_patch_subject() -> None:
    assert classify_message(make_message("fix for the reactor", DIFF)) == "patch"
    assert classify_message(make_message("Re: reactor hangs", "Try this:\n\n" + DIFF)) == "patch"
    attached = 'Content-Type: text/x-diff; name="0001-fix.patch"\nContent-Transfer-Encoding: base64\n\nAAAA\n'
    mixed = {"Content-Type": 'multipart/mixed; boundary="b"'}
    raw = make_message("Re: reactor hangs", "--b\n" + attached + "--b--\n", extra=mixed)
    assert classify_message(raw) == "patch"
    assert classify_message(make_message("Re: reactor hangs", QUOTED_DIFF)) == "discussion"


def test_pipermail_replies_without_re_are_still_replies() -> None:
    reply = make_message("[ANN] Twisted 2.0 released", "Thanks!\n", extra={"In-Reply-To": "<a@example.org>"})
    assert classify_message(reply) == "discussion"


def test_a_base64_body_is_decoded_before_the_signals_read_it() -> None:
    import base64

    body = base64.encodebytes(QUOTED_DIFF.encode()).decode()
    raw = make_message("Re: [PATCH] md: fix it", body, extra={"Content-Transfer-Encoding": "base64"})
    assert classify_message(raw) == "review"


def test_the_first_matching_rule_wins() -> None:
    mine = Rule("announcement", subject=compile_pattern(r"^\[PATCH"))
    raw = make_message("[PATCH] md: fix it", DIFF)
    assert classify_message(raw, (mine, *DEFAULT_RULES)) == "announcement"
    assert classify_message(raw, (*DEFAULT_RULES, mine)) == "patch"
    assert rules_digest((mine, *DEFAULT_RULES)) != rules_digest(DEFAULT_RULES)


def test_bad_mail_gets_a_class_without_an_error() -> None:
    for raw in (b"", b"\xff\xfe garbage", b"Subject: =?bogus?Q?x?=\n\n\x00", b"From: \n\n"):
        assert classify_message(raw) == "discussion"


def write_site(tmp_path: Path, extra: str) -> Path:
    path = tmp_path / "listlib.toml"
    path.write_text(SITE_TOML + extra)
    return path


def test_site_rules_come_before_the_defaults(tmp_path: Path) -> None:
    config = load_config(
        write_site(
            tmp_path,
            """
[[classes.rules]]
class = "automated"
sender = "ci@example\\\\.org"

[[classes.rules]]
class = "announcement"
header = "X-Release"
value = "^yes$"
""",
        )
    )
    rules = config.classes.rules
    assert config.classes.site_rules == 2 and rules[2:] == DEFAULT_RULES
    assert classify_message(make_message("[PATCH] x", DIFF, sender="CI <ci@example.org>"), rules) == "automated"
    assert classify_message(make_message("Version 3", "x\n", extra={"X-Release": "yes"}), rules) == "announcement"
    assert classify_message(make_message("Version 3", "x\n", extra={"X-Release": "no"}), rules) == "discussion"


def test_the_default_rules_can_be_turned_off(tmp_path: Path) -> None:
    config = load_config(
        write_site(
            tmp_path, '[classes]\ndefault_rules = false\n[[classes.rules]]\nclass = "patch"\nsignals = ["diff"]\n'
        )
    )
    assert len(config.classes.rules) == 1
    assert classify_message(make_message("[PATCH 0/2] x", "cover\n"), config.classes.rules) == "discussion"


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        ('class = "bug"\nsubject = "x"', r"classes\.rules\[0\]\.class: 'bug' is not a class"),
        (
            'class = "patch"\nsubject = "(unclosed"',
            r"classes\.rules\[0\]\.subject: '\(unclosed' is not a regular expression",
        ),
        ('class = "patch"', r"classes\.rules\[0\]: has no condition"),
        ('class = "patch"\nsignals = ["diffs"]', r"classes\.rules\[0\]\.signals\[0\]: 'diffs' is not a signal"),
        ('class = "patch"\nvalue = "x"', r"classes\.rules\[0\]\.value: needs 'header'"),
        ('class = "patch"\nheader = "X Bad"', r"classes\.rules\[0\]\.header: 'X Bad' is not a header field name"),
        ('class = "patch"\nsubjct = "x"', r"classes\.rules\[0\]\.subjct: unknown key \(did you mean subject\?\)"),
    ],
)
def test_a_bad_rule_is_an_error_naming_its_key(tmp_path: Path, rules: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected):
        load_config(write_site(tmp_path, f"[[classes.rules]]\n{rules}\n"))


def test_rules_that_are_not_tables_are_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"classes\.rules: expected an array of tables, got a string"):
        load_config(write_site(tmp_path, '[classes]\nrules = "patch"\n'))


def test_the_trailer_test_before_the_search_misses_no_case_re_ignores() -> None:
    # _has_by looks for the four ASCII spellings of "-by:": re.I takes nothing else for them.
    for letter in "-by:":
        taken = re.compile(re.escape(letter), re.I)
        assert {char for char in map(chr, range(0x110000)) if taken.fullmatch(char)} == {letter, letter.upper()}
    for text in (
        "Reviewed-by: Ann",
        "ACKED-BY: Bob",
        "tested-bY: x",
        "Nacked-By: y",
        "Reviewed-by:",
        "Reviewed by: Ann",
    ):
        assert _has_by(text) == bool(re.search("-by:", text, re.I))
