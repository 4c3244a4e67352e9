"""The ``[site]``, ``[theme]`` and ``[build]`` tables: what the site is called, where it is published,
and the folders listlib keeps the store, the output, the cache and the queue in.

Relative paths resolve against the folder of listlib.toml, missing folders take their
defaults. Records problems on the Reader; never raises, and never looks at or creates
the folders it names (``folders.check_folders`` checks they stay apart).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .checks import check_language, check_message_id_folder, check_nonempty, check_scheduler, check_url
from .reader import Reader
from .schema import BuildConfig, SiteConfig, ThemeConfig

__all__ = ["read_build", "read_site", "read_theme"]

_SITE_KEYS = {
    "title",
    "base_url",
    "content_dir",
    "output_dir",
    "cache_dir",
    "queue_dir",
    "obfuscate_addresses",
    "load_remote_images",
    "publish_unrouted",
    "show_removal_reasons",
    "search_from_disk",
    "language",
    "message_id_paths",
    "message_id_folder",
}
_THEME_KEYS = {"name", "dir"}
_BUILD_KEYS = {"cluster"}


def read_site(reader: Reader, site_table: Mapping[str, Any]) -> SiteConfig:
    """The ``[site]`` table (``site_table``, already taken out of the file's data)."""
    root = reader.root
    reader.unknown(site_table, _SITE_KEYS, "site")
    base_url = reader.string(site_table, "base_url", "site", check=check_url)
    if base_url and not base_url.endswith("/"):
        base_url += "/"
    return SiteConfig(
        title=reader.string(site_table, "title", "site", check=check_nonempty),
        base_url=base_url,
        content_dir=reader.path(site_table, "content_dir", "site", "content") or root / "content",
        output_dir=reader.path(site_table, "output_dir", "site", "output") or root / "output",
        cache_dir=reader.path(site_table, "cache_dir", "site", ".cache") or root / ".cache",
        obfuscate_addresses=reader.boolean(site_table, "obfuscate_addresses", "site", True),
        load_remote_images=reader.boolean(site_table, "load_remote_images", "site", False),
        queue_dir=reader.path(site_table, "queue_dir", "site", "queue") or root / "queue",
        publish_unrouted=reader.boolean(site_table, "publish_unrouted", "site", False),
        show_removal_reasons=reader.boolean(site_table, "show_removal_reasons", "site", False),
        search_from_disk=reader.boolean(site_table, "search_from_disk", "site", False),
        language=reader.string(site_table, "language", "site", default="en", check=check_language),
        message_id_paths=reader.boolean(site_table, "message_id_paths", "site", False),
        message_id_folder=reader.string(
            site_table, "message_id_folder", "site", default="", check=check_message_id_folder
        ),
    )


def read_theme(reader: Reader, data: Mapping[str, Any]) -> ThemeConfig:
    """The ``[theme]`` table."""
    theme_table = reader.table(data, "theme", "theme")
    reader.unknown(theme_table, _THEME_KEYS, "theme")
    return ThemeConfig(
        name=reader.string(theme_table, "name", "theme", default="default", check=check_nonempty),
        dir=reader.path(theme_table, "dir", "theme", None),
    )


def read_build(reader: Reader, data: Mapping[str, Any]) -> BuildConfig:
    """The ``[build]`` table."""
    build_table = reader.table(data, "build", "build")
    reader.unknown(build_table, _BUILD_KEYS, "build")
    cluster = reader.string(build_table, "cluster", "build", default="", check=check_scheduler) or None
    return BuildConfig(cluster=cluster)
