"""The listlib exception tree: every error a user can cause or meet.

Library code raises these with full sentences that name the path, key, list or
Message-ID involved; only ``cli`` turns them into messages and exit codes. This
module must never import anything from listlib.

    ListlibError
    ├── ConfigError        listlib.toml is missing, unreadable or invalid (carries every issue)
    ├── SourceError        an import source cannot be opened or read (names the path)
    ├── FetchError         a POP3 account cannot be reached, logged into or read (names the account)
    ├── DeliveryError      the outbound queue or the SMTP server cannot be used (names the post or server)
    ├── StoreError         the content/ store cannot be opened, locked or written
    │   ├── LockTimeoutError   another listlib process holds the store lock too long
    │   └── OverridesError     content/threads.toml cannot be used (carries every problem)
    ├── BuildError         the site cannot be built (a theme or template problem, names the file)
    ├── DiskError          a file listlib keeps cannot be written: the disk is full or failing (names the file)
    ├── ServeError         the dev server cannot start (its port is taken, the host is unknown)
    ├── SearchError        the search index is missing, of another format, or unreadable
    └── PublishError       the bucket cannot be reached, written or read (names the target)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BuildError",
    "ConfigError",
    "ConfigIssue",
    "DeliveryError",
    "DiskError",
    "FetchError",
    "LegacyError",
    "ListlibError",
    "LockTimeoutError",
    "OverridesError",
    "PublishError",
    "ServeError",
    "SearchError",
    "SourceError",
    "StoreError",
]


class ListlibError(Exception):
    """Base of every error listlib reports to a user."""


@dataclass(frozen=True)
class ConfigIssue:
    """One problem in the configuration, located by its dotted key path."""

    key_path: str
    message: str

    def __str__(self) -> str:
        return f"{self.key_path}: {self.message}" if self.key_path else self.message


class ConfigError(ListlibError):
    """The configuration cannot be used; ``issues`` lists every problem found."""

    def __init__(self, path: str, issues: list[ConfigIssue]) -> None:
        self.path = path
        self.issues = list(issues)
        if len(self.issues) == 1:
            super().__init__(f"{path}: {self.issues[0]}")
            return
        lines = "\n".join(f"  {issue}" for issue in self.issues)
        super().__init__(f"{path} has {len(self.issues)} problems:\n{lines}")


class SourceError(ListlibError):
    """An import source cannot be opened or read."""


class FetchError(ListlibError):
    """A POP3 account cannot be used: DNS, connection, TLS, login or protocol failure."""


class DeliveryError(ListlibError):
    """The outbound queue cannot be used, or a queued post named on the command line does not exist."""


class StoreError(ListlibError):
    """The content/ store cannot be opened, locked or written."""


class LockTimeoutError(StoreError):
    """Another listlib process held the store lock for longer than we may wait."""


class OverridesError(StoreError):
    """The thread overrides file cannot be used; ``problems`` lists every problem found,
    each a sentence naming the file and line."""

    def __init__(self, path: str, problems: list[str]) -> None:
        self.path = path
        self.problems = list(problems)
        count = len(self.problems)
        lines = "\n".join(f"  {problem}" for problem in self.problems)
        super().__init__(f"{path}: {count} problem{'s' if count != 1 else ''} with the thread overrides:\n{lines}")


class BuildError(ListlibError):
    """The site cannot be built: a missing theme, a broken template (with file and line)."""


class LegacyError(ListlibError):
    """An old archive cannot be mapped (``listlib legacy import``) or its map is damaged."""


class DiskError(ListlibError):
    """A database or file that listlib keeps cannot be written: the disk is full or failing."""


class ServeError(ListlibError):
    """``listlib serve`` cannot listen where it was asked to (a port in use, a bad host)."""


class SearchError(ListlibError):
    """The search index cannot be read: missing (no build yet), of another format, damaged."""


class PublishError(ListlibError):
    """``listlib publish`` cannot use its bucket: no credentials or refused ones, a missing
    bucket, an unreachable endpoint, a failed upload (names the target)."""
