"""listlib deliver against a real SMTP server (aiosmtpd on 127.0.0.1): faults, retries, policy, bounces."""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from listlib.config import load_config

from ..support.delivery_site import DAMAGES, NOW, deliver, import_posts, make_site, post, queue_status, subscribers
from ..support.dovecot import make_test_ca
from ..support.helpers import make_message, run_listlib, subprocess_env, wait_until_stopped
from ..support.smtpserver import SmtpServer

HOUR = 3600.0


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    with SmtpServer() as server:
        yield server


def run_until_empty(site: Path, start: float = NOW, step: float = HOUR, rounds: int = 8) -> float:
    now = start
    for _ in range(rounds):
        deliver(site, now)
        if not [p for p in queue_status(site) if p["stage"] in ("new", "retry")]:
            return now
        now += step
    raise AssertionError(f"still pending after {rounds} runs: {queue_status(site)}")


def test_a_post_to_500_subscribers_with_mixed_failures_reaches_every_good_one_exactly_once(
    tmp_path: Path, smtp: SmtpServer
) -> None:
    subs = ["ok-poster@example.org", *subscribers(499)]
    site = make_site(tmp_path / "site", smtp, subs, max_recipients=40)
    out = import_posts(site, post(1))
    assert "1 post queued for delivery" in out
    first = deliver(site)
    assert "to retry" in first.stdout
    run_until_empty(site, NOW + HOUR)
    good = [s for s in subs if not s.startswith("perm")]
    perm = [s for s in subs if s.startswith("perm")]
    assert smtp.handler.received == Counter(good), "every good recipient gets it exactly once"
    status = queue_status(site)
    assert [(p["stage"], p["pending"], p["done"]) for p in status] == [("failed", 0, len(good))]
    assert status[0]["failures"] == dict.fromkeys(perm, "550 5.1.1 no such user here")
    # A further run sends nothing.
    again = deliver(site, NOW + 30 * HOUR)
    assert "nothing to send" in again.stdout
    assert sum(smtp.handler.received.values()) == len(good)


def test_the_forwarded_message_keeps_headers_and_body_and_adds_the_list_headers(
    tmp_path: Path, smtp: SmtpServer
) -> None:
    site = make_site(tmp_path / "site", smtp, ["ok-poster@example.org", "ann@example.com"])
    raw = make_message(
        "Re: the plan",
        body="Quoted text\n.a dot line\nFrom here on\n\xe9t\xe9\n",
        message_id="<reply@example.org>",
        sender="ok-poster@example.org",
        extra={"In-Reply-To": "<plan@example.org>", "References": "<root@x> <plan@example.org>", "List-Id": "<up.x>"},
    )
    import_posts(site, raw)
    deliver(site)
    [got] = smtp.handler.messages
    assert got.mail_from == "dev-bounces@lists.example.org"
    assert sorted(got.recipients) == ["ann@example.com", "ok-poster@example.org"]
    stored = next((site / "content" / "dev").rglob("*.eml"))
    call = stored.stem
    head, _, body = got.data.partition(b"\r\n\r\n")
    assert body == raw.partition(b"\n\n")[2].replace(b"\n", b"\r\n"), "body bytes unchanged (CRLF on the wire)"
    lines = head.split(b"\r\n")
    for field in (
        b"List-Id: Dev list <dev.lists.example.org>",
        b"List-Post: <mailto:dev@lists.example.org>",
        b"List-Archive: <https://lists.example.org/archive/dev/index.html>",
        b"List-Unsubscribe: <mailto:dev-request@lists.example.org?subject=unsubscribe>",
        b"List-Subscribe: <mailto:dev-request@lists.example.org?subject=subscribe>",
        f"Archived-At: <https://lists.example.org/archive/dev/2024/05/{call}.html>".encode(),
        b"Precedence: list",
        b"Message-ID: <reply@example.org>",
        b"In-Reply-To: <plan@example.org>",
        b"References: <root@x> <plan@example.org>",
        b"Subject: Re: the plan",
    ):
        assert field in lines, field
    assert b"List-Id: <up.x>" not in lines, "an upstream list's List-Id is replaced"


