"""A real Dovecot POP3 and IMAP server on 127.0.0.1 for tests and benchmarks.

``DovecotServer`` writes its own configuration (nothing from /etc), a test CA
and a server certificate made with openssl, starts ``dovecot -F`` on free ports
(plain POP3 with STLS, and POP3S; when dovecot-imapd is installed, plain IMAP
with STARTTLS and IMAPS too) and stops it. ``imap_capability`` replaces the
capabilities Dovecot announces after login (to test a server without IDLE,
MOVE or UIDPLUS). Each ``add_user`` gives a fresh
mailbox; messages are dropped into it the maildir way (tmp/ then rename to
new/). Facts about running Dovecot as root: ../shared/notes/test-servers.md.

After a failed login, Dovecot's anvil delays every login from the same IP for
seconds (its auth penalty, which no setting turns off): tests of wrong
passwords use a server of their own.

Not a fixture module: ``conftest`` and ``bench/fetch_bench.py`` both use it.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["DovecotServer", "Mailbox", "dovecot_binary", "dovecot_problem", "free_port", "imap_problem"]

INSTALL_HINT = "apt-get install dovecot-core dovecot-pop3d"
# The processes the master starts for our configuration (POP3 only): a Dovecot with the
# binary but without one of these (dovecot-pop3d not installed, a package half removed)
# cannot serve, and that is a machine without Dovecot, not a failing test.
_HELPERS = ("config", "log", "anvil", "auth", "pop3-login", "pop3")
_IMAP_HELPERS = ("imap-login", "imap")
IMAP_INSTALL_HINT = "apt-get install dovecot-imapd"


def _binary() -> str:
    """``$LISTLIB_DOVECOT``, else the dovecot on PATH, else /usr/sbin/dovecot."""
    return os.environ.get("LISTLIB_DOVECOT") or shutil.which("dovecot") or "/usr/sbin/dovecot"


def dovecot_problem() -> str | None:
    """Why a Dovecot POP3 server cannot be run here (something is not installed), or
    None when everything it needs is. ``$LISTLIB_DOVECOT_LIBEXEC`` names the folder of
    Dovecot's helper programs (default /usr/lib/dovecot)."""
    binary = _binary()
    if not (Path(binary).is_file() and os.access(binary, os.X_OK)):
        return f"dovecot is not installed: no {binary} ({INSTALL_HINT})"
    libexec = Path(os.environ.get("LISTLIB_DOVECOT_LIBEXEC") or "/usr/lib/dovecot")
    missing = [str(libexec / name) for name in _HELPERS if not (libexec / name).is_file()]
    if missing:
        return f"dovecot is half installed: {binary} is there but not {', '.join(missing)} ({INSTALL_HINT})"
    if shutil.which("openssl") is None:
        return "openssl is not installed (it makes the test server's certificates)"
    return None


def imap_problem() -> str | None:
    """Why a Dovecot IMAP server cannot be run here, or None."""
    problem = dovecot_problem()
    if problem is not None:
        return problem
    libexec = Path(os.environ.get("LISTLIB_DOVECOT_LIBEXEC") or "/usr/lib/dovecot")
    missing = [str(libexec / name) for name in _IMAP_HELPERS if not (libexec / name).is_file()]
    if missing:
        return f"dovecot-imapd is not installed: no {', '.join(missing)} ({IMAP_INSTALL_HINT})"
    return None


def dovecot_binary() -> str | None:
    """The dovecot binary, when Dovecot and everything its POP3 server needs are installed."""
    return None if dovecot_problem() else _binary()


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports of 127.0.0.1 (the sockets are held open together
    while asked, or the kernel may hand out the same port twice in a row)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in socks]


_CONFIG = """\
instance_name = {instance}
protocols = {protocols}
listen = 127.0.0.1
base_dir = {base}/run
state_dir = {base}/state
log_path = {base}/dovecot.log
info_log_path = {base}/dovecot.log
default_login_user = {login_user}
default_internal_user = {internal_user}
first_valid_uid = 0
first_valid_gid = 0
disable_plaintext_auth = no
auth_failure_delay = 0
ssl = yes
ssl_cert = <{base}/tls/server.crt
ssl_key = <{base}/tls/server.key
ssl_dh =
mail_location = maildir:~/Maildir
pop3_uidl_format = %08Xu%08Xv
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {base}/users/%u
}}
userdb {{
  driver = static
  args = uid={mail_uid} gid={mail_gid} home={base}/mail/%u
}}
service pop3-login {{
  chroot =
  inet_listener pop3 {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener pop3s {{
    address = 127.0.0.1
    port = {ssl_port}
    ssl = yes
  }}
}}
service imap-login {{
  chroot =
{imap_listeners}}}
{imap_settings}
service anvil {{
  chroot =
}}
"""


