"""``listlib init``: write a new site skeleton with a commented configuration.

Never overwrites a file that exists.
"""

from __future__ import annotations

import json
from pathlib import Path

from .config import CONFIG_NAME
from .errors import ConfigError, ConfigIssue

__all__ = ["CONFIG_TEMPLATE", "write_skeleton"]

CONFIG_TEMPLATE = """\
# listlib site configuration. Every key is documented in the README
# ("Configuration reference"). Relative paths are relative to this file.

[site]
# Shown at the top of every page.
title = {title}
# The public URL the site is published under (used for feeds and permalinks).
base_url = {base_url}
# Where messages are stored, where the website is written, and where derived
# data that speeds up builds is kept (defaults shown; the cache is safe to delete).
# content_dir = "content"
# output_dir = "output"
# cache_dir = ".cache"
# Show addresses in pages as "us…@example.org"; let HTML mail load remote images.
# obfuscate_addresses = true
# load_remote_images = false
# public-inbox's paths, <list>/<Message-ID>/raw and .../t.mbox.gz, for b4
# (git config b4.midmask https://archive.example.org/dev/%s).
# message_id_paths = false
# Search also on a copy opened from disk (file://): a script twin of each index file
# (about doubles output/search/).
# search_from_disk = false
# The language of the pages, a BCP 47 tag: their words (listlib ships "en", "de" and "fr";
# a theme may add more: README, "Words and languages") and their lang attribute.
# language = "en"

# One table per list. The slug ("dev" below) is the list's folder and URL path.
[lists.dev]
name = "Development"
description = "Discussion of the project's development."
# Mail sent To/Cc/Delivered-To one of these addresses is filed under this list.
addresses = ["dev@example.org"]
# RFC 2919 List-Id values; checked before the addresses.
list_ids = ["dev.example.org"]

# The list's archive before listlib: its old URLs redirect to the messages here once
# 'listlib legacy import' has mapped it (README: "Moving from Pipermail, MHonArc or HyperKitty").
# [lists.dev.legacy]
# kind = "pipermail"                # or "mhonarc", "hyperkitty"
# path = "pipermail/dev"            # where its URLs were, under the site's root
# source = "/var/lib/mailman/archives/public/dev"   # its HTML folder (not for hyperkitty)

# [theme]
# name = "default"
# dir = "themes/site"     # your overrides, file by file

# A POP3 mailbox subscribed to the lists, for 'listlib fetch' (from cron).
# Messages are deleted on the server once filed, unless keep_on_server = true.
# [pop3.archive]
# host = "pop.example.org"
# user = "archive@example.org"
# password_file = "pop3-password"   # or password_env = "VARIABLE"
# security = "ssl"                  # or "starttls"; "none" sends the password in clear

# Or an IMAP account ('listlib fetch', or 'listlib fetch --watch' to file mail as it arrives).
# [imap.archive]
# host = "imap.example.org"
# user = "archive@example.org"
# password_file = "imap-password"
# folders = ["INBOX"]
# after = "delete"                  # or "move" (with move_to = "Archived"), "keep", "seen"

# Delivery: forward posts of a list to its subscribers ('listlib deliver').
# Add to the list's table:   deliver = true
#                            subscribers_file = "subscribers-dev.txt"   # one address a line
#                            posters = "subscribers"                    # or "anyone"
# [smtp]
# host = "127.0.0.1"
# port = 25
# security = "none"                 # or "starttls" (the default), "ssl"
# [delivery]
# verp = false                      # true: bounces name the subscriber

# Publishing to S3-compatible storage ('listlib publish'; pip install 'listlib[publish]').
# Credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or ~/.aws, never from here.
# [publish]
# target = "s3://bucket/prefix"
# endpoint_url = "https://<account>.r2.cloudflarestorage.com"   # not for AWS S3
# region = "auto"
"""

_GITIGNORE = (
    "output/\n.cache/\ncontent/.index/\ncontent/.tmp/\ncontent/.lock\ncontent/.pop3/*.lock\ncontent/.imap/*.lock\n"
    "pop3-password\nimap-password\nqueue/\n"
)


def write_skeleton(directory: Path, *, title: str, base_url: str) -> list[Path]:
    """Create the skeleton in ``directory``; return the paths created."""
    config = directory / CONFIG_NAME
    if config.exists():
        raise ConfigError(str(config), [ConfigIssue("", "already exists; not overwriting it")])
    directory.mkdir(parents=True, exist_ok=True)
    created = []
    config.write_text(CONFIG_TEMPLATE.format(title=json.dumps(title), base_url=json.dumps(base_url)))
    created.append(config)
    for folder in (directory / "content", directory / "themes"):
        if not folder.exists():
            folder.mkdir()
            created.append(folder)
    gitignore = directory / ".gitignore"
    if not gitignore.exists():
        gitignore.write_text(_GITIGNORE)
        created.append(gitignore)
    return created