def test_smtp_server_down_keeps_posts_queued_until_it_is_back(tmp_path: Path) -> None:
    with SmtpServer() as probe:
        port = probe.port
    site = make_site(tmp_path / "site", port, ["ok-poster@example.org", "ann@example.com"])
    import_posts(site, post(1), post(2))
    down = deliver(site)
    assert "cannot be used" in down.stderr and "stay queued" in down.stderr
    assert [p["stage"] for p in queue_status(site)] == ["retry", "retry"]
    assert "nothing to send (2 waiting" in deliver(site, NOW + 60).stdout, "not due before the retry time"
    with SmtpServer(port) as server:
        back = deliver(site, NOW + 10 * 60)
        assert "2 posts done" in back.stdout
    assert server.handler.received == Counter({"ok-poster@example.org": 2, "ann@example.com": 2})
    assert queue_status(site) == []


def test_a_server_refusing_service_with_421_defers_every_post(tmp_path: Path, smtp: SmtpServer) -> None:
    site = make_site(tmp_path / "site", smtp, ["ok-poster@example.org", "ann@example.com"])
    import_posts(site, post(1))
    smtp.handler.down = True
    deliver(site)
    assert [p["stage"] for p in queue_status(site)] == ["retry"]
    smtp.handler.down = False
    run_until_empty(site, NOW + HOUR)
    assert smtp.handler.received == Counter({"ok-poster@example.org": 1, "ann@example.com": 1})


def test_data_rejected_with_554_fails_the_recipients_of_that_transaction_with_the_reply(
    tmp_path: Path, smtp: SmtpServer
) -> None:
    subs = ["ok-poster@example.org", "reject-data@example.com", "bob@example.com"]
    site = make_site(tmp_path / "site", smtp, subs, max_recipients=2)
    import_posts(site, post(1))
    deliver(site)
    [entry] = queue_status(site)
    assert entry["stage"] == "failed"
    assert entry["failures"] == {
        "ok-poster@example.org": "554 5.6.0 message content rejected",
        "reject-data@example.com": "554 5.6.0 message content rejected",
    }
    assert smtp.handler.received == Counter({"bob@example.com": 1})


def test_a_dropped_connection_mid_transaction_retries_only_that_transaction(tmp_path: Path, smtp: SmtpServer) -> None:
    subs = ["ok-poster@example.org", "drop@example.com", "carol@example.com", "dave@example.com"]
    site = make_site(tmp_path / "site", smtp, subs, max_recipients=2)
    import_posts(site, post(1))
    deliver(site)
    [entry] = queue_status(site)
    assert (entry["stage"], entry["done"], entry["pending"]) == ("retry", 2, 2)
    assert "closed" in entry["temporary"]["drop@example.com"]
    run_until_empty(site, NOW + HOUR)
    assert smtp.handler.received == Counter(subs)


def test_temporary_failures_give_up_after_give_up_days(tmp_path: Path, smtp: SmtpServer) -> None:
    site = make_site(tmp_path / "site", smtp, ["ok-poster@example.org", "temp9@example.com"], give_up_days=0.1)
    import_posts(site, post(1))
    now = NOW
    waits = []
    for _ in range(12):
        deliver(site, now)
        status = queue_status(site)
        if status[0]["stage"] != "retry":
            break
        waits.append(status[0]["next_try"] - now)
        now = status[0]["next_try"]
    assert waits == [300, 600, 1200, 2400, 0.1 * 86400 - 4500], "5 minutes, doubling, until the deadline"
    [entry] = queue_status(site)
    assert (entry["stage"], entry["done"]) == ("failed", 1)
    assert entry["failures"]["temp9@example.com"] == "gave up after 0.1 days: 450 4.2.1 mailbox busy, try later"
    assert smtp.handler.attempts["temp9@example.com"] == 6