_IMAP_LISTENERS = """\
  inet_listener imap {{
    address = 127.0.0.1
    port = {imap_port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {imaps_port}
    ssl = yes
  }}
"""


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_test_ca(folder: Path) -> None:
    """ca.crt (a self-signed test CA) and server.crt/server.key signed by it, for 127.0.0.1."""
    folder.mkdir(parents=True, exist_ok=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
             "-subj", "/CN=listlib test CA", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=folder)  # fmt: skip
    _openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1", cwd=folder)
    (folder / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "server.crt", "-days", "2", "-extfile", "ext.cnf", cwd=folder)  # fmt: skip


class Mailbox:
    """One user's maildir on the server."""

    def __init__(self, server: DovecotServer, user: str, password: str) -> None:
        self.server = server
        self.user = user
        self.password = password
        self.maildir = server.base / "mail" / user / "Maildir"
        self._count = 0

    def folder(self, name: str | None) -> Path:
        """The maildir of an IMAP folder (Maildir++: ``.name``), created when missing; the inbox for None."""
        if name is None or name == "INBOX":
            return self.maildir
        path = self.maildir / f".{name}"
        for sub in ("", "tmp", "new", "cur"):
            (path / sub).mkdir(exist_ok=True)
            self.server.give(path / sub)
        return path

    def drop(self, raw: bytes, folder: str | None = None) -> str:
        """Deliver one message the maildir way (to the inbox or an IMAP folder); return its file name."""
        self._count += 1
        name = f"{time.time_ns()}.P{os.getpid()}Q{self._count}.listlib-test"
        where = self.folder(folder)
        tmp = where / "tmp" / name
        tmp.write_bytes(raw)
        self.server.give(tmp)
        os.rename(tmp, where / "new" / name)
        return name

    def drop_many(self, messages: list[bytes], folder: str | None = None) -> None:
        for raw in messages:
            self.drop(raw, folder)

    def _listing(self, folder: str | None = None) -> list[Path]:
        where = self.maildir if folder is None else self.maildir / f".{folder}"
        if not where.exists():
            return []
        return sorted(p for sub in ("new", "cur") for p in (where / sub).iterdir())

    def messages(self, folder: str | None = None) -> list[Path]:
        """The message files the server still holds.

        Dovecot moves files from new/ to cur/ (and renames them to add flags) while a
        session runs, or finishes one after its client was killed: listings are taken
        until two in a row agree.
        """
        listing = self._listing(folder)
        for _ in range(200):
            time.sleep(0.01)
            again = self._listing(folder)
            if again == listing:
                return listing
            listing = again
        raise AssertionError(f"{self.maildir} keeps changing")

    def contents(self, folder: str | None = None) -> list[bytes]:
        """The bytes of every message the server still holds (in the inbox, or a folder)."""
        for _ in range(100):
            try:
                return [path.read_bytes() for path in self.messages(folder)]
            except FileNotFoundError:
                continue  # renamed under us: list again
        raise AssertionError(f"{self.maildir} keeps changing")

    def count(self, folder: str | None = None) -> int:
        return len(self.messages(folder))

    def seen(self, folder: str | None = None) -> int:
        """How many messages carry the \\Seen flag (maildir: ``S`` in the file name's info)."""
        return sum(1 for path in self.messages(folder) if "S" in path.name.partition(":2,")[2])

    def flagged_deleted(self, folder: str | None = None) -> int:
        """How many messages carry the \\Deleted flag (maildir: ``T``)."""
        return sum(1 for path in self.messages(folder) if "T" in path.name.partition(":2,")[2])