def test_a_non_subscriber_post_is_held_then_released_or_dropped(tmp_path: Path, smtp: SmtpServer) -> None:
    site = make_site(tmp_path / "site", smtp, ["ann@example.com"])
    out = import_posts(site, post(1, sender="stranger@example.org"), post(2, sender="other@example.org"))
    assert "2 held for a moderator" in out
    deliver(site)
    assert smtp.handler.received == Counter()
    held = queue_status(site)
    assert [p["stage"] for p in held] == ["held", "held"]
    assert held[0]["held_reason"] == "stranger@example.org is not a subscriber"
    text = run_listlib("deliver", "--status", cwd=site, check=True).stdout
    assert "held: stranger@example.org is not a subscriber" in text
    as_json = run_listlib("deliver", "--status", "--json", cwd=site, check=True).stdout
    assert json.loads(as_json) == held
    run_listlib("deliver", "--release", held[0]["id"], "--drop", held[1]["id"], cwd=site, check=True)
    deliver(site)
    assert smtp.handler.received == Counter({"ann@example.com": 1})
    assert queue_status(site) == []
    # Importing the dropped and the released post again queues neither again.
    again = import_posts(site, post(1, sender="stranger@example.org"), post(2, sender="other@example.org"))
    assert "0 posts queued" in again or "posts queued" not in again
    bad = run_listlib("deliver", "--release", "nosuchid", cwd=site)
    assert bad.returncode == 1 and "no held post" in bad.stderr


def test_anyone_may_post_and_the_poster_can_be_excluded(tmp_path: Path, smtp: SmtpServer) -> None:
    site = make_site(
        tmp_path / "site", smtp, ["ann@example.com", "poster@example.org"], posters="anyone", exclude_poster=True
    )
    import_posts(site, post(1, sender="Poster <POSTER@example.org>"), post(2, sender="stranger@example.org"))
    deliver(site)
    assert smtp.handler.received == Counter({"ann@example.com": 2, "poster@example.org": 1})


def test_mail_that_already_went_through_the_list_is_archived_but_not_forwarded(
    tmp_path: Path, smtp: SmtpServer
) -> None:
    site = make_site(tmp_path / "site", smtp, ["ann@example.com", "ok-poster@example.org"])
    looped = post(1, extra={"List-Id": "Dev list <dev.lists.example.org>"})
    marked = post(2, extra={"X-Loop": "dev@lists.example.org"})
    out = import_posts(site, looped, marked)
    assert "2 messages" in out and "2 not forwarded (mail loop)" in out
    assert queue_status(site) == []
    assert len(list((site / "content" / "dev").rglob("*.eml"))) == 2


def test_reimporting_the_same_posts_queues_each_once(tmp_path: Path, smtp: SmtpServer) -> None:
    site = make_site(tmp_path / "site", smtp, ["ann@example.com", "ok-poster@example.org"])
    import_posts(site, post(1), post(2))
    deliver(site)
    again = import_posts(site, post(1), post(2))
    assert "0 filed" in again and "0 posts queued" in again
    deliver(site)
    assert smtp.handler.received == Counter({"ann@example.com": 2, "ok-poster@example.org": 2})


def test_plain_import_does_not_queue(tmp_path: Path, smtp: SmtpServer) -> None:
    site = make_site(tmp_path / "site", smtp, ["ann@example.com"])
    (site / "one.eml").write_bytes(post(1))
    run_listlib("import", site / "one.eml", cwd=site, check=True)
    assert queue_status(site) == []


def test_verp_sends_one_transaction_per_recipient_and_bounces_are_recorded(tmp_path: Path, smtp: SmtpServer) -> None:
    subs = ["ok-poster@example.org", "ann@example.com", "bob@example.net"]
    site = make_site(tmp_path / "site", smtp, subs, verp=True)
    import_posts(site, post(1))
    deliver(site)
    senders = sorted((m.mail_from, tuple(m.recipients)) for m in smtp.handler.messages)
    assert senders == [
        ("dev-bounces+ann=example.com@lists.example.org", ("ann@example.com",)),
        ("dev-bounces+bob=example.net@lists.example.org", ("bob@example.net",)),
        ("dev-bounces+ok-poster=example.org@lists.example.org", ("ok-poster@example.org",)),
    ]
    verp_bounce = make_message(
        "Undelivered Mail Returned to Sender",
        body="This is the mail system: the mailbox is gone.\n",
        message_id="<b1@mx.example.net>",
        sender="MAILER-DAEMON@mx.example.net",
        to="dev-bounces+bob=example.net@lists.example.org",
    )
    dsn = (
        b"From: postmaster@example.com\nTo: dev-bounces@lists.example.org\nSubject: failure\n"
        b"Message-ID: <b2@example.com>\nContent-Type: multipart/report; report-type=delivery-status; boundary=b\n\n"
        b"--b\nContent-Type: text/plain\n\nGone.\n--b\nContent-Type: message/delivery-status\n\n"
        b"Reporting-MTA: dns; mx.example.com\n\nFinal-Recipient: rfc822; ann@example.com\nAction: failed\n"
        b"Status: 5.1.1\n--b--\n"
    )
    out = import_posts(site, verp_bounce, dsn)
    assert "2 bounces recorded" in out
    import_posts(site, verp_bounce)  # fetched again: not counted twice
    report = json.loads(run_listlib("bounces", "--json", cwd=site, check=True).stdout)
    assert [(r["list"], r["address"], r["bounces"]) for r in report] == [
        ("dev", "ann@example.com", 1),
        ("dev", "bob@example.net", 1),
    ]
    text = run_listlib("bounces", cwd=site, check=True).stdout
    assert "dev  bob@example.net  1 bounce " in text and text.endswith("2 bouncing subscribers\n")
    assert queue_status(site) == [], "bounces are never forwarded"


def test_overlapping_runs_never_send_twice(tmp_path: Path, smtp: SmtpServer) -> None:
    site = make_site(tmp_path / "site", smtp, ["ok-poster@example.org", *subscribers(200)], verp=True)
    import_posts(site, post(1))
    env = {**subprocess_env(), "LISTLIB_NOW": str(NOW)}

    def start(extra: dict[str, str]) -> subprocess.Popen[str]:
        command = [sys.executable, "-m", "listlib", "deliver", "--wait", "0"]
        return subprocess.Popen(
            command, cwd=site, env={**env, **extra}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    # The first run stops itself while it holds the run (about to send its first message),
    # so the second surely overlaps it, however fast the machine.
    first = start({"LISTLIB_STOP_AT": "sending:1"})
    wait_until_stopped(first.pid)
    try:
        second = start({})
        second_out = second.communicate(timeout=60)[0]
    finally:
        first.send_signal(signal.SIGCONT)
    first_out = first.communicate(timeout=60)[0]
    assert "still running; skipped" in second_out, second_out
    assert "delivered" in first_out, first_out
    assert smtp.handler.received and max(smtp.handler.received.values()) == 1


def test_config_problems_are_reported_with_their_key_paths(tmp_path: Path) -> None:
    (tmp_path / "listlib.toml").write_text(
        '[site]\ntitle = "t"\nbase_url = "https://x.org/"\nqueue_dir = ".cache/q"\n'
        '[lists.dev]\ndeliver = true\nposters = "members"\nsubscribers = ["not-an-address"]\n'
        '[smtp]\nhost = "bad host"\nsecurity = "tls"\npassword = "x"\n'
        "[delivery]\nretry_first_minutes = 0\nverp = 1\n"
    )
    with pytest.raises(Exception) as caught:
        load_config(tmp_path / "listlib.toml")
    text = str(caught.value)
    for expected in (
        "site.queue_dir: ",
        "is inside the cache folder",
        "lists.dev.addresses: a list with deliver = true needs a posting address",
        "lists.dev.posters: 'members' is not one of 'subscribers', 'anyone'",
        "lists.dev.subscribers[0]: 'not-an-address' is not an email address",
        "smtp.host: 'bad host' is not a host name or IP address",
        "smtp.security: 'tls' is not one of",
        "smtp.password: needs a user to log in with",
        "delivery.retry_first_minutes: must be more than 0",
        "delivery.verp: expected true or false",
    ):
        assert expected in text, expected


def test_a_list_with_delivery_needs_an_smtp_table_and_defaults_are_derived(tmp_path: Path) -> None:
    path = tmp_path / "listlib.toml"
    path.write_text(
        '[site]\ntitle = "t"\nbase_url = "https://x.org/"\n'
        '[lists.dev]\naddresses = ["dev@lists.x.org"]\ndeliver = true\n'
    )
    with pytest.raises(Exception, match=r"lists\.dev\.deliver: needs an \[smtp\] table"):
        load_config(path)
    path.write_text(path.read_text() + '[smtp]\nhost = "mail.x.org"\n')
    config = load_config(path)
    delivery = config.lists[0].delivery
    assert delivery is not None and config.smtp is not None
    assert (delivery.bounces_address, delivery.request_address, delivery.list_id) == (
        "dev-bounces@lists.x.org",
        "dev-request@lists.x.org",
        "dev.lists.x.org",
    )
    assert (config.smtp.security, config.smtp.port, config.site.queue_dir) == ("starttls", 587, tmp_path / "queue")


def test_deliver_without_smtp_or_with_a_bad_subscribers_file_says_why(tmp_path: Path, smtp: SmtpServer) -> None:
    site = make_site(tmp_path / "site", smtp, ["ann@example.com"])
    (site / "subscribers.txt").write_text("ann@example.com\nnot an address\n")
    (site / "one.eml").write_bytes(post(1))
    result = run_listlib("import", "--deliver", site / "one.eml", cwd=site)
    assert result.returncode == 1
    assert "subscribers.txt, line 2: 'not an address' is not an email address" in result.stderr
    assert os.path.exists(site / "content" / "dev"), "the message is filed all the same"


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("smtp-tls")
    make_test_ca(folder)
    return folder


def server_tls(folder: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(folder / "server.crt", folder / "server.key")
    return context


@pytest.mark.parametrize("security", ["starttls", "ssl"])
# aiosmtpd cannot tell that a connection with TLS from the start is encrypted, so the
# test server (not listlib) requires AUTH "without TLS" there, and warns about it.
@pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")
def test_tls_and_login(tmp_path: Path, tls_files: Path, security: str) -> None:
    implicit = security == "ssl"
    with SmtpServer(tls=server_tls(tls_files), implicit_tls=implicit, login=("lists", "s3cret")) as server:
        site = make_site(tmp_path / "site", server, ["ok-poster@example.org", "ann@example.com"])
        toml = (site / "listlib.toml").read_text()
        (site / "password").write_text("s3cret\n")
        secure = f'security = "{security}"\nca_file = "{tls_files / "ca.crt"}"\nuser = "lists"\n'
        (site / "listlib.toml").write_text(toml.replace('security = "none"\n', secure + 'password = "wrong"\n'))
        import_posts(site, post(1))
        refused = deliver(site)
        assert "refused the login: 535" in refused.stderr and "stay queued" in refused.stderr
        (site / "listlib.toml").write_text(toml.replace('security = "none"\n', secure + 'password_file = "password"\n'))
        run_until_empty(site, NOW + HOUR)
        assert server.handler.received == Counter({"ok-poster@example.org": 1, "ann@example.com": 1})
        untrusted = site / "listlib.toml"
        untrusted.write_text(untrusted.read_text().replace(f'ca_file = "{tls_files / "ca.crt"}"\n', ""))
        import_posts(site, post(2))
        assert "certificate" in deliver(site, NOW + 2 * HOUR).stderr


def test_a_post_that_asks_not_to_be_archived_is_delivered_without_archived_at(tmp_path: Path, smtp: SmtpServer) -> None:
    site = make_site(tmp_path / "site", smtp, ["ok-poster@example.org"])
    import_posts(site, post(1, extra={"X-No-Archive": "yes"}))
    deliver(site)
    [got] = smtp.handler.messages
    assert b"\r\nArchived-At:" not in got.data and b"\r\nX-No-Archive: yes\r\n" in got.data


def copies(smtp: SmtpServer) -> Counter[tuple[str, str]]:
    """(Message-ID, recipient) -> copies the server accepted."""
    found: Counter[tuple[str, str]] = Counter()
    for message in smtp.handler.messages:
        header = message.data.partition(b"\r\n\r\n")[0].decode("utf-8", "replace")
        message_id = next(
            line.split(":", 1)[1].strip() for line in header.split("\r\n") if line.startswith("Message-ID:")
        )
        found.update((message_id, r) for r in message.recipients)
    return found


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_post_goes_to_failed_with_its_reason_and_the_others_are_delivered(
    tmp_path: Path, smtp: SmtpServer, damage: str
) -> None:
    kind, harm = DAMAGES[damage]
    subs = ["ok-poster@example.org", "ann@example.com", "bob@example.com"]
    site = make_site(tmp_path / "site", smtp, subs)
    import_posts(site, post(1), post(2), post(3))
    message_ids = {p["id"]: f"<{p['message_id']}>" for p in queue_status(site)}
    bad = min(message_ids)  # the first one sent: it must not stop the others
    harm(site / "queue" / "new" / bad)
    result = deliver(site)
    good = [m for i, m in message_ids.items() if i != bad]
    assert copies(smtp) == Counter({(m, r): 1 for m in good for r in subs}), (
        "the healthy posts reach every recipient once, the damaged one nobody"
    )
    assert "2 posts done" in result.stdout and "1 damaged post moved to failed/" in result.stdout
    assert f"warning: post {bad} is damaged: " in result.stderr and f"--drop {bad}" in result.stderr
    [entry] = queue_status(site)
    assert (entry["id"], entry["stage"], entry["damage"]["kind"]) == (bad, "failed", kind)
    assert entry["damage"]["reason"] in result.stderr
    status = run_listlib("deliver", "--status", cwd=site, check=True).stdout
    assert f"failed  {bad}" in status and f"damaged: {entry['damage']['reason']}" in status
    again = deliver(site, NOW + 30 * HOUR, "--json")
    assert json.loads(again.stdout)["damaged"] == [], "reported once, when it is moved"
    dropped = run_listlib("deliver", "--drop", bad, cwd=site, check=True)
    assert f"dropped {bad} from failed/" in dropped.stdout
    assert queue_status(site) == [] and bad in (site / "queue" / "sent.log").read_text().split()
    assert sum(copies(smtp).values()) == 6


def test_a_damaged_post_can_be_dropped_before_any_run_and_is_reported_as_json(tmp_path: Path, smtp: SmtpServer) -> None:
    subs = ["ok-poster@example.org", "ann@example.com"]
    site = make_site(tmp_path / "site", smtp, subs)
    import_posts(site, post(1), post(2), post(3))
    message_ids = {p["id"]: f"<{p['message_id']}>" for p in queue_status(site)}
    first, second, third = sorted(message_ids)
    (site / "queue" / "new" / first / "post.json").unlink()
    (site / "queue" / "new" / second / "journal").unlink()
    dropped = run_listlib("deliver", "--drop", first, cwd=site, check=True)
    assert f"dropped {first} from new/" in dropped.stdout
    report = json.loads(deliver(site, NOW, "--json").stdout)
    assert [(d["id"], d["kind"]) for d in report["damaged"]] == [(second, "missing-journal")]
    assert (report["completed"], report["delivered"]) == ([third], 2)
    assert copies(smtp) == Counter({(message_ids[third], r): 1 for r in subs})
    assert [(p["id"], p["stage"]) for p in queue_status(site)] == [(second, "failed")]
    assert first in (site / "queue" / "sent.log").read_text().split()
    refused = run_listlib("deliver", "--release", second, cwd=site)
    assert refused.returncode == 1 and "no held post" in refused.stderr
    import_posts(site, post(4, sender="stranger@example.org"))
    [held] = [p["id"] for p in queue_status(site) if p["stage"] == "held"]
    (site / "queue" / "held" / held / "message.eml").write_bytes(b"Subject: x\r\n")
    refused = run_listlib("deliver", "--release", held, cwd=site)
    assert refused.returncode == 1 and f"held post {held} is damaged: message.eml has 12 bytes" in refused.stderr
    status = run_listlib("deliver", "--status", cwd=site, check=True).stdout
    assert f"held    {held}" in status and "damaged: message.eml has 12 bytes" in status
    run_listlib("deliver", "--drop", held, "--drop", second, cwd=site, check=True)
    assert queue_status(site) == [] and sum(copies(smtp).values()) == 2


def test_a_post_hidden_before_it_is_sent_is_not_delivered(tmp_path: Path, smtp: SmtpServer) -> None:
    site = make_site(tmp_path / "site", smtp, ["ok-poster@example.org", "ann@example.com"])
    import_posts(site, post(1), post(2))
    [first, second] = [p["id"] for p in queue_status(site)]
    run_listlib("hide", first, "--reason", "spam", cwd=site, check=True)
    result = deliver(site)
    assert "1 post withdrawn (hidden from the archive) moved to failed/" in result.stdout
    [sent] = smtp.handler.messages  # the second post, to its two subscribers
    assert b"<post2@example.org>" in sent.data
    status = {p["id"]: p for p in queue_status(site)}
    assert status[first]["stage"] == "failed" and status[first]["done"] == 0
    assert second not in status
    # Unhiding later does not send a stale post behind the operator's back.
    run_listlib("unhide", first, cwd=site, check=True)
    assert "nothing to send" in deliver(site, NOW + HOUR).stdout