class DovecotServer:
    """A Dovecot instance of our own: start(), add_user(), kill(), restart(), stop()."""

    def __init__(self, base: Path | None = None, *, imap_capability: str | None = None) -> None:
        problem = dovecot_problem()
        if problem is not None:
            raise RuntimeError(problem)
        self.binary = _binary()
        # Dovecot's unprivileged processes must traverse every parent of the base
        # folder, which pytest's 0700 temporary folders do not allow.
        self.base = Path(base or tempfile.mkdtemp(prefix="listlib-dovecot-"))
        self.base.mkdir(parents=True, exist_ok=True)
        os.chmod(self.base, 0o711)
        self.has_imap = imap_problem() is None
        ports = free_ports(4)
        self.port, self.ssl_port = ports[0], ports[1]
        self.imap_port, self.imaps_port = (ports[2], ports[3]) if self.has_imap else (0, 0)
        self.as_root = os.geteuid() == 0
        if self.as_root:
            nobody = pwd.getpwnam("nobody")
            self.mail_uid, self.mail_gid = nobody.pw_uid, nobody.pw_gid
            login_user, internal_user = "dovenull", "dovecot"
        else:
            self.mail_uid, self.mail_gid = os.getuid(), os.getgid()
            login_user = internal_user = pwd.getpwuid(os.getuid()).pw_name
        for sub in ("run", "state", "mail"):
            (self.base / sub).mkdir(exist_ok=True)
        self.give(self.base / "mail")
        make_test_ca(self.base / "tls")
        self.ca_file = self.base / "tls" / "ca.crt"
        # One passwd file per user: Dovecot notices a new file at once, while it
        # re-reads a changed file only about once a second.
        (self.base / "users").mkdir()
        (self.base / "dovecot.conf").write_text(
            _CONFIG.format(
                instance=f"listlib-test-{self.port}",
                base=self.base,
                login_user=login_user,
                internal_user=internal_user,
                mail_uid=self.mail_uid,
                mail_gid=self.mail_gid,
                port=self.port,
                ssl_port=self.ssl_port,
                protocols="pop3 imap" if self.has_imap else "pop3",
                imap_listeners=_IMAP_LISTENERS.format(imap_port=self.imap_port, imaps_port=self.imaps_port)
                if self.has_imap
                else "",
                imap_settings=f"imap_capability = {imap_capability}\n" if imap_capability else "",
            )
        )
        self.process: subprocess.Popen[bytes] | None = None
        self._users: list[Mailbox] = []

    def give(self, path: Path) -> None:
        """Hand a file or folder to the user the server reads mail as."""
        if self.as_root:
            os.chown(path, self.mail_uid, self.mail_gid)

    def add_user(self, user: str, password: str = "secret") -> Mailbox:
        """A new user with an empty maildir (lower case: Dovecot lower-cases user names)."""
        assert user == user.lower(), user
        (self.base / "users" / user).write_text(f"{user}:{{PLAIN}}{password}\n")
        home = self.base / "mail" / user
        for sub in ("", "Maildir", "Maildir/tmp", "Maildir/new", "Maildir/cur"):
            (home / sub).mkdir(exist_ok=True)
            self.give(home / sub)
        mailbox = Mailbox(self, user, password)
        self._users.append(mailbox)
        return mailbox

    def start(self) -> DovecotServer:
        with (self.base / "stderr.log").open("ab") as stderr:
            self.process = subprocess.Popen(
                [self.binary, "-F", "-c", str(self.base / "dovecot.conf")],
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,
            )
        self.wait_ready()
        return self

    def wait_ready(self, timeout: float = 15.0) -> None:
        """Wait for the +OK greeting, and IMAP's ``* OK`` (an accepting socket is not enough)."""
        deadline = time.monotonic() + timeout
        greetings = [(self.port, b"+OK")] + ([(self.imap_port, b"* OK")] if self.has_imap else [])
        while True:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"dovecot exited: {self.log()}")
            try:
                while greetings:
                    port, greeting = greetings[0]
                    with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                        if not sock.recv(100).startswith(greeting):
                            break
                    greetings.pop(0)
                if not greetings:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"dovecot did not greet within {timeout} s: {self.log()}")
            time.sleep(0.02)

    def log(self) -> str:
        parts = []
        for name in ("dovecot.log", "stderr.log"):
            path = self.base / name
            if path.exists():
                parts.append(path.read_text(errors="replace")[-3000:])
        return "\n".join(parts)

    def kill(self) -> None:
        """SIGKILL the whole server (master, login and pop3 processes) at once."""
        if self.process is None:
            return
        session = self.process.pid  # started with start_new_session: the master leads the session
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.process = None
        # Every process of the server must be gone before it starts again: a login process
        # still alive (under load, one forked as the kill landed) keeps the old sockets, and
        # the new master then refuses to start ("Dovecot is already running?").
        deadline = time.monotonic() + 20
        while (left := _session_members(session)) or not self._ports_free():
            if time.monotonic() > deadline:
                raise RuntimeError(f"dovecot processes {left} outlived a SIGKILL of their session for 20 s")
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)

    def _ports_free(self) -> bool:
        for port in (self.port, self.ssl_port, self.imap_port, self.imaps_port):
            if not port:
                continue
            with socket.socket() as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    return False
        return True

    def restart(self) -> None:
        self.kill()
        self.start()

    def stop(self) -> None:
        """Stop the server and remove its folder."""
        self.kill()
        shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> DovecotServer:
        try:
            return self.start()
        except BaseException:
            self.stop()  # a server that did not start leaves no folder behind
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _session_members(session: int) -> list[int]:
    """The live processes (zombies aside) of a session, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[3]) == session:
            found.append(int(entry.name))
    return found
